//! Criterion benches of the whole in-process stack, from an HTTP request to response bytes:
//! a trivial `tools/call` (`echo` on the API-key tenant), a full sealed two-round MRTR flow
//! (`greet`: input-required with a sealed state, then the retry that carries it; the two
//! requests are built inside the timed loop), and one
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
use roundtrip::bench::{self, Bodies, SseReader};
use roundtrip::config::Config;
use roundtrip::wiring;
use roundtrip_runtime::transport::http;
use serde_json::Value;

const KEY: &str = "bench-key";

/// A POST to the demo tenant: modern (`Some(name)`: the `tools/call` headers of tool `name`),
/// or in a legacy session (`legacy: Some(id)`), or the `initialize` that opens one.
fn request(tool: Option<&str>, legacy: Option<&str>, body: String) -> actix_http::Request {
    let mut req = test::TestRequest::post()
        .uri("/t/demo/mcp")
        .insert_header(("host", "127.0.0.1"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {KEY}")));
    if let Some(name) = tool {
        req = req
            .insert_header(("mcp-protocol-version", bench::PROTOCOL_VERSION))
            .insert_header(("mcp-method", "tools/call"))
            .insert_header(("mcp-name", name.to_owned()));
    }
    if let Some(session) = legacy {
        req = req
            .insert_header(("mcp-session-id", session.to_owned()))
            .insert_header(("mcp-protocol-version", bench::LEGACY_VERSION));
    }
    req.set_payload(body).to_request()
}

async fn bytes<B: MessageBody>(response: ServiceResponse<B>) -> actix_web::web::Bytes {
    assert_eq!(response.status(), 200);
    test::read_body(response).await
}

/// One sealed two-round flow: round 1's state carried into round 2.
async fn mrtr_flow<S, B>(app: &S, bodies: &Bodies) -> actix_web::web::Bytes
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody,
{
    let round1 = request(Some(bench::MRTR_TOOL), None, bodies.round1(1));
    let out = bytes(app.call(round1).await.expect("round 1")).await;
    let r1: Value = serde_json::from_slice(&out).expect("JSON");
    let state = r1["result"]["requestState"]
        .as_str()
        .expect("a sealed state");
    let round2 = request(Some(bench::MRTR_TOOL), None, bodies.round2(2, state));
    bytes(app.call(round2).await.expect("round 2")).await
}

/// One legacy shim round: the call, its elicitation, the answer, the greeting.
async fn legacy_round<S, B>(app: &S, session: &str)
where
    S: Service<actix_http::Request, Response = ServiceResponse<B>, Error = actix_web::Error>,
    B: MessageBody + Unpin,
    B::Error: std::fmt::Display,
{
    let response = app
        .call(request(None, Some(session), bench::call_body(1)))
        .await
        .expect("the call");
    assert_eq!(response.status(), 200);
    let mut body = response.into_body();
    let mut stream = SseReader::new(futures_util::stream::poll_fn(move |cx| {
        std::pin::Pin::new(&mut body).poll_next(cx)
    }));
    let leg = bench::check_leg(&stream.next().await.expect("the leg")).expect("an elicitation");
    let accepted = app
        .call(request(None, Some(session), bench::answer_body(&leg)))
        .await
        .expect("the answer");
    assert_eq!(accepted.status(), 202);
    let done: Value =
        serde_json::from_slice(&stream.next().await.expect("the result")).expect("JSON");
    assert_eq!(done["result"]["content"][0]["text"], bench::MRTR_GREETING);
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

    let bodies = Bodies::new("hello");
    // Every flow is checked once before it is timed.
    let session = system.block_on(async {
        let echo = request(Some("echo"), None, bodies.call(1));
        let out = bytes(app.call(echo).await.expect("echo")).await;
        assert!(std::str::from_utf8(&out)
            .expect("UTF-8")
            .contains(r#""text":"hello""#));
        let out = mrtr_flow(&app, &bodies).await;
        assert!(std::str::from_utf8(&out)
            .expect("UTF-8")
            .contains(bench::MRTR_GREETING));
        let init = request(None, None, bench::initialize_body());
        let response = app.call(init).await.expect("initialize");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("a session")
            .to_owned();
        legacy_round(&app, &session).await;
        session
    });

    c.bench_function("stack/tools_call_echo", |b| {
        b.iter_custom(|iters| {
            system.block_on(async {
                let mut took = Duration::ZERO;
                for _ in 0..iters {
                    let req = request(Some("echo"), None, bodies.call(1));
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
                let start = Instant::now();
                for _ in 0..iters {
                    std::hint::black_box(mrtr_flow(&app, &bodies).await);
                }
                start.elapsed()
            })
        })
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
