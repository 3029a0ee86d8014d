//! A scripted HTTP server for behaviour our own server never shows: every request is
//! recorded, and a closure decides each reply. actix-web on port 0, stopped on drop.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use actix_web::dev::ServerHandle;
use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};
use serde_json::{json, Value};

/// One request the server received.
#[derive(Debug, Clone)]
pub(crate) struct Seen {
    /// The HTTP method.
    pub(crate) http: String,
    /// The URL's path.
    pub(crate) path: String,
    /// Headers, names lowercased (the last value of a repeated one).
    pub(crate) headers: HashMap<String, String>,
    /// The JSON body (`Null` when there was none).
    pub(crate) body: Value,
    /// When it arrived.
    pub(crate) at: Instant,
}

impl Seen {
    /// The JSON-RPC method of the body.
    pub(crate) fn method(&self) -> &str {
        self.body["method"].as_str().unwrap_or_default()
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// A reply: status, content type, body, and any extra headers.
pub(crate) struct Reply(u16, &'static str, String, Vec<(&'static str, String)>);

impl Reply {
    /// A JSON-RPC result for `seen`'s id.
    pub(crate) fn result(seen: &Seen, result: Value) -> Reply {
        Reply::json(
            200,
            json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": result}),
        )
    }

    /// A JSON-RPC error for `seen`'s id, with HTTP `status`.
    pub(crate) fn error(seen: &Seen, status: u16, error: Value) -> Reply {
        Reply::json(
            status,
            json!({"jsonrpc": "2.0", "id": seen.body["id"], "error": error}),
        )
    }

    pub(crate) fn json(status: u16, body: Value) -> Reply {
        Reply(status, "application/json", body.to_string(), Vec::new())
    }

    /// A status with no body.
    pub(crate) fn empty(status: u16) -> Reply {
        Reply(status, "text/plain", String::new(), Vec::new())
    }

    /// An SSE body, written as given.
    pub(crate) fn sse(body: String) -> Reply {
        Reply(200, "text/event-stream", body, Vec::new())
    }

    /// The same reply with one more header.
    pub(crate) fn with_header(mut self, name: &'static str, value: &str) -> Reply {
        self.3.push((name, value.to_owned()));
        self
    }
}

type Script = dyn Fn(&Seen) -> Reply + Send + Sync;

/// How many scripted servers this test process has started: each one's endpoint path is its
/// own (`/s{n}/mcp`). The client caches the era it found per origin and path for the whole
/// process, and the OS hands a closed server's port to the next one, so two tests' servers
/// must never share an endpoint: a test would otherwise inherit the era an earlier one found.
static STARTED: AtomicUsize = AtomicUsize::new(0);

/// A running scripted server.
pub(crate) struct Scripted {
    /// Its endpoint, unique in the process.
    pub(crate) url: String,
    /// `http://host:port`.
    origin: String,
    seen: Arc<Mutex<Vec<Seen>>>,
    handle: ServerHandle,
}

impl Scripted {
    pub(crate) async fn start(script: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Scripted {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let (record, answer) = (seen.clone(), script.clone());
        let server = HttpServer::new(move || {
            let (record, answer) = (record.clone(), answer.clone());
            App::new().default_service(web::to(move |req: HttpRequest, body: web::Bytes| {
                let (record, answer) = (record.clone(), answer.clone());
                async move {
                    let seen = Seen {
                        http: req.method().to_string(),
                        path: req.path().to_owned(),
                        headers: req
                            .headers()
                            .iter()
                            .map(|(k, v)| {
                                (
                                    k.as_str().to_owned(),
                                    v.to_str().unwrap_or_default().to_owned(),
                                )
                            })
                            .collect(),
                        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
                        at: Instant::now(),
                    };
                    let Reply(status, content_type, body, headers) = answer(&seen);
                    record.lock().unwrap_or_else(|p| p.into_inner()).push(seen);
                    let mut reply = HttpResponse::build(
                        actix_web::http::StatusCode::from_u16(status).expect("a status"),
                    );
                    for header in headers {
                        reply.insert_header(header);
                    }
                    reply.content_type(content_type).body(body)
                }
            }))
        })
        .workers(1)
        .disable_signals()
        .bind("127.0.0.1:0")
        .expect("binds");
        let addr = server.addrs()[0];
        let server = server.run();
        let handle = server.handle();
        actix_web::rt::spawn(server);
        let origin = format!("http://{addr}");
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        Scripted {
            url: format!("{origin}/s{n}/mcp"),
            origin,
            seen,
            handle,
        }
    }

    /// The server's origin and `path` as a URL: a test that picks its own paths must pick
    /// ones no other test uses (see [`STARTED`]).
    pub(crate) fn url_at(&self, path: &str) -> String {
        format!("{}{path}", self.origin)
    }

    /// Every request so far.
    pub(crate) fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// The POSTs of `method`.
    pub(crate) fn calls(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method() == method)
            .collect()
    }
}

impl Drop for Scripted {
    fn drop(&mut self) {
        drop(self.handle.stop(false));
    }
}

/// A modern discover result naming `versions`.
pub(crate) fn discovered(versions: &[&str]) -> Value {
    json!({"resultType": "complete", "supportedVersions": versions, "capabilities": {"tools": {}},
        "ttlMs": 0, "cacheScope": "private",
        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "scripted", "version": "1"}}})
}

/// A legacy initialize result at `version`.
pub(crate) fn initialized(version: &str) -> Value {
    json!({"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "scripted-legacy", "version": "1"}})
}

/// A complete tools/call result with `text`.
pub(crate) fn text_result(text: &str) -> Value {
    json!({"resultType": "complete", "content": [{"type": "text", "text": text}]})
}

#[actix_web::test]
async fn two_scripted_servers_never_share_an_endpoint() {
    let (first, second) = (
        Scripted::start(|_| Reply::empty(204)).await,
        Scripted::start(|_| Reply::empty(204)).await,
    );
    let path = |server: &Scripted| server.url[server.origin.len()..].to_owned();
    assert_ne!(path(&first), path(&second));
}
