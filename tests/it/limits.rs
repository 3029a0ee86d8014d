//! Configured limits: body size and request timeout. (The round cap is in `mrtr`, the state
//! size in `sealing`.)

use std::time::Duration;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::net::TcpStream;

use crate::support::{tool_call, Server, LAB};

#[actix_web::test]
async fn a_body_larger_than_max_body_bytes_is_413_with_a_json_rpc_error() {
    let server = Server::start_with(|c| c.http.max_body_bytes = 2048).await;
    let big = tool_call("big", "quiet", json!({"text": "x".repeat(4096)}), json!({}));
    let reply = server.send(LAB, &big).await;
    reply.error(-31013, 413);
    server.stop().await;
}

#[actix_web::test]
async fn a_body_within_max_body_bytes_is_served() {
    let server = Server::start_with(|c| c.http.max_body_bytes = 2048).await;
    let body = tool_call(
        "fits",
        "quiet",
        json!({"text": "x".repeat(1024)}),
        json!({}),
    );
    assert!(serde_json::to_vec(&body).expect("json").len() <= 2048);
    server.send(LAB, &body).await.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_handler_slower_than_the_request_timeout_is_an_internal_error() {
    let server = Server::start_with(|c| c.mcp.request_timeout_ms = 200).await;
    let reply = server
        .send(LAB, &tool_call(1, "slow", json!({}), json!({})))
        .await;
    reply.error(-32603, 200);
    // The worker is free again.
    server
        .send(LAB, &tool_call(2, "quiet", json!({}), json!({})))
        .await
        .result();
    server.stop().await;
}

/// What a server with a 300 ms body timeout answers a head that promises 1000 bytes of
/// body, of which only `sent` arrive.
async fn stalled_body_reply(sent: &'static str) -> String {
    let server = Server::start_with(|c| c.http.body_timeout_ms = 300).await;
    let addr = server.addr;
    let raw = actix_web::rt::task::spawn_blocking(move || {
        let mut socket = TcpStream::connect(addr).expect("connect");
        socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
        let head = format!(
            "POST /t/{LAB}/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{sent}"
        );
        socket.write_all(head.as_bytes()).expect("write");
        let mut reply = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = socket.read(&mut buf) {
            if n == 0 {
                break;
            }
            reply.extend_from_slice(&buf[..n]);
            if reply.windows(4).any(|w| w == b"\r\n\r\n") && reply.ends_with(b"}") {
                break;
            }
        }
        String::from_utf8_lossy(&reply).into_owned()
    })
    .await
    .expect("the probe thread");
    server.stop().await;
    raw
}

fn assert_body_timed_out(raw: &str) {
    assert!(raw.starts_with("HTTP/1.1 408"), "{raw}");
    let body = raw.split("\r\n\r\n").nth(1).expect("a body");
    let error: Value = serde_json::from_str(body).expect("a JSON-RPC error body");
    assert_eq!(error["error"]["code"], -31008, "{error}");
}

#[actix_web::test]
async fn a_body_that_stalls_past_the_body_timeout_is_408_with_a_json_rpc_error() {
    // A slow-loris body: a few bytes arrive with the head, then nothing.
    assert_body_timed_out(&stalled_body_reply("{\"jsonrpc\":").await);
}

#[actix_web::test]
async fn a_body_that_never_starts_is_408_too() {
    // Only the head: no byte of the body ever arrives to wake the read.
    assert_body_timed_out(&stalled_body_reply("").await);
}
