//! Isolation with real keys made through the admin API: a key works on its own tenant only,
//! and a sealed state opens only for the tenant and the key it was issued to.

use awc::http::Method;
use serde_json::json;

use crate::support::{accept, retry, tool_call, Server};

fn greet(id: i64) -> serde_json::Value {
    tool_call(id, "greet", json!({}), json!({"elicitation": {}}))
}

fn ada() -> serde_json::Value {
    json!({"user_name": accept(json!({"name": "Ada"}))})
}

/// Two api-key tenants serving the examples, with keys: `(k1 of a, k2 of a, k3 of b)`.
async fn two_tenants(server: &Server) -> (String, String, String) {
    server
        .create_tenant("tenant-a", "examples", "api_key", json!({}))
        .await;
    server
        .create_tenant("tenant-b", "examples", "api_key", json!({}))
        .await;
    let mcp = json!({"scopes": ["mcp"]});
    let (_, k1) = server.create_key("tenant-a", mcp.clone()).await;
    let (_, k2) = server.create_key("tenant-a", mcp.clone()).await;
    let (_, k3) = server.create_key("tenant-b", mcp).await;
    (k1, k2, k3)
}

#[actix_web::test]
async fn a_key_of_one_tenant_is_refused_by_another() {
    let server = Server::start().await;
    let (k1, _, k3) = two_tenants(&server).await;
    let echo = tool_call(1, "echo", json!({"text": "x"}), json!({}));
    server
        .post("tenant-b", &echo)
        .bearer(&k1)
        .send()
        .await
        .error(-31001, 401);
    server
        .post("tenant-a", &echo)
        .bearer(&k3)
        .send()
        .await
        .error(-31001, 401);
    server
        .post("tenant-a", &echo)
        .bearer(&k1)
        .send()
        .await
        .result();
    server.stop().await;
}

#[actix_web::test]
async fn state_issued_to_one_key_is_refused_for_another_key_of_the_same_tenant() {
    let server = Server::start().await;
    let (k1, k2, _) = two_tenants(&server).await;
    let first = server.post("tenant-a", &greet(1)).bearer(&k1).send().await;
    let state = first.state();
    let retried = retry(&greet(1), 2, ada(), Some(&state));
    server
        .post("tenant-a", &retried)
        .bearer(&k2)
        .send()
        .await
        .error(-32602, 400);
    let done = server
        .post("tenant-a", &retried)
        .bearer(&k1)
        .send()
        .await
        .result();
    assert_eq!(done["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}

#[actix_web::test]
async fn state_issued_by_one_tenant_is_refused_by_another() {
    let server = Server::start().await;
    let (k1, _, k3) = two_tenants(&server).await;
    let state = server
        .post("tenant-a", &greet(1))
        .bearer(&k1)
        .send()
        .await
        .state();
    let retried = retry(&greet(1), 2, ada(), Some(&state));
    server
        .post("tenant-b", &retried)
        .bearer(&k3)
        .send()
        .await
        .error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn state_sealed_before_a_rotation_still_opens_after_it() {
    let server = Server::start().await;
    let (k1, _, _) = two_tenants(&server).await;
    let state = server
        .post("tenant-a", &greet(1))
        .bearer(&k1)
        .send()
        .await
        .state();
    let rotated = server
        .admin(Method::POST, "/tenants/tenant-a/state-keys/rotate")
        .send_unchecked()
        .await;
    assert_eq!(rotated.status, 200, "{rotated:?}");
    let retried = retry(&greet(1), 2, ada(), Some(&state));
    let done = server
        .post("tenant-a", &retried)
        .bearer(&k1)
        .send()
        .await
        .result();
    assert_eq!(done["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}
