//! Error codes and HTTP statuses outside the envelope: methods, paths, tenants,
//! authentication, the Host/Origin guard, and handlers that fail.

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::{meta, rpc, tool_call, Server, ALICE, DEMO, EMPTY, LAB};

#[actix_web::test]
async fn an_unknown_method_is_method_not_found_with_http_404() {
    let server = Server::start().await;
    let reply = server
        .send(LAB, &rpc(1, "tools/frobnicate", json!({})))
        .await;
    reply.error(-32601, 404);
    server.stop().await;
}

#[actix_web::test]
async fn removed_methods_are_method_not_found_with_http_404() {
    let server = Server::start().await;
    for (i, method) in [
        "initialize",
        "ping",
        "logging/setLevel",
        "resources/subscribe",
        "resources/unsubscribe",
        "tasks/result",
        "tasks/list",
    ]
    .into_iter()
    .enumerate()
    {
        let params = json!({"uri": "lab://static", "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}});
        let reply = server.send(LAB, &rpc(i, method, params)).await;
        let error = reply.error(-32601, 404);
        assert!(
            error["message"]
                .as_str()
                .is_some_and(|m| m.contains(method)),
            "{method}: {reply:?}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn get_on_the_endpoint_is_405_with_allow_post() {
    let server = Server::start().await;
    let reply = server
        .http(Method::GET, "/t/lab/mcp")
        .header("accept", "text/event-stream")
        .send()
        .await;
    assert_eq!(reply.status, 405, "{reply:?}");
    assert_eq!(reply.header("allow"), Some("POST"));
    assert!(reply.json()["error"]["code"].is_i64(), "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn delete_without_a_session_is_405_with_allow_post() {
    let server = Server::start().await;
    let reply = server.http(Method::DELETE, "/t/lab/mcp").send().await;
    assert_eq!(reply.status, 405, "{reply:?}");
    assert_eq!(reply.header("allow"), Some("POST"));
    assert!(reply.json()["error"]["code"].is_i64(), "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_path_is_a_404_with_a_json_rpc_body() {
    let server = Server::start().await;
    for (method, path) in [(Method::POST, "/mcp"), (Method::GET, "/nope")] {
        let reply = server.http(method, path).send().await;
        assert_eq!(reply.status, 404, "{reply:?}");
        assert!(reply.json()["error"]["code"].is_i64(), "{reply:?}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_tenant_is_404_with_code_31004() {
    let server = Server::start().await;
    let reply = server
        .send("no-such-tenant", &rpc("u-1", "tools/list", json!({})))
        .await;
    reply.error(-31004, 404);
    assert_eq!(reply.json()["id"], "u-1");
    server.stop().await;
}

#[actix_web::test]
async fn an_api_key_tenant_without_a_bearer_is_401_with_www_authenticate() {
    let server = Server::start().await;
    let reply = server
        .send(DEMO, &rpc("a-1", "tools/list", json!({})))
        .await;
    reply.error(-31001, 401);
    assert!(
        reply
            .header("www-authenticate")
            .is_some_and(|v| v.starts_with("Bearer")),
        "{reply:?}"
    );
    assert_eq!(reply.json()["id"], "a-1");
    server.stop().await;
}

#[actix_web::test]
async fn an_api_key_tenant_with_a_wrong_bearer_is_401_with_www_authenticate() {
    let server = Server::start().await;
    for token in ["rt_wrong", "", &ALICE[..ALICE.len() - 1]] {
        let reply = server
            .post(DEMO, &rpc("a-2", "tools/list", json!({})))
            .bearer(token)
            .send()
            .await;
        reply.error(-31001, 401);
        assert!(reply.header("www-authenticate").is_some(), "{reply:?}");
    }
    let basic = server
        .post(DEMO, &rpc("a-3", "tools/list", json!({})))
        .header("authorization", &format!("Basic {ALICE}"))
        .send()
        .await;
    basic.error(-31001, 401);
    server.stop().await;
}

#[actix_web::test]
async fn an_api_key_tenant_serves_a_valid_bearer() {
    let server = Server::start().await;
    let tools = server
        .send_demo(&rpc(1, "tools/list", json!({})))
        .await
        .result();
    assert!(tools["tools"]
        .as_array()
        .is_some_and(|t| t.iter().any(|t| t["name"] == "notes_delete")));
    server.stop().await;
}

#[actix_web::test]
async fn a_foreign_host_is_refused_with_403() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &rpc("h-1", "tools/list", json!({})))
        .header("host", "evil.example.com")
        .send()
        .await;
    reply.error(-31003, 403);
    assert!(
        reply.json().get("id").is_none(),
        "refused before the body is read"
    );
    server.stop().await;
}

#[actix_web::test]
async fn the_host_guard_refuses_before_reading_the_body() {
    let server = Server::start_with(|c| c.http.max_body_bytes = 1024).await;
    let reply = server
        .raw(LAB, vec![b' '; 64 * 1024])
        .header("host", "evil.example.com")
        .send()
        .await;
    reply.error(-31003, 403);
    server.stop().await;
}

#[actix_web::test]
async fn a_foreign_origin_is_refused_with_403() {
    let server = Server::start().await;
    for origin in [
        "http://evil.example.com",
        "http://localhost.evil.example.com",
        "null",
    ] {
        let reply = server
            .post(LAB, &rpc("o-1", "tools/list", json!({})))
            .header("origin", origin)
            .send()
            .await;
        reply.error(-31003, 403);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_loopback_origin_is_allowed() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &rpc(1, "tools/list", json!({})))
        .header(
            "origin",
            &format!("http://localhost:{}", server.addr.port()),
        )
        .send()
        .await;
    reply.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_handler_panic_is_an_internal_error_and_the_same_worker_answers_the_next_request() {
    let server = Server::start().await;
    let reply = server
        .send(LAB, &tool_call(1, "boom", json!({}), json!({})))
        .await;
    let error = reply.error(-32603, 200);
    assert!(
        !error.to_string().contains("deliberate panic"),
        "the panic message stays in the log: {reply:?}"
    );
    // The server has one worker: this is the worker whose handler panicked.
    let next = server
        .send(
            LAB,
            &tool_call(2, "boom", json!({"spare": true}), json!({})),
        )
        .await
        .result();
    assert_eq!(next["content"][0]["text"], "spared");
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_tool_is_invalid_params() {
    let server = Server::start().await;
    let reply = server
        .send(LAB, &tool_call(1, "no_such_tool", json!({}), json!({})))
        .await;
    reply.error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_prompt_is_invalid_params() {
    let server = Server::start().await;
    let reply = server
        .send(
            LAB,
            &rpc(1, "prompts/get", json!({"name": "no_such_prompt"})),
        )
        .await;
    reply.error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_prompt_without_its_required_argument_is_invalid_params() {
    let server = Server::start().await;
    let reply = server
        .send(
            LAB,
            &rpc(
                1,
                "prompts/get",
                json!({"name": "summary", "arguments": {}}),
            ),
        )
        .await;
    reply.error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_resource_is_invalid_params_naming_its_uri() {
    let server = Server::start().await;
    let reply = server
        .send(
            LAB,
            &rpc(1, "resources/read", json!({"uri": "lab://nowhere"})),
        )
        .await;
    let error = reply.error(-32602, 400);
    assert_eq!(error["data"]["uri"], "lab://nowhere");
    server.stop().await;
}

/// (The host/origin guard is the exception: it refuses before the body, and so the id, is read.)
#[actix_web::test]
async fn every_error_carries_the_request_id_when_the_body_had_one() {
    let server = Server::start().await;
    let id = "the-id-7";
    let call = |caps: Value| tool_call(id, "ask_form", json!({}), caps);
    let mut unsupported = rpc(id, "tools/list", json!({}));
    unsupported["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let replies = vec![
        server.send("nobody", &call(json!({}))).await,
        server.send(DEMO, &call(json!({}))).await,
        server
            .post(LAB, &call(json!({})))
            .without("mcp-method")
            .send()
            .await,
        server.send(LAB, &call(json!({}))).await,
        server
            .send(
                LAB,
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": {}}),
            )
            .await,
        server.send(LAB, &unsupported).await,
        server.send(LAB, &rpc(id, "ping", json!({}))).await,
        server
            .send(
                LAB,
                &json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": []}),
            )
            .await,
        server
            .send(
                LAB,
                &rpc(
                    id,
                    "tools/call",
                    json!({"name": "boom", "_meta": meta(json!({}))}),
                ),
            )
            .await,
    ];
    let codes: Vec<i64> = replies
        .iter()
        .map(|r| {
            assert_eq!(r.json()["id"], id, "{r:?}");
            r.json()["error"]["code"].as_i64().expect("an error")
        })
        .collect();
    assert_eq!(
        codes,
        [-31004, -31001, -32020, -32021, -32602, -32022, -32601, -32600, -32603]
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_tool_missing_its_argument_answers_with_a_tool_error_result() {
    let server = Server::start().await;
    let result = server
        .send(LAB, &tool_call(1, "needs_text", json!({}), json!({})))
        .await
        .result();
    assert_eq!(
        result["isError"], true,
        "bad input values are the tool's to report"
    );
    assert!(result["content"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("text")));
    server.stop().await;
}

#[actix_web::test]
async fn methods_of_capabilities_the_tenant_does_not_offer_are_not_found() {
    let server = Server::start().await;
    for body in [
        tool_call(1, "anything", json!({}), json!({})),
        rpc(2, "prompts/get", json!({"name": "anything"})),
        rpc(3, "resources/read", json!({"uri": "x://y"})),
        rpc(
            4,
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "a", "value": ""}}),
        ),
    ] {
        server.send(EMPTY, &body).await.error(-32601, 404);
    }
    server.stop().await;
}
