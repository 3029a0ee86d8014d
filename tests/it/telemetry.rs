//! What `roundtrip serve` tells operators as a child process: every log line ends with its
//! worker id, on every thread; with `ROUNDTRIP_OTLP_ENDPOINT` each request's span reaches an
//! OTLP/HTTP receiver under a resource naming the worker, sent at the latest when `serve`
//! stops; without it nothing is sent, even with the SDK's own `OTEL_*` variables set.

use std::process::Command;
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::legacy_client::{initialize_request, legacy_call, LEGACY_VERSION};
use crate::support::otlp_receiver::OtlpReceiver;
use crate::support::serve_process::command;
use crate::support::{scratch_dir, tool_call, Serve};

const WORKER: &str = "api-7f9c4d-x2kq";
const DEMO_KEY: &str = "telemetry-demo-key";

/// `serve` (see [`command`]) with a known demo key, no trace variables inherited from the
/// test's environment, and `ROUNDTRIP_WORKER_ID` set.
fn serve_command() -> Command {
    let mut command = command(&scratch_dir());
    command
        .env("ROUNDTRIP_DEMO_API_KEY", DEMO_KEY)
        .env("ROUNDTRIP_WORKER_ID", WORKER)
        .env_remove("ROUNDTRIP_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .env_remove("OTEL_BSP_SCHEDULE_DELAY");
    command
}

/// Calls the demo tenant's `echo`, checking it answered.
async fn echo(serve: &Serve) {
    let call = tool_call(1, "echo", json!({"text": "traced"}), json!({}));
    let reply = serve.call_demo(DEMO_KEY, &call).await;
    assert_eq!(reply["result"]["content"][0]["text"], "traced", "{reply}");
}

#[actix_web::test]
async fn every_log_line_of_serve_ends_with_its_worker_id() {
    let mut command = serve_command();
    // Without the audit log a request logs `request done` at info, from an HTTP worker thread.
    command
        .env("ROUNDTRIP_LOG", "info")
        .env("ROUNDTRIP_AUDIT__ENABLED", "false");
    let serve = Serve::start_capturing_stderr(command);
    echo(&serve).await;
    let stderr = serve.stop_with_stderr();

    let lines: Vec<&str> = stderr.lines().collect();
    assert!(
        lines.iter().any(|l| l.contains("request done")),
        "a request's line: {stderr}"
    );
    assert!(
        lines.iter().any(|l| l.contains("shutting down")),
        "the main thread's line: {stderr}"
    );
    let suffix = format!(" worker_id={WORKER}");
    for line in &lines {
        assert!(line.ends_with(&suffix), "{line:?} in:\n{stderr}");
    }
}

#[actix_web::test]
async fn without_a_worker_id_log_lines_name_the_host_and_the_pid() {
    let mut command = serve_command();
    command
        .env_remove("ROUNDTRIP_WORKER_ID")
        .env("ROUNDTRIP_LOG", "info");
    let serve = Serve::start_capturing_stderr(command);
    let pid = serve.pid();
    let stderr = serve.stop_with_stderr();

    let suffix = format!("-{pid}");
    assert!(!stderr.is_empty());
    for line in stderr.lines() {
        let id = line
            .rsplit_once(" worker_id=")
            .map(|(_, id)| id)
            .unwrap_or_else(|| panic!("no worker id in {line:?}"));
        assert!(id.len() > suffix.len() && id.ends_with(&suffix), "{line:?}");
    }
}

#[actix_web::test]
async fn serve_exports_each_requests_span_over_otlp_by_the_time_it_stops() {
    let receiver = OtlpReceiver::start();
    let mut command = serve_command();
    // A batch delay longer than the test: the span can only arrive with the flush at shutdown.
    // The audit log (on by default) makes request spans debug, below the log level (warn):
    // exported all the same.
    command
        .env("ROUNDTRIP_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000");
    let serve = Serve::start_command(command);
    echo(&serve).await;
    serve.stop();

    let spans = receiver.spans();
    let request = spans
        .iter()
        .find(|s| s.span.name == "mcp" && s.attribute("method").as_deref() == Some("tools/call"))
        .unwrap_or_else(|| panic!("no tools/call span in {spans:#?}"));
    assert_eq!(request.attribute("tenant").as_deref(), Some("demo"));
    assert_eq!(request.attribute("target").as_deref(), Some("echo"));
    assert_eq!(request.attribute("outcome").as_deref(), Some("complete"));
    assert_eq!(
        request.resource_attribute("service.instance.id").as_deref(),
        Some(WORKER)
    );
    assert_eq!(
        request.resource_attribute("service.name").as_deref(),
        Some("roundtrip")
    );
    assert_eq!(
        request.resource_attribute("service.version").as_deref(),
        Some(env!("CARGO_PKG_VERSION"))
    );
    assert!(request.span.end_time_unix_nano >= request.span.start_time_unix_nano);
}

/// The caller's trace in the W3C Trace Context example.
const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";
const CALLER_SPAN: &str = "b7ad6b7169203331";
/// A trace its caller did not sample (flags `00`).
const UNSAMPLED_TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

#[actix_web::test]
async fn a_request_naming_its_callers_trace_is_exported_in_that_trace() {
    let receiver = OtlpReceiver::start();
    let mut command = serve_command();
    command.env("ROUNDTRIP_OTLP_ENDPOINT", &receiver.endpoint);
    let serve = Serve::start_command(command);
    let traced = tool_call(1, "echo", json!({"text": "traced"}), json!({}));
    for (trace, flags) in [(TRACE_ID, "01"), (UNSAMPLED_TRACE_ID, "00")] {
        let traceparent = format!("00-{trace}-{CALLER_SPAN}-{flags}");
        let reply = serve
            .call_demo_with(DEMO_KEY, &traced, &[("traceparent", &traceparent)])
            .await;
        assert_eq!(reply["result"]["content"][0]["text"], "traced", "{reply}");
    }
    echo(&serve).await;
    serve.stop();

    let spans = receiver.spans();
    let requests: Vec<_> = spans.iter().filter(|s| s.span.name == "mcp").collect();
    assert_eq!(requests.len(), 3, "{spans:#?}");
    // A caller that did not sample its trace does not turn the request's spans off.
    assert!(
        requests
            .iter()
            .any(|s| hex::encode(&s.span.trace_id) == UNSAMPLED_TRACE_ID),
        "{spans:#?}"
    );
    let in_trace: Vec<_> = spans
        .iter()
        .filter(|s| hex::encode(&s.span.trace_id) == TRACE_ID)
        .collect();
    let parent = in_trace
        .iter()
        .find(|s| hex::encode(&s.span.parent_span_id) == CALLER_SPAN)
        .unwrap_or_else(|| panic!("no span whose parent is the caller's in {spans:#?}"));
    let request = in_trace
        .iter()
        .find(|s| s.span.name == "mcp")
        .unwrap_or_else(|| panic!("the request span is not in the caller's trace: {spans:#?}"));
    assert_eq!(request.span.parent_span_id, parent.span.span_id);
    // The request that named no trace began one of its own.
    let untraced = requests
        .iter()
        .find(|s| ![TRACE_ID, UNSAMPLED_TRACE_ID].contains(&hex::encode(&s.span.trace_id).as_str()))
        .expect("the second request's span");
    assert!(untraced.span.parent_span_id.is_empty(), "{untraced:#?}");
}

/// POSTs `body` to the demo tenant of `serve` with `headers`: the response's session id, if
/// any, and its JSON body.
async fn post_demo(
    serve: &Serve,
    body: &Value,
    headers: &[(&str, &str)],
) -> (Option<String>, Value) {
    let mut req = awc::Client::default()
        .post(format!("{}/t/demo/mcp", serve.url))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {DEMO_KEY}")));
    for (name, value) in headers {
        req = req.insert_header((*name, *value));
    }
    let mut resp = req.send_json(body).await.expect("serve answers");
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.body().await.expect("a body");
    (
        session,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[actix_web::test]
async fn a_legacy_sessions_request_naming_its_callers_trace_is_exported_in_that_trace() {
    let receiver = OtlpReceiver::start();
    let mut command = serve_command();
    command.env("ROUNDTRIP_OTLP_ENDPOINT", &receiver.endpoint);
    let serve = Serve::start_command(command);
    let init = initialize_request(LEGACY_VERSION, json!({}));
    let (session, _) = post_demo(&serve, &init, &[]).await;
    let session = session.expect("a session id");
    let traceparent = format!("00-{TRACE_ID}-{CALLER_SPAN}-01");
    let call = legacy_call(2, "echo", json!({"text": "traced"}));
    let headers = [
        ("mcp-session-id", session.as_str()),
        ("mcp-protocol-version", LEGACY_VERSION),
        ("traceparent", traceparent.as_str()),
    ];
    let (_, reply) = post_demo(&serve, &call, &headers).await;
    assert_eq!(reply["result"]["content"][0]["text"], "traced", "{reply}");
    serve.stop();

    let spans = receiver.spans();
    let request = spans
        .iter()
        .find(|s| s.span.name == "mcp" && s.attribute("method").as_deref() == Some("tools/call"))
        .unwrap_or_else(|| panic!("no tools/call span in {spans:#?}"));
    assert_eq!(hex::encode(&request.span.trace_id), TRACE_ID, "{spans:#?}");
    let parent = spans
        .iter()
        .find(|s| s.span.span_id == request.span.parent_span_id)
        .unwrap_or_else(|| panic!("the request span's parent is not exported: {spans:#?}"));
    assert_eq!(hex::encode(&parent.span.parent_span_id), CALLER_SPAN);
}

#[actix_web::test]
async fn without_roundtrip_otlp_endpoint_nothing_is_exported_even_with_the_sdks_variables() {
    let receiver = OtlpReceiver::start();
    let mut command = serve_command();
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", &receiver.endpoint)
        .env("OTEL_BSP_SCHEDULE_DELAY", "10");
    let serve = Serve::start_command(command);
    echo(&serve).await;
    std::thread::sleep(Duration::from_millis(300));
    serve.stop();
    assert!(receiver.spans().is_empty(), "{:#?}", receiver.spans());
}

#[test]
fn serve_refuses_an_otlp_endpoint_that_is_not_an_http_url() {
    for bad in ["otel-collector:4318", "grpc://otel-collector:4317"] {
        let output = serve_command()
            .env("ROUNDTRIP_OTLP_ENDPOINT", bad)
            .output()
            .expect("roundtrip serve runs");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains("ROUNDTRIP_OTLP_ENDPOINT"), "{stderr}");
    }
}
