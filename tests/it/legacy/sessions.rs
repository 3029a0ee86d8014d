//! The legacy session itself: `initialize`, version negotiation and `Mcp-Session-Id`, the
//! session's own methods (`ping`, `logging/setLevel`, `resources/subscribe`), which era a
//! request belongs to, who may use a session and its lifetime (DELETE, idle expiry, the caps on
//! sessions and on a session's requests at once), its GET stream, and a call cancelled before
//! it sent anything. Shim flows appear only to hold requests open against the cap.

use std::time::Duration;

use awc::http::Method;
use serde_json::json;

use super::{accept_name, assert_accepted, error_of, leg_id, open_sse, UNKNOWN_SESSION};
use crate::support::legacy_client::{
    all_caps, legacy_call, legacy_rpc, LegacyStream, LEGACY_VERSION,
};
use crate::support::{rpc, tool_call, Server, ALICE, BOB, DEMO, LAB, LAB2};

// ---------------------------------------------------------------------------------------------
// The handshake and the session's own methods

#[actix_web::test]
async fn initialize_returns_the_negotiated_version_capabilities_server_info_and_a_visible_ascii_session_id(
) {
    let server = Server::start().await;
    let reply = server
        .initialize_reply(LAB, None, LEGACY_VERSION, all_caps())
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    assert!(reply.content_type().starts_with("application/json"));
    let body = reply.json();
    assert_eq!(body["id"], 0);
    let result = body["result"].as_object().expect("a result object");
    let mut keys: Vec<&str> = result.keys().map(String::as_str).collect();
    keys.sort_unstable();
    for key in &keys {
        assert!(
            [
                "capabilities",
                "instructions",
                "protocolVersion",
                "serverInfo"
            ]
            .contains(key),
            "unexpected key {key} in the InitializeResult: {body}"
        );
    }
    assert_eq!(result["protocolVersion"], LEGACY_VERSION);
    assert!(result["capabilities"].is_object());
    assert!(result["capabilities"].get("tools").is_some(), "{body}");
    assert_eq!(result["serverInfo"]["name"], "roundtrip-lab");
    assert!(result.get("resultType").is_none());

    let id = reply.header("mcp-session-id").expect("Mcp-Session-Id");
    assert_eq!(id.len(), 32, "{id}");
    assert!(
        id.bytes()
            .all(|b| (0x21..=0x7e).contains(&b) && b.is_ascii_hexdigit()),
        "a session id is visible ASCII (hex): {id}"
    );
    let other = server
        .initialize_reply(LAB, None, LEGACY_VERSION, all_caps())
        .await;
    assert_ne!(other.header("mcp-session-id"), Some(id), "ids differ");
    server.stop().await;
}

