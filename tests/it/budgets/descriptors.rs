//! File descriptors: `roundtrip serve` under a low open-file limit (`prlimit --nofile`)
//! refuses new listen streams with 503 once fewer than `streams.fd_headroom` descriptors
//! remain, while `/healthz` and calls keep answering.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{mcp_headers, rpc, scratch_dir, tool_call};

/// The open-file limit the server runs under, and the headroom it keeps.
const NOFILE: &str = "128";
const HEADROOM: &str = "64";

/// `roundtrip serve` under `prlimit --nofile=128:128`; killed when dropped.
struct Serve {
    child: Child,
    base: String,
}

impl Serve {
    fn start() -> Serve {
        let dir = scratch_dir();
        let mut child = Command::new("prlimit")
            .arg(format!("--nofile={NOFILE}:{NOFILE}"))
            .arg(env!("CARGO_BIN_EXE_roundtrip"))
            .args(["serve", "--listen", "127.0.0.1:0", "--workers", "1"])
            .env("ROUNDTRIP_DATA_DIR", &dir)
            .env("ROUNDTRIP_STREAMS__FD_HEADROOM", HEADROOM)
            .env("ROUNDTRIP_STREAMS__MAX_LISTEN_PER_CALLER", "1000")
            .env("ROUNDTRIP_STREAMS__MAX_LISTEN_PER_TENANT", "1000")
            .env("ROUNDTRIP_HTTP__SSE_KEEPALIVE_MS", "100")
            .env("ROUNDTRIP_LOG", "error")
            .env_remove("RUST_LOG")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("prlimit (util-linux) runs roundtrip serve");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let base = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.split(" listening on ").nth(1).map(str::to_owned))
            .expect("the listening address");
        std::thread::spawn(move || for _ in lines {});
        Serve { child, base }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// POSTs `body` to the conformance tenant (anonymous) as a modern client: the response.
async fn post(
    client: &awc::Client,
    serve: &Serve,
    body: &Value,
) -> awc::ClientResponse<
    impl futures_util::Stream<Item = Result<actix_web::web::Bytes, awc::error::PayloadError>>,
> {
    let mut req = client
        .post(format!("{}/t/conformance/mcp", serve.base))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"));
    for (name, value) in mcp_headers(Some(body)) {
        req = req.insert_header((name, value));
    }
    req.send_body(serde_json::to_vec(body).expect("json"))
        .await
        .expect("answered")
}

#[actix_web::test]
async fn under_a_low_open_file_limit_listen_streams_are_refused_but_healthz_and_calls_answer() {
    let serve = Serve::start();
    let client = awc::Client::builder()
        .timeout(Duration::from_secs(20))
        .finish();
    let listen = rpc(
        "listen",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    // Each open stream holds a connection (a descriptor): they are taken until the
    // headroom is reached, and the next is refused.
    let mut open = Vec::new();
    let refused = loop {
        assert!(open.len() < 128, "no listen stream was ever refused");
        let resp = post(&client, &serve, &listen).await;
        if resp.status().as_u16() != 200 {
            break resp;
        }
        open.push(resp);
    };
    assert!(
        !open.is_empty(),
        "some listen streams open before the headroom is reached"
    );
    assert_eq!(refused.status().as_u16(), 503);
    assert!(refused.headers().get("retry-after").is_some());
    let mut refused = refused;
    let body: Value = serde_json::from_slice(&refused.body().await.expect("a body")).expect("json");
    assert_eq!(body["error"]["code"], -31503, "{body}");

    let health = client
        .get(format!("{}/healthz", serve.base))
        .send()
        .await
        .expect("/healthz answers");
    assert_eq!(health.status().as_u16(), 200);
    let call = tool_call(1, "test_simple_text", json!({}), json!({}));
    let mut answered = post(&client, &serve, &call).await;
    assert_eq!(answered.status().as_u16(), 200);
    let body = answered.body().await.expect("a body");
    assert!(
        String::from_utf8_lossy(&body).contains("simple text response"),
        "{body:?}"
    );
    drop(open);
}
