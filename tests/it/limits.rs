//! Configured limits: body size and request timeout. (The round cap is in `mrtr`, the state
//! size in `sealing`.)

use serde_json::json;

use crate::support::{tool_call, Server, LAB};

#[actix_web::test]
async fn a_body_larger_than_max_body_bytes_is_413_with_a_json_rpc_error() {
    let server = Server::start_with(|c| c.http.max_body_bytes = 2048).await;
    let big = tool_call("big", "quiet", json!({"text": "x".repeat(4096)}), json!({}));
    let reply = server.send(LAB, &big).await;
    assert_eq!(reply.status, 413, "{reply:?}");
    assert!(reply.json()["error"]["code"].is_i64(), "{reply:?}");
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
