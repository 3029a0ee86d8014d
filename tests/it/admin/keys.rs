//! API keys made through the admin API, as the MCP endpoint takes them: shown once, listed
//! without their secret, limited by their grants on both eras, and refused once revoked or
//! expired, within a second.

use std::time::{Duration, Instant};

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::legacy_client::{legacy_call, legacy_rpc, LEGACY_VERSION};
use crate::support::{tool_call, Server};

/// `tools/call` of echo on `demo` with `key`.
async fn echo_status(server: &Server, key: &str) -> u16 {
    let call = tool_call(1, "echo", json!({"text": "hi"}), json!({}));
    server
        .post("demo", &call)
        .bearer(key)
        .send_unchecked()
        .await
        .status
}

/// Waits until `check` is true, for at most a second.
async fn within_a_second(mut check: impl AsyncFnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < Duration::from_secs(1) {
        if check().await {
            return true;
        }
        actix_web::rt::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

#[actix_web::test]
async fn a_new_key_calls_the_endpoint_and_its_secret_is_never_listed() {
    let server = Server::start().await;
    let (id, secret) = server.create_key("demo", json!({"scopes": ["mcp"]})).await;
    assert_eq!(echo_status(&server, &secret).await, 200);
    let listed = server
        .admin(Method::GET, "/tenants/demo/keys")
        .send_unchecked()
        .await;
    let body = String::from_utf8_lossy(&listed.body).into_owned();
    assert!(!body.contains(&secret), "a secret in the list");
    let keys = listed.problem_or_json();
    let key = keys["items"]
        .as_array()
        .and_then(|k| k.iter().find(|k| k["id"] == id.as_str()))
        .cloned();
    assert_eq!(key.map(|k| k["state"].clone()), Some(json!("active")));
    server.stop().await;
}

#[actix_web::test]
async fn a_revoked_key_is_refused_within_a_second() {
    let server = Server::start().await;
    let (id, secret) = server.create_key("demo", json!({"scopes": ["mcp"]})).await;
    assert_eq!(echo_status(&server, &secret).await, 200);
    let revoked = server
        .admin(Method::DELETE, &format!("/tenants/demo/keys/{id}"))
        .send_unchecked()
        .await;
    assert_eq!(revoked.status, 204, "{revoked:?}");
    assert!(within_a_second(async || echo_status(&server, &secret).await == 401).await);
    // Revoking it again: there is no live key of that id.
    server
        .admin(Method::DELETE, &format!("/tenants/demo/keys/{id}"))
        .send_unchecked()
        .await
        .problem(404);
    server.stop().await;
}

#[actix_web::test]
async fn a_key_revoked_in_the_store_behind_the_servers_back_is_refused_within_a_second() {
    let server = Server::start().await;
    let (id, secret) = server.create_key("demo", json!({"scopes": ["mcp"]})).await;
    let store = server.registry().store().clone();
    assert!(store
        .revoke_key("demo", &id, roundtrip_tenants::Millis::now())
        .await
        .expect("revoked"));
    assert!(within_a_second(async || echo_status(&server, &secret).await == 401).await);
    server.stop().await;
}

#[actix_web::test]
async fn an_expired_key_is_refused() {
    let server = Server::start().await;
    let soon = roundtrip_tenants::admin::bodies::rfc3339(roundtrip_tenants::Millis(
        roundtrip_tenants::Millis::now().0 + 500,
    ));
    let (_, secret) = server
        .create_key("demo", json!({"scopes": ["mcp"], "expires_at": soon}))
        .await;
    assert_eq!(echo_status(&server, &secret).await, 200);
    actix_web::rt::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(echo_status(&server, &secret).await, 401);
    server.stop().await;
}

#[actix_web::test]
async fn a_key_that_expired_already_cannot_be_made() {
    let server = Server::start().await;
    let body = json!({"scopes": ["mcp"], "expires_at": "2020-01-01T00:00:00Z"});
    server
        .admin(Method::POST, "/tenants/demo/keys")
        .json(&body)
        .send_unchecked()
        .await
        .problem(400);
    let body = json!({"scopes": []});
    server
        .admin(Method::POST, "/tenants/demo/keys")
        .json(&body)
        .send_unchecked()
        .await
        .problem(400);
    let body = json!({"scopes": ["root"]});
    server
        .admin(Method::POST, "/tenants/demo/keys")
        .json(&body)
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_admin_key_is_forbidden_on_the_mcp_endpoint() {
    let server = Server::start().await;
    let (_, secret) = server
        .create_key("demo", json!({"scopes": ["tenant-admin"]}))
        .await;
    let call = tool_call(1, "echo", json!({"text": "hi"}), json!({}));
    server
        .post("demo", &call)
        .bearer(&secret)
        .send()
        .await
        .error(-31003, 403);
    server.stop().await;
}

#[actix_web::test]
async fn without_a_key_the_endpoint_answers_401_with_a_bearer_challenge() {
    let server = Server::start().await;
    let call = tool_call(1, "echo", json!({"text": "hi"}), json!({}));
    let reply = server.post("demo", &call).send().await;
    reply.error(-31001, 401);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    server.stop().await;
}

fn names(list: &Value, field: &str) -> Vec<String> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[field].as_str().map(str::to_owned))
        .collect()
}

#[actix_web::test]
async fn a_limited_key_lists_and_calls_only_its_tools_on_the_modern_era() {
    let server = Server::start().await;
    let (_, secret) = server
        .create_key(
            "demo",
            json!({"scopes": ["mcp"], "allow": {"tools": ["echo"]}}),
        )
        .await;
    let list = crate::support::rpc(1, "tools/list", json!({}));
    let tools = server
        .post("demo", &list)
        .bearer(&secret)
        .send()
        .await
        .result();
    assert_eq!(names(&tools["tools"], "name"), ["echo"]);
    let greet = tool_call(2, "greet", json!({}), json!({"elicitation": {}}));
    server
        .post("demo", &greet)
        .bearer(&secret)
        .send()
        .await
        .error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_limited_key_lists_and_calls_only_its_tools_on_a_legacy_session() {
    let server = Server::start().await;
    let (_, secret) = server
        .create_key(
            "demo",
            json!({"scopes": ["mcp"], "allow": {"tools": ["echo"]}}),
        )
        .await;
    let session = server
        .legacy_session_as("demo", Some(&secret), LEGACY_VERSION, json!({}))
        .await;
    let tools = session
        .result(&legacy_rpc(1, "tools/list", json!({})))
        .await;
    assert_eq!(names(&tools["tools"], "name"), ["echo"]);
    let greet = session.send(&legacy_call(2, "greet", json!({}))).await;
    assert!(greet.response()["error"].is_object(), "{greet:?}");
    server.stop().await;
}
