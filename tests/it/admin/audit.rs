//! The audit log: a record per `tools/call`, `prompts/get` and `resources/read` with who,
//! what, how it ended, the round and the latency, never the arguments; a record per admin
//! action; read with filters, newest first, in pages.

use std::time::{Duration, Instant};

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::{tool_call, Server, ALICE};

/// The tenant's audit records (newest first) once `expected` are there: records are written
/// off the request path, in batches.
async fn records(server: &Server, tenant: &str, query: &str, expected: usize) -> Vec<Value> {
    let start = Instant::now();
    loop {
        let page = server
            .admin(Method::GET, &format!("/tenants/{tenant}/audit{query}"))
            .send_unchecked()
            .await
            .problem_or_json();
        let items = page["items"].as_array().cloned().unwrap_or_default();
        if items.len() >= expected || start.elapsed() > Duration::from_secs(5) {
            return items;
        }
        actix_web::rt::time::sleep(Duration::from_millis(50)).await;
    }
}

#[actix_web::test]
async fn a_call_is_recorded_with_its_outcome_and_never_its_arguments() {
    let server = Server::start().await;
    let secret_text = "the-argument-nobody-records";
    let echo = tool_call(1, "echo", json!({"text": secret_text}), json!({}));
    server
        .post("demo", &echo)
        .bearer(ALICE)
        .send()
        .await
        .result();
    let calls = records(&server, "demo", "?target=echo", 1).await;
    assert_eq!(calls.len(), 1, "{calls:?}");
    let record = &calls[0];
    assert_eq!(record["kind"], "call");
    assert_eq!(record["action"], "tools/call");
    assert_eq!(record["actor"], "key:alice");
    assert_eq!(record["outcome"], "complete");
    assert_eq!(record["round"], 0, "a first call");
    assert!(record["latency_us"].as_i64().is_some());
    assert!(!record.to_string().contains(secret_text), "{record}");
    server.stop().await;
}

#[actix_web::test]
async fn an_input_required_round_and_an_error_are_recorded_as_such() {
    let server = Server::start().await;
    let greet = tool_call(1, "greet", json!({}), json!({"elicitation": {}}));
    server
        .post("demo", &greet)
        .bearer(ALICE)
        .send()
        .await
        .state();
    let unknown = tool_call(2, "no_such_tool", json!({}), json!({}));
    server
        .post("demo", &unknown)
        .bearer(ALICE)
        .send_unchecked()
        .await;
    let asked = records(&server, "demo", "?outcome=input_required", 1).await;
    assert_eq!(
        asked.first().map(|r| r["target"].clone()),
        Some(json!("greet"))
    );
    let failed = records(&server, "demo", "?outcome=error", 1).await;
    let failed = failed.first().cloned().unwrap_or_default();
    assert_eq!(failed["target"], "no_such_tool");
    assert_eq!(failed["error_code"], -32602);
    server.stop().await;
}

#[actix_web::test]
async fn admin_actions_are_recorded_with_who_did_them() {
    let server = Server::start().await;
    let (id, _) = server.create_key("lab", json!({"scopes": ["mcp"]})).await;
    let admin = records(&server, "lab", "", 1).await;
    let created = admin
        .iter()
        .find(|r| r["action"] == "key.create")
        .cloned()
        .unwrap_or_default();
    assert_eq!(created["kind"], "admin");
    assert_eq!(created["actor"], "operator");
    assert_eq!(created["target"], id.as_str());
    server.stop().await;
}

#[actix_web::test]
async fn the_log_is_read_newest_first_in_pages() {
    let server = Server::start().await;
    for i in 0..5 {
        let echo = tool_call(i, "echo", json!({"text": "x"}), json!({}));
        server
            .post("demo", &echo)
            .bearer(ALICE)
            .send()
            .await
            .result();
    }
    records(&server, "demo", "", 5).await;
    let mut ids = Vec::new();
    let mut query = "?limit=2".to_owned();
    loop {
        let page = server
            .admin(Method::GET, &format!("/tenants/demo/audit{query}"))
            .send_unchecked()
            .await
            .problem_or_json();
        ids.extend(
            page["items"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|r| r["id"].as_i64()),
        );
        match page["next_cursor"].as_str() {
            Some(cursor) => query = format!("?limit=2&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(ids.len(), 5, "{ids:?}");
    assert!(ids.windows(2).all(|w| w[0] > w[1]), "newest first: {ids:?}");
    let future = server
        .admin(
            Method::GET,
            "/tenants/demo/audit?since=2999-01-01T00:00:00Z",
        )
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(future["items"], json!([]));
    server
        .admin(Method::GET, "/tenants/demo/audit?since=yesterday")
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}
