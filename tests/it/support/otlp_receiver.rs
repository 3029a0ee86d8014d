//! A local OTLP/HTTP trace receiver, as a collector's: `POST /v1/traces` with a protobuf
//! `ExportTraceServiceRequest`, decoded and kept for the test to read. It runs on a thread and
//! an actix system of its own, so a test may block its own thread (waiting for `serve` to
//! exit) while spans arrive.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use opentelemetry_proto::tonic::collector::trace::v1::{
    ExportTraceServiceRequest, ExportTraceServiceResponse,
};
use opentelemetry_proto::tonic::common::v1::{any_value, KeyValue};
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;

type Received = Arc<Mutex<Vec<ExportTraceServiceRequest>>>;

/// One exported span with the attributes of the resource it was sent under.
#[derive(Debug, Clone)]
pub(crate) struct ReceivedSpan {
    pub(crate) resource: Vec<KeyValue>,
    pub(crate) span: Span,
}

impl ReceivedSpan {
    /// A string attribute of the span.
    pub(crate) fn attribute(&self, key: &str) -> Option<String> {
        string_value(&self.span.attributes, key)
    }

    /// A string attribute of its resource.
    pub(crate) fn resource_attribute(&self, key: &str) -> Option<String> {
        string_value(&self.resource, key)
    }
}

fn string_value(attributes: &[KeyValue], key: &str) -> Option<String> {
    attributes
        .iter()
        .find(|kv| kv.key == key)
        .and_then(|kv| kv.value.as_ref()?.value.as_ref())
        .and_then(|v| match v {
            any_value::Value::StringValue(s) => Some(s.clone()),
            _ => None,
        })
}

pub(crate) struct OtlpReceiver {
    /// The base URL to give as `ROUNDTRIP_OTLP_ENDPOINT`.
    pub(crate) endpoint: String,
    received: Received,
    handle: actix_web::dev::ServerHandle,
    thread: Option<JoinHandle<()>>,
}

impl OtlpReceiver {
    pub(crate) fn start() -> OtlpReceiver {
        let received = Received::default();
        let kept = Arc::clone(&received);
        let (tx, rx) = mpsc::channel();
        let thread = std::thread::spawn(move || {
            actix_web::rt::System::new().block_on(async move {
                let server = HttpServer::new(move || {
                    App::new()
                        .app_data(web::Data::new(Arc::clone(&kept)))
                        .app_data(web::PayloadConfig::new(16 << 20))
                        .route("/v1/traces", web::post().to(export))
                })
                .workers(1)
                .bind(("127.0.0.1", 0))
                .expect("the receiver binds");
                let addr = server.addrs()[0];
                let server = server.run();
                tx.send((addr, server.handle())).expect("the test waits");
                let _ = server.await;
            });
        });
        let (addr, handle) = rx.recv().expect("the receiver started");
        OtlpReceiver {
            endpoint: format!("http://{addr}"),
            received,
            handle,
            thread: Some(thread),
        }
    }

    /// Every span received so far.
    pub(crate) fn spans(&self) -> Vec<ReceivedSpan> {
        let received = self.received.lock().expect("receiver lock");
        received
            .iter()
            .flat_map(|request| &request.resource_spans)
            .flat_map(|rs| {
                let resource = rs
                    .resource
                    .as_ref()
                    .map(|r| r.attributes.clone())
                    .unwrap_or_default();
                rs.scope_spans.iter().flat_map(move |ss| {
                    let resource = resource.clone();
                    ss.spans.iter().map(move |span| ReceivedSpan {
                        resource: resource.clone(),
                        span: span.clone(),
                    })
                })
            })
            .collect()
    }
}

/// `POST /v1/traces`: protobuf in, an empty (fully accepted) `ExportTraceServiceResponse` out.
async fn export(req: HttpRequest, body: web::Bytes, received: web::Data<Received>) -> HttpResponse {
    let protobuf = req
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes() == b"application/x-protobuf");
    if !protobuf {
        return HttpResponse::UnsupportedMediaType().finish();
    }
    let Ok(request) = ExportTraceServiceRequest::decode(body) else {
        return HttpResponse::BadRequest().finish();
    };
    received.lock().expect("receiver lock").push(request);
    HttpResponse::Ok()
        .content_type("application/x-protobuf")
        .body(ExportTraceServiceResponse::default().encode_to_vec())
}

impl Drop for OtlpReceiver {
    fn drop(&mut self) {
        // The command is sent at once; the future only waits for the workers to stop.
        drop(self.handle.stop(false));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
