//! Strict parsing: what two readers of one request could disagree on is refused, not picked.
//! Duplicate JSON members in the envelope and in `_meta`, capabilities that are not objects,
//! repeated `Host`, `Origin` and `Authorization` headers, authorities the host guard parses
//! rather than cuts, and a sealed state that a client's input grew past its cap.

use serde_json::{json, Value};

use crate::support::legacy_client::{initialize_request, LEGACY_VERSION};
use crate::support::{accept, meta, retry, rpc, tool_call, Server, ALICE, DEMO, LAB};

/// A `tools/list` with the `_meta` members written out, so that one can be repeated.
fn list_with_meta(meta_members: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{{"_meta":{{{meta_members}}}}}}}"#
    )
}

const META: &str = r#""io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}"#;

#[actix_web::test]
async fn a_repeated_method_is_an_invalid_request_that_keeps_the_id() {
    let server = Server::start().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/list","method":"tools/call","params":{{"_meta":{{{META}}}}}}}"#
    );
    let reply = server.raw(LAB, body).send().await;
    let error = reply.error(-32600, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("method")),
        "{error}"
    );
    assert_eq!(reply.json()["id"], 7);
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_id_is_an_invalid_request_answered_without_an_id() {
    let server = Server::start().await;
    let body = format!(
        r#"{{"jsonrpc":"2.0","id":7,"id":8,"method":"tools/list","params":{{"_meta":{{{META}}}}}}}"#
    );
    // Unchecked: the harness would expect the last id back, as a map reads it.
    let reply = server.raw(LAB, body).send_unchecked().await;
    assert_eq!(reply.status, 400);
    let response = reply.json();
    assert_eq!(response["error"]["code"], -32600, "{response}");
    assert!(response.get("id").is_none(), "{response}");
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_jsonrpc_or_params_member_is_an_invalid_request() {
    let server = Server::start().await;
    for body in [
        format!(
            r#"{{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"method":"tools/list","params":{{"_meta":{{{META}}}}}}}"#
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{{"_meta":{{{META}}}}},"params":{{}}}}"#
        ),
    ] {
        server.raw(LAB, body).send().await.error(-32600, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_member_of_meta_is_invalid_params() {
    let server = Server::start().await;
    let body = list_with_meta(&format!(
        r#"{META},"io.modelcontextprotocol/protocolVersion":"2025-11-25""#
    ));
    let reply = server.raw(LAB, body).send().await;
    let error = reply.error(-32602, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("_meta.io.modelcontextprotocol/protocolVersion")),
        "{error}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_meta_with_each_member_once_is_served() {
    let server = Server::start().await;
    let reply = server.raw(LAB, list_with_meta(META)).send().await;
    assert!(reply.result()["tools"].is_array(), "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_modern_capability_that_is_not_an_object_is_invalid_params() {
    let server = Server::start().await;
    let body = rpc(
        1,
        "tools/list",
        json!({"_meta": meta(json!({"elicitation": true}))}),
    );
    let error = server.send(LAB, &body).await.error(-32602, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.ends_with(".elicitation must be an object")),
        "{error}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_initialize_capability_that_is_not_an_object_is_invalid_params() {
    let server = Server::start().await;
    let init = initialize_request(LEGACY_VERSION, json!({"sampling": "yes"}));
    let reply = server.legacy_post(LAB, &init).send_unchecked().await;
    let response = reply.json();
    assert_eq!(response["error"]["code"], -32602, "{response}");
    assert_eq!(
        response["error"]["message"],
        "params.capabilities.sampling must be an object"
    );
    assert!(
        reply.header("mcp-session-id").is_none(),
        "no session is made"
    );
    server.stop().await;
}

/// A POST to `lab` with `name` sent twice: the JSON-RPC error, refused before the body is
/// read (so without an id; unchecked, since the harness would expect the body's id).
async fn twice(server: &Server, name: &str, first: &str, second: &str) -> Value {
    let reply = server
        .post(LAB, &rpc("r-1", "tools/list", json!({})))
        .header(name, first)
        .also(name, second)
        .send_unchecked()
        .await;
    assert_eq!(reply.status, 400, "{reply:?}");
    let response = reply.json();
    assert!(response.get("id").is_none(), "{response}");
    crate::support::assert_valid("JSONRPCErrorResponse", &response);
    assert_eq!(response["error"]["code"], -32600, "{response}");
    response["error"].clone()
}

#[actix_web::test]
async fn a_repeated_origin_or_authorization_header_is_refused_with_400() {
    let server = Server::start().await;
    for (name, first, second, shown) in [
        (
            "origin",
            "http://localhost",
            "http://evil.example.com",
            "Origin",
        ),
        ("authorization", "Bearer a", "Bearer b", "Authorization"),
    ] {
        let error = twice(&server, name, first, second).await;
        assert_eq!(error["message"], format!("Repeated {shown} header"));
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_host_header_is_refused_with_400() {
    // Over HTTP/1.1 actix-http's parser already answers a second `Host` with a bare 400; the
    // endpoint's own refusal (a JSON-RPC body) is for what reaches it otherwise.
    let server = Server::start().await;
    let reply = server
        .post(LAB, &rpc("r-1", "tools/list", json!({})))
        .header("host", "localhost")
        .also("host", "evil.example.com")
        .send_unchecked()
        .await;
    assert_eq!(reply.status, 400, "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_header_is_refused_even_when_both_values_agree() {
    let server = Server::start().await;
    twice(&server, "origin", "http://localhost", "http://localhost").await;
    server.stop().await;
}

#[actix_web::test]
async fn a_host_that_only_starts_with_the_ipv6_loopback_is_refused() {
    let server = Server::start().await;
    for host in [
        "[::1].evil.com",
        "[::1]:3000.evil.com",
        "localhost:80@evil.com",
    ] {
        let reply = server
            .post(LAB, &rpc("h-1", "tools/list", json!({})))
            .header("host", host)
            .send()
            .await;
        reply.error(-31003, 403);
    }
    server.stop().await;
}

#[actix_web::test]
async fn the_ipv6_loopback_with_a_port_is_allowed_in_host_and_origin() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &rpc("h-1", "tools/list", json!({})))
        .header("host", "[::1]:3000")
        .header("origin", "http://[::1]:3000")
        .send()
        .await;
    assert!(reply.result()["tools"].is_array(), "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_state_grown_past_the_cap_by_the_clients_answer_is_invalid_params_naming_the_cap() {
    let server = Server::start().await;
    let write = tool_call(
        1,
        "notes_write",
        json!({"name": "n", "text": "t"}),
        json!({}),
    );
    server.send_demo(&write).await.result();
    let delete = tool_call(
        2,
        "notes_delete",
        json!({"name": "n"}),
        json!({"elicitation": {}}),
    );
    let state = server.send_demo(&delete).await.state();
    // `notes_delete` carries the reason the user typed into its next state.
    let reason = "r".repeat(40_000);
    let confirm = json!({"confirm": accept(json!({"confirm": true, "reason": reason}))});
    let reply = server
        .post(DEMO, &retry(&delete, 3, confirm, Some(&state)))
        .bearer(ALICE)
        .send()
        .await;
    let error = reply.error(-32602, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("state.max_state_bytes (32768)")),
        "{error}"
    );
    assert_eq!(error["data"]["maxStateBytes"], 32_768);
    server.stop().await;
}
