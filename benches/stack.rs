//! Criterion benches of the whole in-process stack, from an HTTP request to response bytes:
//! a trivial `tools/call` (`echo` on the API-key tenant), a full sealed two-round MRTR flow
//! (`greet`: input-required with a sealed state, then the retry that carries it), and one
//! legacy shim round (`greet` on a 2025-11-25 session: the elicitation read off the call's SSE
//! stream, the answer POSTed, the greeting read off the same stream).
//!
//! The requests go through the same actix-web `App` that `roundtrip serve` runs (guard, body
//! limits, tenant and key lookup, envelope, the worker's Dispatcher, stamping, framing), called
//! in process: no socket, so the figure is the runtime's own cost. Logging is off, as in a
//! server run with `ROUNDTRIP_LOG=warn`.
//!
//! `cargo bench --bench stack`. Figures and the machine: BENCHMARKS.md.

use std::time::{Duration, Instant};

use actix_web::body::MessageBody;
use actix_web::dev::{Service, ServiceResponse};
use actix_web::{test, App};
use criterion::{criterion_group, criterion_main, Criterion};
use roundtrip::config::Config;
use roundtrip::wiring;
use roundtrip_runtime::transport::http;
use serde_json::Value;

const KEY: &str = "bench-key";
const META: &str = r#""_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{}}}"#;

fn request(name: &str, body: String) -> actix_http::Request {
    test::TestRequest::post()
        .uri("/t/demo/mcp")
        .insert_header(("host", "127.0.0.1"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {KEY}")))
        .insert_header(("mcp-protocol-version", "2026-07-28"))
        .insert_header(("mcp-method", "tools/call"))
        .insert_header(("mcp-name", name.to_owned()))
        .set_payload(body)
        .to_request()
}

async fn bytes<B: MessageBody>(response: ServiceResponse<B>) -> actix_web::web::Bytes {
    assert_eq!(response.status(), 200);
    test::read_body(response).await
}

fn echo_body() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"text":"hello"}},{META}}}}}"#
    )
}

fn round1_body() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"greet",{META}}}}}"#
    )
}

fn round2_body(state: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"name":"greet","inputResponses":{{"user_name":{{"action":"accept","content":{{"name":"Ada"}}}}}},"requestState":"{state}",{META}}}}}"#
    )
}

fn legacy_request(session: Option<&str>, body: String) -> actix_http::Request {
    let mut req = test::TestRequest::post()
        .uri("/t/demo/mcp")
        .insert_header(("host", "127.0.0.1"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {KEY}")));
    if let Some(session) = session {
        req = req
            .insert_header(("mcp-session-id", session.to_owned()))
            .insert_header(("mcp-protocol-version", "2025-11-25"));
    }
    req.set_payload(body).to_request()
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"bench","version":"1"}}}"#;
const LEGACY_CALL: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"greet"}}"#;

/// The next JSON-RPC message of an SSE body, reading chunks as they come.
async fn next_event<B: MessageBody + Unpin>(body: &mut B, buf: &mut Vec<u8>) -> Value
where
    B::Error: std::fmt::Debug,
{
    loop {
        if let Some(end) = buf.windows(2).position(|w| w == b"\n\n") {
            let event: Vec<u8> = buf.drain(..end + 2).collect();
            let text = String::from_utf8(event).expect("UTF-8");
            if let Some(data) = text.lines().find_map(|l| l.strip_prefix("data: ")) {
                return serde_json::from_str(data).expect("JSON");
            }
            continue;
        }
        let chunk =
            futures_util::future::poll_fn(|cx| std::pin::Pin::new(&mut *body).poll_next(cx))
                .await
                .expect("the stream goes on")
                .expect("a chunk");
        buf.extend_from_slice(&chunk);
    }
}

/// One legacy shim round: the call, its elicitation, the answer, the greeting.
async fn legacy_round<S, B>(app: &S, session: &str)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + Unpin,
    B::Error: std::fmt::Debug,
{
    let response = app
        .call(legacy_request(Some(session), LEGACY_CALL.to_owned()))
        .await
        .expect("the call");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut buf = Vec::new();
    let leg = next_event(&mut body, &mut buf).await;
    assert_eq!(leg["method"], "elicitation/create");
    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{},"result":{{"action":"accept","content":{{"name":"Ada"}}}}}}"#,
        leg["id"]
    );
    let accepted = app
        .call(legacy_request(Some(session), answer))
        .await
        .expect("the answer");
    assert_eq!(accepted.status(), 202);
    let done = next_event(&mut body, &mut buf).await;
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
}

fn stack(c: &mut Criterion) {
    let system = actix_rt::System::new();
    let (app, running) = system.block_on(async {
        let config = Config {
            listen: "127.0.0.1:0".into(),
            workers: Some(1),
            demo_api_key: Some(KEY.into()),
            ..Config::default()
        };
        let running = wiring::start(&config).await.expect("the server starts");
        let app =
            test::init_service(App::new().configure(http::configure(running.service.clone())))
                .await;
        (app, running)
    });

    // Both flows are checked once before they are timed.
    system.block_on(async {
        let out = bytes(app.call(request("echo", echo_body())).await.expect("echo")).await;
        assert!(std::str::from_utf8(&out)
            .expect("UTF-8")
            .contains(r#""text":"hello""#));
        let out = bytes(app.call(request("greet", round1_body())).await.expect("r1")).await;
        let r1: Value = serde_json::from_slice(&out).expect("JSON");
        let state = r1["result"]["requestState"]
            .as_str()
            .expect("a sealed state");
        let out = bytes(
            app.call(request("greet", round2_body(state)))
                .await
                .expect("r2"),
        )
        .await;
        assert!(std::str::from_utf8(&out)
            .expect("UTF-8")
            .contains("Hello, Ada!"));
    });

    c.bench_function("stack/tools_call_echo", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let req = request("echo", echo_body());
                    let start = Instant::now();
                    let out = bytes(app.call(req).await.expect("echo")).await;
                    took += start.elapsed();
                    std::hint::black_box(out);
                }
                took
            })
        })
    });

    c.bench_function("stack/mrtr_two_rounds_sealed", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let req = request("greet", round1_body());
                    let start = Instant::now();
                    let out = bytes(app.call(req).await.expect("round 1")).await;
                    let r1: Value = serde_json::from_slice(&out).expect("JSON");
                    let state = r1["result"]["requestState"]
                        .as_str()
                        .expect("a sealed state");
                    let req = request("greet", round2_body(state));
                    let out = bytes(app.call(req).await.expect("round 2")).await;
                    took += start.elapsed();
                    std::hint::black_box(out);
                }
                took
            })
        })
    });

    let session = system.block_on(async {
        let response = app
            .call(legacy_request(None, INITIALIZE.to_owned()))
            .await
            .expect("initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session")
            .to_owned();
        legacy_round(&app, &session).await;
        session
    });

    c.bench_function("stack/legacy_shim_round", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    legacy_round(&app, &session).await;
                }
                start.elapsed()
            })
        })
    });

    system.block_on(running.stop());
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = stack
}
criterion_main!(benches);
