//! `subscriptions/listen` streams: capped per caller, per tenant and per process (a closed
//! stream gives its slot back), charged to the caller's byte budget with their URIs, their
//! resource subscriptions capped in count and URI length, kept alive by comments while idle,
//! and closed after idling too long.

use std::time::Duration;

use futures_util::StreamExt;
use roundtrip_runtime::budget::figures::{listen_uri, LISTEN_STREAM};
use serde_json::{json, Value};

use super::assert_refused;
use crate::support::{mcp_headers, rpc, tool_call, Events, Server, ALICE, BOB, DEMO, LAB, LAB2};

fn listen(filter: Value) -> Value {
    rpc(
        "listen-1",
        "subscriptions/listen",
        json!({"notifications": filter}),
    )
}

fn tools() -> Value {
    listen(json!({"toolsListChanged": true}))
}

/// A listen stream on `tenant` (as `bearer`), read past its acknowledgement.
async fn open(server: &Server, tenant: &str, bearer: Option<&str>) -> Events {
    let mut req = server.post(tenant, &tools());
    if let Some(token) = bearer {
        req = req.bearer(token);
    }
    let mut events = req.open().await;
    assert_eq!(events.status, 200);
    let ack = events.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    events
}

#[actix_web::test]
async fn a_caller_at_its_listen_cap_is_refused_with_429_while_another_caller_listens() {
    let server = Server::start_with(|c| c.streams.max_listen_per_caller = 1).await;
    let _held = open(&server, DEMO, Some(ALICE)).await;
    let refused = server
        .post(DEMO, &tools())
        .bearer(ALICE)
        .send_unchecked()
        .await;
    assert_refused(&refused, -31429, 429, Some("caller"));
    let _bob = open(&server, DEMO, Some(BOB)).await;
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_at_its_listen_cap_is_refused_with_429_while_another_tenant_listens() {
    let server = Server::start_with(|c| c.streams.max_listen_per_tenant = 1).await;
    let _held = open(&server, DEMO, Some(ALICE)).await;
    let refused = server
        .post(DEMO, &tools())
        .bearer(BOB)
        .send_unchecked()
        .await;
    assert_refused(&refused, -31429, 429, Some("tenant"));
    let _lab = open(&server, LAB, None).await;
    server.stop().await;
}

#[actix_web::test]
async fn the_process_at_its_listen_cap_refuses_with_503_and_still_answers_calls() {
    let server = Server::start_with(|c| c.streams.max_listen = 1).await;
    let _held = open(&server, LAB, None).await;
    let refused = server.post(LAB2, &tools()).send_unchecked().await;
    assert_refused(&refused, -31503, 503, Some("process"));
    let call = tool_call(1, "quiet", json!({}), json!({}));
    assert_eq!(server.post(LAB2, &call).send().await.status, 200);
    server.stop().await;
}

#[actix_web::test]
async fn a_closed_listen_stream_gives_its_slot_back() {
    let server = Server::start_with(|c| c.streams.max_listen_per_caller = 1).await;
    let held = open(&server, LAB, None).await;
    drop(held);
    // The server notices at its next keep-alive write (every 100 ms in tests).
    for _ in 0..50 {
        let mut events = server.post(LAB, &tools()).open().await;
        if events.status == 200 {
            assert!(events.next().await.is_some());
            server.stop().await;
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the closed stream's slot never came back");
}

#[actix_web::test]
async fn a_listen_stream_past_the_callers_byte_budget_is_refused_with_429() {
    // 100-byte URIs: each is charged LISTEN_URI and four times its length.
    let uris =
        |n: usize| -> Vec<String> { (0..n).map(|i| format!("lab://items/{i:088}")).collect() };
    let budget = LISTEN_STREAM + 100 * listen_uri(100);
    let server = Server::start_with(|c| c.budgets.caller_bytes = budget).await;
    let over = listen(json!({"resourceSubscriptions": uris(101)}));
    let refused = server.post(LAB, &over).send_unchecked().await;
    assert_refused(&refused, -31429, 429, Some("caller"));
    let fits = listen(json!({"resourceSubscriptions": uris(100)}));
    let mut events = server.post(LAB, &fits).open().await;
    assert_eq!(events.status, 200);
    let ack = events.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    server.stop().await;
}

#[actix_web::test]
async fn more_than_256_resource_subscriptions_are_refused_naming_the_cap() {
    let server = Server::start().await;
    let uris: Vec<String> = (0..257).map(|i| format!("lab://items/{i}")).collect();
    let body = listen(json!({"resourceSubscriptions": uris}));
    let reply = server.post(LAB, &body).send_unchecked().await;
    let error = reply.error(-32602, 400);
    assert!(
        error["message"].as_str().is_some_and(|m| m.contains("256")),
        "{error}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_resource_subscription_uri_over_2048_bytes_is_refused_naming_the_cap() {
    let server = Server::start().await;
    let long = format!("lab://items/{}", "x".repeat(2048));
    let body = listen(json!({"resourceSubscriptions": [long]}));
    let reply = server.post(LAB, &body).send_unchecked().await;
    let error = reply.error(-32602, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("2048")),
        "{error}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn an_idle_listen_stream_carries_keep_alive_comments() {
    let server = Server::start().await;
    let body = tools();
    let mut req = awc::Client::new()
        .post(server.url(LAB))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"));
    for (name, value) in mcp_headers(Some(&body)) {
        req = req.insert_header((name, value));
    }
    let mut resp = req
        .send_body(serde_json::to_vec(&body).expect("json"))
        .await
        .expect("answered");
    assert_eq!(resp.status().as_u16(), 200);
    // Keep-alives every 100 ms in tests: one arrives soon after the acknowledgement.
    let mut seen = Vec::new();
    let found = tokio::time::timeout(Duration::from_secs(5), async {
        while let Some(Ok(chunk)) = resp.next().await {
            seen.extend_from_slice(&chunk);
            if seen.windows(7).any(|w| w == b": ping\n") {
                return true;
            }
        }
        false
    })
    .await;
    assert_eq!(found, Ok(true), "{}", String::from_utf8_lossy(&seen));
    server.stop().await;
}

#[actix_web::test]
async fn a_listen_stream_that_idles_past_its_limit_closes_with_its_closing_result() {
    let server = Server::start_with(|c| c.streams.listen_idle_secs = 1).await;
    let mut events = open(&server, LAB, None).await;
    let closing = tokio::time::timeout(Duration::from_secs(5), events.next())
        .await
        .expect("the idle stream closes within 5 s")
        .expect("a closing result");
    assert_eq!(closing["id"], "listen-1", "{closing}");
    assert!(closing.get("result").is_some(), "{closing}");
    let end = tokio::time::timeout(Duration::from_secs(5), events.next()).await;
    assert!(
        matches!(end, Ok(None)),
        "the stream ends after its closing result"
    );
    server.stop().await;
}
