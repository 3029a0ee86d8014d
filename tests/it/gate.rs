//! The capability gate: an input request is sent only if **this** request declared the
//! capability it needs; otherwise -32021 (HTTP 400) with `data.requiredCapabilities` naming
//! exactly what is missing, merged.

use serde_json::{json, Value};

use crate::support::{retry, tool_call, Server, LAB};

/// Calls `tool` declaring `caps` and returns `data.requiredCapabilities` of the -32021, or
/// `None` when the request was served.
async fn missing(server: &Server, tool: &str, caps: Value) -> Option<Value> {
    let reply = server
        .send(LAB, &tool_call("g", tool, json!({}), caps.clone()))
        .await;
    if reply.status == 200 {
        let result = reply.result();
        assert_eq!(result["resultType"], "input_required", "{reply:?}");
        return None;
    }
    let error = reply.error(-32021, 400);
    Some(error["data"]["requiredCapabilities"].clone())
}

#[actix_web::test]
async fn form_elicitation_needs_elicitation_or_elicitation_form() {
    let server = Server::start().await;
    let need = Some(json!({"elicitation": {"form": {}}}));
    assert_eq!(missing(&server, "ask_form", json!({})).await, need);
    assert_eq!(
        missing(&server, "ask_form", json!({"sampling": {}, "roots": {}})).await,
        need
    );
    assert_eq!(
        missing(&server, "ask_form", json!({"elicitation": {"url": {}}})).await,
        need
    );
    assert_eq!(
        missing(&server, "ask_form", json!({"elicitation": {}})).await,
        None
    );
    assert_eq!(
        missing(&server, "ask_form", json!({"elicitation": {"form": {}}})).await,
        None
    );
    assert_eq!(
        missing(
            &server,
            "ask_form",
            json!({"elicitation": {"form": {}, "url": {}}})
        )
        .await,
        None
    );
    server.stop().await;
}

#[actix_web::test]
async fn url_elicitation_needs_elicitation_url_and_a_bare_elicitation_does_not_allow_it() {
    let server = Server::start().await;
    let need = Some(json!({"elicitation": {"url": {}}}));
    assert_eq!(missing(&server, "ask_url", json!({})).await, need);
    assert_eq!(
        missing(&server, "ask_url", json!({"elicitation": {}})).await,
        need
    );
    assert_eq!(
        missing(&server, "ask_url", json!({"elicitation": {"form": {}}})).await,
        need
    );
    assert_eq!(
        missing(&server, "ask_url", json!({"elicitation": {"url": {}}})).await,
        None
    );
    server.stop().await;
}

#[actix_web::test]
async fn sampling_needs_sampling() {
    let server = Server::start().await;
    assert_eq!(
        missing(&server, "ask_sampling", json!({"elicitation": {}})).await,
        Some(json!({"sampling": {}}))
    );
    assert_eq!(
        missing(&server, "ask_sampling", json!({"sampling": {}})).await,
        None
    );
    server.stop().await;
}

#[actix_web::test]
async fn sampling_with_tools_needs_sampling_tools() {
    let server = Server::start().await;
    let need = Some(json!({"sampling": {"tools": {}}}));
    assert_eq!(
        missing(&server, "ask_sampling_tools", json!({})).await,
        need
    );
    assert_eq!(
        missing(&server, "ask_sampling_tools", json!({"sampling": {}})).await,
        need
    );
    assert_eq!(
        missing(
            &server,
            "ask_sampling_tools",
            json!({"sampling": {"context": {}}})
        )
        .await,
        need
    );
    assert_eq!(
        missing(
            &server,
            "ask_sampling_tools",
            json!({"sampling": {"tools": {}}})
        )
        .await,
        None
    );
    server.stop().await;
}

#[actix_web::test]
async fn roots_list_needs_roots() {
    let server = Server::start().await;
    assert_eq!(
        missing(&server, "ask_roots", json!({"elicitation": {}})).await,
        Some(json!({"roots": {}}))
    );
    assert_eq!(
        missing(&server, "ask_roots", json!({"roots": {}})).await,
        None
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_tool_asking_for_several_kinds_gets_every_missing_capability_merged() {
    let server = Server::start().await;
    assert_eq!(
        missing(&server, "ask_several", json!({})).await,
        Some(json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}))
    );
    assert_eq!(
        missing(
            &server,
            "ask_several",
            json!({"elicitation": {}, "roots": {}})
        )
        .await,
        Some(json!({"elicitation": {"url": {}}, "sampling": {}}))
    );
    assert_eq!(
        missing(
            &server,
            "ask_several",
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
        )
        .await,
        None
    );
    server.stop().await;
}

#[actix_web::test]
async fn capabilities_declared_on_an_earlier_request_do_not_count() {
    let server = Server::start().await;
    let first = tool_call(1, "ask_form", json!({}), json!({"elicitation": {}}));
    let state = server.send(LAB, &first).await.state();

    // The retry declares nothing and answers nothing: asking again needs the capability.
    let mut again = retry(&first, 2, json!({}), Some(&state));
    again["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let reply = server.send(LAB, &again).await;
    assert_eq!(
        reply.error(-32021, 400)["data"]["requiredCapabilities"],
        json!({"elicitation": {"form": {}}})
    );

    // A fresh request on the same connection is judged on its own declaration too.
    assert_eq!(
        missing(&server, "ask_form", json!({})).await,
        Some(json!({"elicitation": {"form": {}}}))
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_retry_that_completes_needs_no_capability() {
    // The gate guards what is sent; a retry that asks for nothing more is served whatever it
    // declares.
    let server = Server::start().await;
    let first = tool_call(1, "ask_form", json!({}), json!({"elicitation": {}}));
    let state = server.send(LAB, &first).await.state();
    let mut done = retry(
        &first,
        2,
        json!({"form": {"action": "accept", "content": {"name": "Ada"}}}),
        Some(&state),
    );
    done["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] = json!({});
    let result = server.send(LAB, &done).await.result();
    assert_eq!(result["resultType"], "complete");
    server.stop().await;
}

#[actix_web::test]
async fn sampling_with_server_context_needs_sampling_context() {
    let server = Server::start().await;
    let missing = server
        .send(
            LAB,
            &tool_call(
                1,
                "ask_sampling_context",
                json!({}),
                json!({"sampling": {}}),
            ),
        )
        .await;
    assert_eq!(
        missing.error(-32021, 400)["data"]["requiredCapabilities"],
        json!({"sampling": {"context": {}}})
    );
    let declared = server
        .send(
            LAB,
            &tool_call(
                2,
                "ask_sampling_context",
                json!({}),
                json!({"sampling": {"context": {}}}),
            ),
        )
        .await;
    assert_eq!(declared.result()["resultType"], "input_required");
    server.stop().await;
}

#[actix_web::test]
async fn a_gate_error_after_progress_keeps_its_http_400() {
    let server = Server::start().await;
    let mut call = tool_call(1, "progress_then_ask", json!({}), json!({}));
    call["params"]["_meta"]["progressToken"] = json!("p");
    let reply = server.send(LAB, &call).await;
    assert!(
        reply.content_type().starts_with("application/json"),
        "{reply:?}"
    );
    reply.error(-32021, 400);
    server.stop().await;
}
