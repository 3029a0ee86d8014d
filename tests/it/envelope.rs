//! The per-request `_meta` envelope: what is required (-32602, HTTP 400), what is optional,
//! and version negotiation (-32022).

use serde_json::json;

use crate::support::{
    meta, rpc, Server, CLIENT_CAPABILITIES, CLIENT_INFO, LAB, PROTOCOL_VERSION, VERSION,
};

#[actix_web::test]
async fn a_request_without_meta_is_invalid_params_with_http_400() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}});
    server.send(LAB, &body).await.error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_request_without_params_is_invalid_params_with_http_400() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"});
    server.send(LAB, &body).await.error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_request_without_a_protocol_version_is_invalid_params_with_http_400() {
    let server = Server::start().await;
    let body = rpc(1, "tools/list", json!({"_meta": {CLIENT_CAPABILITIES: {}}}));
    server
        .post(LAB, &body)
        .header("mcp-protocol-version", VERSION)
        .send()
        .await
        .error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_request_without_client_capabilities_is_invalid_params_with_http_400() {
    let server = Server::start().await;
    let body = rpc(
        1,
        "tools/list",
        json!({"_meta": {PROTOCOL_VERSION: VERSION}}),
    );
    server.send(LAB, &body).await.error(-32602, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_request_without_client_info_is_served() {
    let server = Server::start().await;
    let body = rpc(
        1,
        "tools/list",
        json!({"_meta": {PROTOCOL_VERSION: VERSION, CLIENT_CAPABILITIES: {}}}),
    );
    assert!(body["params"]["_meta"].get(CLIENT_INFO).is_none());
    server.send(LAB, &body).await.result();
    server.stop().await;
}

#[actix_web::test]
async fn an_unsupported_version_in_header_and_meta_is_32022_naming_the_supported_ones() {
    let server = Server::start().await;
    for requested in ["1999-01-01", "2025-11-25", "2025-06-18", "v999.0.0"] {
        let mut body = rpc(1, "tools/list", json!({}));
        body["params"]["_meta"][PROTOCOL_VERSION] = json!(requested);
        let reply = server.send(LAB, &body).await;
        let error = reply.error(-32022, 400);
        assert_eq!(error["data"]["supported"], json!([VERSION]), "{reply:?}");
        assert_eq!(error["data"]["requested"], requested, "{reply:?}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn an_initialize_with_the_modern_envelope_is_method_not_found_naming_the_modern_versions() {
    // A modern client never begins a session: `initialize` sent as a modern request is a
    // removed method, and gets a modern error body rather than a session.
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "old", "version": "1"},
        "_meta": meta(json!({}))
    }});
    let reply = server
        .post(LAB, &body)
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "initialize")
        .send()
        .await;
    let error = reply.error(-32601, 404);
    assert_eq!(
        error["data"]["supported"],
        json!(["2026-07-28"]),
        "it names the versions served"
    );
    assert!(reply.header("mcp-session-id").is_none());
    server.stop().await;
}