#[actix_web::test]
async fn initialize_keeps_a_served_legacy_version_and_answers_any_other_with_2025_11_25() {
    let server = Server::start().await;
    for (asked, got) in [
        ("2025-11-25", "2025-11-25"),
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2024-11-05", "2025-11-25"),
        ("1999-01-01", "2025-11-25"),
    ] {
        let reply = server.initialize_reply(LAB, None, asked, json!({})).await;
        assert_eq!(reply.status, 200, "{asked}: {reply:?}");
        assert_eq!(reply.json()["result"]["protocolVersion"], got, "{asked}");
        assert!(reply.header("mcp-session-id").is_some(), "{asked}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn initialize_with_the_modern_version_header_begins_no_session() {
    let server = Server::start().await;
    let reply = server
        .legacy_post(
            LAB,
            &legacy_rpc(
                0,
                "initialize",
                json!({
                    "protocolVersion": LEGACY_VERSION, "capabilities": {},
                    "clientInfo": {"name": "c", "version": "1"}
                }),
            ),
        )
        .header("mcp-protocol-version", "2026-07-28")
        .send_unchecked()
        .await;
    assert!(reply.header("mcp-session-id").is_none(), "{reply:?}");
    assert!(
        reply.json().get("error").is_some(),
        "a modern initialize is refused: {reply:?}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn the_version_header_if_sent_must_be_the_sessions_version() {
    let server = Server::start().await;
    let session = server
        .legacy_session_as(LAB, None, "2025-06-18", json!({}))
        .await;
    assert_eq!(session.version, "2025-06-18");
    // Its own version, and no header at all, are both fine.
    assert_eq!(session.ping().await.json()["result"], json!({}));
    let bare = session
        .post(&legacy_rpc(1, "ping", json!({})))
        .without("mcp-protocol-version")
        .send_unchecked()
        .await;
    assert_eq!(bare.status, 200, "{bare:?}");
    assert_eq!(bare.json()["result"], json!({}));
    let other = session
        .post(&legacy_rpc(2, "ping", json!({})))
        .header("mcp-protocol-version", "2025-11-25")
        .send_unchecked()
        .await;
    error_of(&other, -32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_version_header_without_a_session_is_400() {
    let server = Server::start().await;
    let reply = server
        .legacy_post(LAB, &legacy_rpc(1, "tools/list", json!({})))
        .header("mcp-protocol-version", LEGACY_VERSION)
        .send_unchecked()
        .await;
    error_of(&reply, -32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn ping_set_level_subscribe_and_unsubscribe_return_exactly_an_empty_object() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    for (id, method, params) in [
        (1, "ping", json!({})),
        (2, "logging/setLevel", json!({"level": "warning"})),
        (3, "resources/subscribe", json!({"uri": "lab://static"})),
        (4, "resources/unsubscribe", json!({"uri": "lab://static"})),
    ] {
        let reply = session.send(&legacy_rpc(id, method, params)).await;
        assert_eq!(reply.status, 200, "{method}: {reply:?}");
        let body = reply.json();
        assert_eq!(body["id"], id, "{method}");
        assert_eq!(body["result"], json!({}), "{method}: exactly {{}}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn legacy_results_have_no_result_type_while_a_modern_request_on_the_same_server_does() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let list = session
        .result(&legacy_rpc(1, "tools/list", json!({})))
        .await;
    assert!(list["tools"].as_array().is_some_and(|t| !t.is_empty()));
    assert!(list.get("resultType").is_none(), "{list}");
    assert!(
        list.get("ttlMs").is_none() && list.get("cacheScope").is_none(),
        "{list}"
    );
    let call = session.result(&legacy_call(2, "quiet", json!({}))).await;
    assert_eq!(call["content"][0]["text"], "quiet");
    assert!(call.get("resultType").is_none(), "{call}");

    let modern = server
        .send(LAB, &rpc(3, "tools/list", json!({})))
        .await
        .result();
    assert_eq!(modern["resultType"], "complete", "{modern}");
    let modern = server
        .send(LAB, &tool_call(4, "quiet", json!({}), json!({})))
        .await
        .result();
    assert_eq!(modern["resultType"], "complete", "{modern}");
    server.stop().await;
}

#[actix_web::test]
async fn a_json_rpc_error_answering_a_legacy_request_travels_with_http_200() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let reply = session
        .send(&legacy_call(9, "no_such_tool", json!({})))
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let body = reply.json();
    assert_eq!(body["id"], 9);
    assert!(body["error"]["code"].is_i64(), "{body}");
    server.stop().await;
}

#[actix_web::test]
async fn a_modern_request_carrying_a_session_id_is_served_statelessly() {
    let server = Server::start().await;
    // Form elicitation only: were the session consulted, the call would be refused (or
    // relayed); a modern request gets its own input-required result instead.
    let session = server.legacy_session(LAB, json!({})).await;
    let ask = tool_call(1, "ask_form", json!({}), json!({"elicitation": {}}));
    let reply = server
        .post(LAB, &ask)
        .header("mcp-session-id", &session.id)
        .send()
        .await;
    let result = reply.result();
    assert_eq!(result["resultType"], "input_required", "{reply:?}");
    assert!(result["inputRequests"]["form"].is_object(), "{reply:?}");
    assert!(reply.header("mcp-session-id").is_none());

    // An id nobody issued, and an ended one, change nothing either.
    for id in ["00000000000000000000000000000000", session.id.as_str()] {
        if id == session.id {
            assert_eq!(session.delete().await.status, 200);
        }
        let reply = server
            .post(LAB, &rpc(2, "tools/list", json!({})))
            .header("mcp-session-id", id)
            .send()
            .await;
        assert_eq!(reply.result()["resultType"], "complete", "{reply:?}");
    }
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Who may use a session, and its lifetime

#[actix_web::test]
async fn an_unknown_session_id_is_404_with_code_31005() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let unknown = session.with_id("0123456789abcdef0123456789abcdef");
    error_of(&unknown.ping().await, UNKNOWN_SESSION, 404);
    let answer = unknown.answer(&json!("roundtrip-1"), json!({})).await;
    error_of(&answer, UNKNOWN_SESSION, 404);
    let note = unknown
        .post(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .send_unchecked()
        .await;
    error_of(&note, UNKNOWN_SESSION, 404);
    assert_eq!(unknown.delete().await.status, 404);
    // The real one is untouched.
    assert_eq!(session.ping().await.json()["result"], json!({}));
    server.stop().await;
}

#[actix_web::test]
async fn a_session_is_404_on_another_tenant_and_for_another_principal() {
    let server = Server::start().await;
    let lab = server.legacy_session(LAB, json!({})).await;
    let elsewhere = lab.presented(LAB2, None);
    error_of(&elsewhere.ping().await, UNKNOWN_SESSION, 404);
    assert_eq!(elsewhere.delete().await.status, 404);

    let alices = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    let bobs_view = alices.presented(DEMO, Some(BOB));
    error_of(&bobs_view.ping().await, UNKNOWN_SESSION, 404);
    let list = bobs_view
        .send(&legacy_rpc(1, "tools/list", json!({})))
        .await;
    error_of(&list, UNKNOWN_SESSION, 404);
    assert_eq!(bobs_view.delete().await.status, 404);

    // Both sessions are still alive for their owners.
    assert_eq!(lab.ping().await.json()["result"], json!({}));
    assert_eq!(alices.ping().await.json()["result"], json!({}));
    server.stop().await;
}

#[actix_web::test]
async fn delete_ends_the_session_and_its_id_is_then_404() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    assert_eq!(session.delete().await.status, 200);
    error_of(&session.ping().await, UNKNOWN_SESSION, 404);
    assert_eq!(session.delete().await.status, 404);
    server.stop().await;
}

#[actix_web::test]
async fn get_and_delete_without_a_session_are_405() {
    let server = Server::start().await;
    for method in [Method::GET, Method::DELETE] {
        let reply = server
            .http(method.clone(), "/t/lab/mcp")
            .header("accept", "text/event-stream")
            .send_unchecked()
            .await;
        assert_eq!(reply.status, 405, "{method}: {reply:?}");
        assert_eq!(reply.header("allow"), Some("POST"), "{method}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn initialize_beyond_the_session_cap_is_503_with_code_31503() {
    let server = Server::start_with(|c| c.legacy.max_sessions = 2).await;
    let first = server.legacy_session(LAB, json!({})).await;
    let _second = server.legacy_session(LAB2, json!({})).await;
    let refused = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    error_of(&refused, -31503, 503);
    assert!(refused.header("mcp-session-id").is_none());
    // A session that ends makes room.
    assert_eq!(first.delete().await.status, 200);
    let again = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    assert_eq!(again.status, 200, "{again:?}");
    server.stop().await;
}

#[actix_web::test]
async fn one_caller_cannot_hold_more_than_its_share_of_sessions() {
    let server = Server::start_with(|c| c.legacy.max_sessions_per_caller = 2).await;
    let _a = server.legacy_session(LAB, json!({})).await;
    let _b = server.legacy_session(LAB, json!({})).await;
    let refused = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    let error = error_of(&refused, -31503, 503);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("caller")),
        "{error}"
    );
    // Another tenant's callers are not affected.
    let other = server
        .initialize_reply(LAB2, None, LEGACY_VERSION, json!({}))
        .await;
    assert_eq!(other.status, 200, "{other:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_session_runs_at_most_its_limit_of_requests_at_once() {
    let server = Server::start_with(|c| c.legacy.max_requests_per_session = 2).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut a = open_sse(&session, &legacy_call("a", "ask_form", json!({}))).await;
    let leg_a = a.next_request().await;
    let mut b = open_sse(&session, &legacy_call("b", "ask_form", json!({}))).await;
    b.next_request().await;

    let refused = session.send(&legacy_call("c", "ask_form", json!({}))).await;
    let error = error_of(&refused, -31429, 200);
    assert!(
        error["message"].as_str().is_some_and(|m| m.contains('2')),
        "{error}"
    );

    // A finished flow frees its place.
    assert_accepted(&session.answer(leg_id(&leg_a), accept_name("Ada")).await);
    assert_eq!(a.response().await["id"], "a");
    let mut c = open_sse(&session, &legacy_call("c", "ask_form", json!({}))).await;
    c.next_request().await;
    drop((b, c));
    server.stop().await;
}

#[actix_web::test]
async fn subscribing_to_a_resource_the_catalog_cannot_read_is_invalid_params() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let reply = session
        .send(&legacy_rpc(
            1,
            "resources/subscribe",
            json!({"uri": "lab://no-such-thing"}),
        ))
        .await;
    assert_eq!(reply.status, 200, "a legacy error answers with 200");
    assert_eq!(reply.json()["error"]["code"], -32602, "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn an_idle_session_expires_and_its_id_is_then_404() {
    let server = Server::start_with(|c| c.legacy.idle_timeout_secs = 1).await;
    let session = server.legacy_session(LAB, json!({})).await;
    assert_eq!(session.ping().await.json()["result"], json!({}));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    error_of(&session.ping().await, UNKNOWN_SESSION, 404);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The session's GET stream

async fn publish(server: &Server, list: &str) {
    server
        .send(
            LAB,
            &tool_call(100, "publish", json!({"list": list}), json!({})),
        )
        .await
        .result();
}

#[actix_web::test]
async fn the_get_stream_delivers_resources_updated_only_for_subscribed_uris() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let mut stream = session.listen().await;
    assert_eq!(stream.status, 200);
    assert!(stream.is_sse());
    let subscribed = session
        .result(&legacy_rpc(
            1,
            "resources/subscribe",
            json!({"uri": "lab://static"}),
        ))
        .await;
    assert_eq!(subscribed, json!({}));

    publish(&server, "lab://elsewhere").await;
    publish(&server, "lab://static").await;
    publish(&server, "tools").await;
    let first = stream.next().await.expect("the subscribed update");
    assert_eq!(
        first["method"], "notifications/resources/updated",
        "{first}"
    );
    assert_eq!(first["params"]["uri"], "lab://static");
    let second = stream.next().await.expect("the tools change");
    assert_eq!(
        second["method"], "notifications/tools/list_changed",
        "{second}"
    );

    // Unsubscribed: its updates stop.
    let unsubscribed = session
        .result(&legacy_rpc(
            2,
            "resources/unsubscribe",
            json!({"uri": "lab://static"}),
        ))
        .await;
    assert_eq!(unsubscribed, json!({}));
    publish(&server, "lab://static").await;
    publish(&server, "prompts").await;
    let third = stream.next().await.expect("the prompts change");
    assert_eq!(
        third["method"], "notifications/prompts/list_changed",
        "{third}"
    );
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Limits and edges found on a read-through

#[actix_web::test]
async fn a_session_never_used_after_initialize_expires_sooner_than_a_used_one() {
    let server = Server::start_with(|c| {
        c.legacy.idle_timeout_secs = 3600;
        c.legacy.unused_timeout_secs = 1;
    })
    .await;
    // A request after the handshake makes it used.
    let used = server.legacy_session(LAB, json!({})).await;
    assert_eq!(used.ping().await.json()["result"], json!({}));
    let bare = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    let unused = used.with_id(bare.header("mcp-session-id").expect("a session"));
    tokio::time::sleep(Duration::from_millis(2500)).await;
    error_of(&unused.ping().await, UNKNOWN_SESSION, 404);
    assert_eq!(used.ping().await.json()["result"], json!({}));
    server.stop().await;
}

#[actix_web::test]
async fn a_fifth_get_stream_replaces_the_oldest() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let mut first = session.listen().await;
    let mut others = Vec::new();
    for _ in 0..4 {
        others.push(session.listen().await);
    }
    // Keep-alives flow every 100 ms, so a stream left open would read on for ever.
    let ended = tokio::time::timeout(Duration::from_secs(5), first.next()).await;
    assert!(
        matches!(ended, Ok(None)),
        "the oldest stream ends when a fifth opens"
    );
    assert!(others.iter().all(LegacyStream::is_sse));
    server.stop().await;
}

#[actix_web::test]
async fn a_session_follows_at_most_256_resources() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let subscribe = |i: usize| {
        legacy_rpc(
            i,
            "resources/subscribe",
            json!({"uri": format!("lab://items/{i}")}),
        )
    };
    for i in 0..256 {
        assert_eq!(session.result(&subscribe(i)).await, json!({}), "{i}");
    }
    let refused = session.send(&subscribe(256)).await;
    assert_eq!(refused.json()["error"]["code"], -32602, "{refused:?}");
    assert_eq!(
        session.result(&subscribe(7)).await,
        json!({}),
        "following one already followed is no new subscription"
    );
    server.stop().await;
}

#[actix_web::test]
async fn bad_session_method_params_are_invalid_params() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    for (i, method, params) in [
        (1, "logging/setLevel", json!({"level": "loud"})),
        (2, "logging/setLevel", json!({})),
        (3, "resources/subscribe", json!({})),
        (4, "resources/unsubscribe", json!({"uri": 7})),
    ] {
        let reply = session.send(&legacy_rpc(i, method, params)).await;
        assert_eq!(reply.status, 200, "{method}");
        assert_eq!(reply.json()["error"]["code"], -32602, "{method}: {reply:?}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_call_cancelled_before_it_sent_anything_gets_an_empty_stream() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, json!({})).await;
    let call = legacy_call(5, "slow", json!({}));
    let (mut stream, cancelled) = tokio::join!(session.open(&call), async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        session.cancel(&json!(5)).await
    });
    assert_eq!(cancelled, 202);
    assert_eq!(stream.status, 200);
    assert!(
        stream.is_sse(),
        "a POSTed request is answered with a stream"
    );
    assert!(stream.next().await.is_none(), "and nothing on it");
    server.stop().await;
}
