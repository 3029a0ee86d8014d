//! `resultType` stamping: every modern result carries it (empty results too), a `"task"`
//! result is refused (the tasks extension is not served), and errors and notifications never
//! carry it. (The harness checks the latter on every message; these tests make the point
//! explicitly.)

use serde_json::{json, Value};

use crate::support::{meta, rpc, tool_call, Server, LAB, LOG_LEVEL, SERVER_INFO};

#[actix_web::test]
async fn every_modern_result_carries_result_type_and_server_info() {
    let server = Server::start().await;
    for (method, params) in [
        ("server/discover", json!({})),
        ("tools/list", json!({})),
        ("prompts/list", json!({})),
        ("resources/list", json!({})),
        ("resources/templates/list", json!({})),
        ("tools/call", json!({"name": "quiet"})),
        (
            "prompts/get",
            json!({"name": "summary", "arguments": {"topic": "rust"}}),
        ),
        ("resources/read", json!({"uri": "lab://static"})),
        ("resources/read", json!({"uri": "lab://items/7"})),
        ("lab/empty", json!({})),
    ] {
        let result = server.send(LAB, &rpc(1, method, params)).await.result();
        assert_eq!(result["resultType"], "complete", "{method}: {result}");
        assert!(
            result["_meta"].get(SERVER_INFO).is_some(),
            "{method}: {result}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn completion_results_carry_result_type_including_empty_ones() {
    let server = Server::start().await;
    for (reference, argument, values) in [
        (
            json!({"type": "ref/prompt", "name": "summary"}),
            json!({"name": "topic", "value": "r"}),
            json!(["rust", "rest", "ruby"]),
        ),
        (
            json!({"type": "ref/prompt", "name": "summary"}),
            json!({"name": "topic", "value": "ru"}),
            json!(["rust", "ruby"]),
        ),
        (
            json!({"type": "ref/prompt", "name": "summary"}),
            json!({"name": "topic", "value": "zz"}),
            json!([]),
        ),
        (
            json!({"type": "ref/resource", "uri": "lab://items/{id}"}),
            json!({"name": "id", "value": "b"}),
            json!(["beta"]),
        ),
        (
            json!({"type": "ref/resource", "uri": "lab://items/{id}"}),
            json!({"name": "nope", "value": ""}),
            json!([]),
        ),
    ] {
        let result = server
            .send(
                LAB,
                &rpc(
                    1,
                    "completion/complete",
                    json!({"ref": reference, "argument": argument}),
                ),
            )
            .await
            .result();
        assert_eq!(result["resultType"], "complete", "{result}");
        assert_eq!(result["completion"]["values"], values, "{result}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_task_result_is_an_internal_error_even_for_a_request_declaring_the_extension() {
    let server = Server::start().await;
    let tasks = json!({"extensions": {"io.modelcontextprotocol/tasks": {}}});
    for params in [json!({"_meta": meta(tasks)}), json!({})] {
        let reply = server.send(LAB, &rpc(1, "lab/task", params)).await;
        reply.error(-32603, 200);
    }
    server.stop().await;
}

#[actix_web::test]
async fn errors_and_notifications_never_carry_result_type() {
    let server = Server::start().await;
    let mut messages: Vec<Value> = Vec::new();
    for body in [
        rpc(1, "nope", json!({})),
        tool_call(2, "ask_form", json!({}), json!({})),
        tool_call(3, "boom", json!({}), json!({})),
        rpc(4, "lab/ask", json!({})),
        rpc(5, "tools/list", json!({"cursor": "x"})),
    ] {
        messages.push(server.send(LAB, &body).await.json());
    }
    let mut m = meta(json!({}));
    m["progressToken"] = json!("t");
    m[LOG_LEVEL] = json!("debug");
    let streamed = server
        .send(
            LAB,
            &rpc(6, "tools/call", json!({"name": "chatty", "_meta": m})),
        )
        .await
        .events();
    messages.extend(streamed);

    let errors: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("error").is_some())
        .collect();
    let notifications: Vec<&Value> = messages
        .iter()
        .filter(|m| m.get("method").is_some())
        .collect();
    assert_eq!(errors.len(), 5);
    assert!(notifications.len() >= 7, "{notifications:?}");
    for message in errors.iter().chain(notifications.iter()) {
        assert!(
            !message.to_string().contains("resultType"),
            "no resultType anywhere in {message}"
        );
    }
    server.stop().await;
}
