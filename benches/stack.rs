//! Criterion benches of the whole in-process stack, from an HTTP request to response bytes:
//! a trivial `tools/call` (`echo` on the API-key tenant) and a full sealed two-round MRTR flow
//! (`greet`: input-required with a sealed state, then the retry that carries it).
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

    system.block_on(running.stop());
}

criterion_group! {
    name = benches;
    config = Criterion::default().measurement_time(Duration::from_secs(5));
    targets = stack
}
criterion_main!(benches);
