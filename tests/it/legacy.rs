//! Legacy sessions (MCP 2025-11-25 and older) on the same endpoint: `initialize` and
//! `Mcp-Session-Id`, the session's own methods, its lifetime (DELETE, idle expiry, the cap),
//! who may use it, its GET stream, and the shim that relays a handler's input requests to the
//! client as real server-to-client requests on the call's own SSE stream.
//!
//! Every message the server sends in a session is checked against the committed 2025-11-25
//! schema by `support::legacy_client`.

use std::time::Duration;

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::lab;
use crate::support::legacy_client::{
    all_caps, check_legacy, legacy_call, legacy_rpc, LegacySession, LegacyStream, LEGACY_VERSION,
};
use crate::support::{rpc, tool_call, Probe, Reply, Server, ALICE, BOB, DEMO, LAB, LAB2};

/// The unknown-session code of a legacy request whose session is not (or no longer) live.
const UNKNOWN_SESSION: i64 = -31005;

/// A JSON reply carrying the JSON-RPC error `code` with HTTP `status`; the error object.
fn error_of(reply: &Reply, code: i64, status: u16) -> Value {
    assert_eq!(reply.status, status, "expected HTTP {status}: {reply:?}");
    let body = reply.json();
    assert_eq!(
        body["error"]["code"], code,
        "expected error {code}: {reply:?}"
    );
    body["error"].clone()
}

/// An answer the server refused: nobody waits for it (HTTP 400, -32600, no id).
fn assert_stray(reply: &Reply) {
    error_of(reply, -32600, 400);
    assert!(
        reply.json().get("id").is_none(),
        "a refused answer's error has no id: {reply:?}"
    );
}

/// The answer reached the flow waiting for it: 202, no body.
fn assert_accepted(reply: &Reply) {
    assert_eq!(reply.status, 202, "expected the answer accepted: {reply:?}");
    assert!(reply.body.is_empty(), "a 202 has no body: {reply:?}");
}

fn accept_name(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text},
        "model": "test-model", "stopReason": "endTurn"})
}

fn leg_id(leg: &Value) -> &Value {
    &leg["id"]
}

/// The `error.data.reason` of a final error response, after checking its code.
fn reason(response: &Value, code: i64) -> String {
    assert_eq!(response["error"]["code"], code, "{response}");
    response["error"]["data"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("a shim error names its reason: {response}"))
        .to_owned()
}

/// Opens a call's stream, which must be SSE since the handler asks first.
async fn open_sse(session: &LegacySession<'_>, body: &Value) -> LegacyStream {
    let stream = session.open(body).await;
    assert_eq!(stream.status, 200);
    assert!(
        stream.is_sse(),
        "a call whose handler asks for input gets an SSE stream"
    );
    stream
}

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
// The shim: one kind of input each

#[actix_web::test]
async fn a_form_elicitation_is_relayed_on_the_call_stream_and_the_handler_reruns_with_the_answer() {
    let server = Server::start().await;
    let session = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, all_caps())
        .await;
    let mut stream = open_sse(&session, &legacy_call(1, "greet", json!({}))).await;
    let leg = stream.next_request().await;
    assert_eq!(leg["method"], "elicitation/create");
    assert_eq!(leg["params"]["message"], "What is your name?");
    assert!(leg["params"]["requestedSchema"]["properties"]["name"].is_object());
    assert!(leg["params"].get("elicitationId").is_none(), "{leg}");
    assert_accepted(&session.answer(leg_id(&leg), accept_name("Ada")).await);
    let response = stream.response().await;
    assert_eq!(response["id"], 1);
    assert_eq!(response["result"]["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}

#[actix_web::test]
async fn answers_and_state_a_legacy_client_puts_in_its_call_never_reach_the_handler() {
    // Only the runtime feeds a handler answers and state on a legacy session: a forged
    // `inputResponses` or unsealed `requestState` in the call is ignored, so the handler asks.
    let server = Server::start().await;
    let session = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, all_caps())
        .await;
    let mut call = legacy_call(1, "greet", json!({}));
    call["params"]["inputResponses"] = json!({"user_name": accept_name("Mallory")});
    call["params"]["requestState"] = json!("forged-state");
    let mut stream = open_sse(&session, &call).await;
    let leg = stream.next_request().await;
    assert_eq!(
        leg["method"], "elicitation/create",
        "the handler asked: {leg}"
    );
    assert_accepted(&session.answer(leg_id(&leg), accept_name("Ada")).await);
    let response = stream.response().await;
    assert_eq!(response["result"]["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}

#[actix_web::test]
async fn a_url_elicitation_is_relayed_with_an_elicitation_id() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_url", json!({}))).await;
    let leg = stream.next_request().await;
    assert_eq!(leg["method"], "elicitation/create");
    assert_eq!(leg["params"]["mode"], "url");
    assert_eq!(leg["params"]["url"], "https://example.com/authorize");
    let elicitation_id = leg["params"]["elicitationId"]
        .as_str()
        .unwrap_or_else(|| panic!("a URL elicitation has an elicitationId: {leg}"));
    assert!(!elicitation_id.is_empty());
    assert_accepted(
        &session
            .answer(leg_id(&leg), json!({"action": "accept"}))
            .await,
    );
    let response = stream.response().await;
    assert_eq!(
        response["result"]["structuredContent"]["answers"]["login"]["action"],
        "accept"
    );
    server.stop().await;
}

#[actix_web::test]
async fn sampling_is_relayed_as_sampling_create_message() {
    let server = Server::start().await;
    let session = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, all_caps())
        .await;
    let write = session
        .result(&legacy_call(
            1,
            "notes_write",
            json!({"name": "todo", "text": "Buy milk. Call Bob."}),
        ))
        .await;
    assert_ne!(write["isError"], true, "{write}");
    let mut stream = open_sse(
        &session,
        &legacy_call(2, "notes_summarize", json!({"name": "todo"})),
    )
    .await;
    let leg = stream.next_request().await;
    assert_eq!(leg["method"], "sampling/createMessage");
    assert_eq!(leg["params"]["maxTokens"], 200);
    assert!(leg["params"]["messages"][0]["content"]["text"]
        .as_str()
        .is_some_and(|t| t.contains("Buy milk")));
    assert_accepted(
        &session
            .answer(leg_id(&leg), sampled("Errands: milk and Bob."))
            .await,
    );
    let response = stream.response().await;
    assert_eq!(
        response["result"]["content"][0]["text"],
        "Summary of 'todo': Errands: milk and Bob."
    );
    server.stop().await;
}

#[actix_web::test]
async fn roots_are_relayed_as_roots_list_for_a_resource_read() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let read = legacy_rpc(1, "resources/read", json!({"uri": "lab://roots"}));
    let mut stream = open_sse(&session, &read).await;
    let leg = stream.next_request().await;
    assert_eq!(leg["method"], "roots/list");
    let roots = json!([{"uri": "file:///home/ada/project", "name": "project"}]);
    assert_accepted(&session.answer(leg_id(&leg), json!({"roots": roots})).await);
    let response = stream.response().await;
    let text = response["result"]["contents"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("the roots as text: {response}"));
    let got: Value = serde_json::from_str(text).expect("JSON roots");
    assert_eq!(got, roots);
    server.stop().await;
}

#[actix_web::test]
async fn a_prompt_that_asks_a_form_is_relayed_too() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let get = legacy_rpc(1, "prompts/get", json!({"name": "ask_form"}));
    let mut stream = open_sse(&session, &get).await;
    let leg = stream.next_request().await;
    assert_eq!(leg["method"], "elicitation/create");
    assert_accepted(&session.answer(leg_id(&leg), accept_name("Ada")).await);
    let response = stream.response().await;
    assert_eq!(response["result"]["description"], "answered");
    server.stop().await;
}

#[actix_web::test]
async fn all_legs_of_a_round_are_sent_before_any_is_answered() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_several", json!({}))).await;
    let mut legs = Vec::new();
    for _ in 0..4 {
        legs.push(stream.next_request().await);
    }
    let mut methods: Vec<&str> = legs
        .iter()
        .map(|l| l["method"].as_str().expect("a method"))
        .collect();
    methods.sort_unstable();
    assert_eq!(
        methods,
        [
            "elicitation/create",
            "elicitation/create",
            "roots/list",
            "sampling/createMessage"
        ]
    );
    let mut ids: Vec<&str> = legs.iter().map(|l| l["id"].as_str().expect("id")).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 4, "leg ids are unique in the session: {legs:?}");
    for leg in &legs {
        let answer = match leg["method"].as_str() {
            Some("roots/list") => json!({"roots": []}),
            Some("sampling/createMessage") => sampled("hi"),
            _ if leg["params"]["mode"] == "url" => json!({"action": "accept"}),
            _ => accept_name("Ada"),
        };
        assert_accepted(&session.answer(leg_id(leg), answer).await);
    }
    let response = stream.response().await;
    let answers = &response["result"]["structuredContent"]["answers"];
    assert_eq!(answers["form"]["content"]["name"], "Ada", "{response}");
    assert_eq!(answers["login"]["action"], "accept");
    assert_eq!(answers["llm"]["content"]["text"], "hi");
    assert_eq!(answers["roots"]["roots"], json!([]));
    assert_eq!(response["result"]["structuredContent"]["round"], 1);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// The shim: flows of several rounds, and how they end

#[actix_web::test]
async fn a_three_round_flow_relays_each_round_on_the_same_stream() {
    let server = Server::start().await;
    let session = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, all_caps())
        .await;
    session
        .result(&legacy_call(
            1,
            "notes_write",
            json!({"name": "old", "text": "stale"}),
        ))
        .await;
    let mut stream = open_sse(
        &session,
        &legacy_call(2, "notes_delete", json!({"name": "old"})),
    )
    .await;
    let confirm = stream.next_request().await;
    assert_eq!(confirm["method"], "elicitation/create");
    assert!(confirm["params"]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("Delete note 'old'")));
    assert_accepted(
        &session
            .answer(
                leg_id(&confirm),
                json!({"action": "accept", "content": {"confirm": true, "reason": "obsolete"}}),
            )
            .await,
    );
    let retype = stream.next_request().await;
    assert_ne!(retype["id"], confirm["id"]);
    assert!(retype["params"]["message"]
        .as_str()
        .is_some_and(|m| m.starts_with("Type the note's name")));
    assert_accepted(&session.answer(leg_id(&retype), accept_name("old")).await);
    let response = stream.response().await;
    assert_eq!(
        response["result"]["content"][0]["text"],
        "Deleted note 'old'. Reason: obsolete"
    );
    let list = session
        .result(&legacy_call(3, "notes_list", json!({})))
        .await;
    assert_eq!(list["structuredContent"]["names"], json!([]));
    server.stop().await;
}

#[actix_web::test]
async fn a_flow_that_never_stops_asking_ends_at_the_round_cap() {
    let server = Server::start_with(|c| c.mcp.max_rounds = 3).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_forever", json!({}))).await;
    let mut legs = 0;
    let mut ids = std::collections::HashSet::new();
    let response = loop {
        let message = stream.next().await.expect("a leg or the response");
        if message.get("method").is_none() {
            assert!(stream.next().await.is_none());
            break message;
        }
        legs += 1;
        assert!(
            ids.insert(message["id"].clone()),
            "leg ids are unique: {message}"
        );
        assert_accepted(&session.answer(leg_id(&message), accept_name("again")).await);
    };
    assert_eq!(legs, 3, "one leg per allowed round");
    assert_eq!(reason(&response, -32603), "round_limit");
    assert_eq!(response["error"]["data"]["maxRounds"], 3);
    server.stop().await;
}

#[actix_web::test]
async fn an_unanswered_leg_times_out_and_is_cancelled_on_the_stream() {
    let server = Server::start_with(|c| c.legacy.leg_timeout_secs = 1).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_form", json!({}))).await;
    let leg = stream.next_request().await;
    let cancelled = stream.next().await.expect("the leg's cancellation");
    assert_eq!(
        cancelled["method"], "notifications/cancelled",
        "{cancelled}"
    );
    assert_eq!(cancelled["params"]["requestId"], leg["id"]);
    let response = stream.response().await;
    assert_eq!(reason(&response, -32603), "leg_timeout");
    // The leg is forgotten: a late answer is a stray.
    assert_stray(&session.answer(leg_id(&leg), accept_name("late")).await);
    server.stop().await;
}

#[actix_web::test]
async fn a_client_error_on_a_leg_ends_the_flow_with_client_error() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_form", json!({}))).await;
    let leg = stream.next_request().await;
    let client_error = json!({"code": -1, "message": "The user closed the dialog"});
    assert_accepted(
        &session
            .answer_error(leg_id(&leg), client_error.clone())
            .await,
    );
    let response = stream.response().await;
    assert_eq!(reason(&response, -32603), "client_error");
    assert_eq!(response["error"]["data"]["clientError"], client_error);
    server.stop().await;
}

#[actix_web::test]
async fn notifications_cancelled_stops_the_flow_and_a_later_answer_is_stray() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(7, "ask_form", json!({}))).await;
    let leg = stream.next_request().await;
    assert_eq!(session.cancel(&json!(7)).await, 202);
    let withdrawn = stream.next().await.expect("the leg is withdrawn");
    assert_eq!(
        withdrawn["method"], "notifications/cancelled",
        "{withdrawn}"
    );
    assert_eq!(withdrawn["params"]["requestId"], leg["id"]);
    assert!(
        stream.next().await.is_none(),
        "a cancelled flow's stream ends without a response"
    );
    assert_stray(&session.answer(leg_id(&leg), accept_name("late")).await);
    // The session lives on.
    assert_eq!(session.ping().await.json()["result"], json!({}));
    server.stop().await;
}

#[actix_web::test]
async fn closing_the_call_stream_forgets_its_pending_legs() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_form", json!({}))).await;
    let leg = stream.next_request().await;
    drop(stream);
    // The server notices at its next write (keep-alives every 100 ms in tests).
    tokio::time::sleep(Duration::from_millis(1000)).await;
    assert_stray(&session.answer(leg_id(&leg), accept_name("late")).await);
    // The session and its next flow are unaffected.
    let mut again = open_sse(&session, &legacy_call(2, "ask_form", json!({}))).await;
    let leg2 = again.next_request().await;
    assert_ne!(leg2["id"], leg["id"]);
    assert_accepted(&session.answer(leg_id(&leg2), accept_name("Ada")).await);
    let response = again.response().await;
    assert_eq!(
        response["result"]["structuredContent"]["answers"]["form"]["content"]["name"],
        "Ada"
    );
    server.stop().await;
}

#[actix_web::test]
async fn deleting_the_session_mid_flow_ends_the_flow_and_the_id_is_then_404() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_form", json!({}))).await;
    let leg = stream.next_request().await;
    assert_eq!(session.delete().await.status, 200);
    // The flow ends: the stream closes, with no result; if the flow says why, it names the
    // shim's reason for a session that ended under it.
    let mut messages = Vec::new();
    while let Some(message) = stream.next().await {
        messages.push(message);
    }
    assert!(messages.len() <= 1, "at most a final error: {messages:?}");
    if let Some(last) = messages.first() {
        assert!(
            last.get("result").is_none(),
            "a deleted session's flow has no result: {last}"
        );
        assert_eq!(
            last["error"]["data"]["reason"], "session_ended",
            "a flow ended by DELETE says so (error.data.reason = session_ended): {last}"
        );
    }
    error_of(&session.ping().await, UNKNOWN_SESSION, 404);
    let late = session.answer(leg_id(&leg), accept_name("late")).await;
    assert_ne!(late.status, 202, "{late:?}");
    error_of(&late, UNKNOWN_SESSION, 404);
    server.stop().await;
}

#[actix_web::test]
async fn missing_session_capabilities_refuse_the_call_before_any_leg_with_32021_naming_them() {
    let server = Server::start().await;
    // Form elicitation only (a bare `elicitation`).
    let session = server.legacy_session(LAB, json!({"elicitation": {}})).await;
    let mut stream = session
        .open(&legacy_call(1, "ask_several", json!({})))
        .await;
    assert_eq!(
        stream.status, 200,
        "an error answering a legacy request is HTTP 200"
    );
    assert!(!stream.is_sse(), "no leg was sent, so no stream was opened");
    let response = stream.next().await.expect("the error");
    assert!(stream.next().await.is_none());
    assert_eq!(reason(&response, -32021), "missing_capabilities");
    let required = &response["error"]["data"]["requiredCapabilities"];
    assert!(required.get("sampling").is_some(), "{response}");
    assert!(required.get("roots").is_some(), "{response}");
    assert!(required["elicitation"].get("url").is_some(), "{response}");
    assert!(
        required["elicitation"].get("form").is_none(),
        "form was declared: {response}"
    );
    let message = response["error"]["message"].as_str().expect("a message");
    for name in ["sampling", "roots", "elicitation.url"] {
        assert!(
            message.contains(name),
            "the message names {name}: {message}"
        );
    }
    // Nothing was registered for the client to answer.
    assert_stray(
        &session
            .answer(&json!("roundtrip-1"), accept_name("x"))
            .await,
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_with_the_shim_off_refuses_input_required_with_shim_disabled() {
    let server = Server::start().await;
    server.add_tenant_without_shim("noshim", lab::catalog(&Probe::default()));
    let session = server.legacy_session("noshim", all_caps()).await;
    let mut stream = session.open(&legacy_call(1, "ask_form", json!({}))).await;
    assert_eq!(stream.status, 200);
    let response = stream.next().await.expect("the refusal");
    assert!(stream.next().await.is_none());
    assert_eq!(reason(&response, -32603), "shim_disabled");
    // Calls that need no input still work.
    let quiet = session.result(&legacy_call(2, "quiet", json!({}))).await;
    assert_eq!(quiet["content"][0]["text"], "quiet");
    server.stop().await;
}

#[actix_web::test]
async fn two_concurrent_flows_on_one_session_do_not_cross() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut a = open_sse(&session, &legacy_call("a", "ask_form", json!({}))).await;
    let leg_a = a.next_request().await;
    let mut b = open_sse(&session, &legacy_call("b", "ask_form", json!({}))).await;
    let leg_b = b.next_request().await;
    assert_ne!(leg_a["id"], leg_b["id"]);
    // Answered in the other order.
    assert_accepted(&session.answer(leg_id(&leg_b), accept_name("Bea")).await);
    let response_b = b.response().await;
    assert_accepted(&session.answer(leg_id(&leg_a), accept_name("Ada")).await);
    let response_a = a.response().await;
    let name =
        |r: &Value| r["result"]["structuredContent"]["answers"]["form"]["content"]["name"].clone();
    assert_eq!(response_a["id"], "a");
    assert_eq!(name(&response_a), "Ada", "{response_a}");
    assert_eq!(response_b["id"], "b");
    assert_eq!(name(&response_b), "Bea", "{response_b}");
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
async fn a_stray_and_a_duplicate_answer_are_400_and_leave_the_flow_alone() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_form", json!({}))).await;
    let leg = stream.next_request().await;
    assert_stray(
        &session
            .answer(&json!("roundtrip-999"), accept_name("Eve"))
            .await,
    );
    assert_accepted(&session.answer(leg_id(&leg), accept_name("Ada")).await);
    assert_stray(&session.answer(leg_id(&leg), accept_name("Eve")).await);
    let response = stream.response().await;
    assert_eq!(
        response["result"]["structuredContent"]["answers"]["form"]["content"]["name"],
        "Ada"
    );
    server.stop().await;
}

/// The checks themselves: a legacy check that accepted everything would make every test pass.
#[test]
fn the_legacy_check_rejects_modern_only_fields_and_bad_leg_ids() {
    let call = legacy_call(1, "quiet", json!({}));
    check_legacy(
        Some(&call),
        &json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
    );
    for bad in [
        json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "resultType": "complete"}}),
        json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}),
        json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"}),
        json!({"jsonrpc": "2.0", "id": "roundtrip-1", "method": "elicitation/create", "params": {}}),
    ] {
        let outcome = std::panic::catch_unwind(|| check_legacy(Some(&call), &bad));
        assert!(outcome.is_err(), "the legacy check accepted {bad}");
    }
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
    // `legacy_session` finishes the handshake with notifications/initialized: used.
    let used = server.legacy_session(LAB, json!({})).await;
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
async fn a_call_that_cannot_read_sse_gets_no_stream_instead_of_legs() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let req = session
        .post(&legacy_call(1, "ask_form", json!({})))
        .header("accept", "application/json");
    let mut stream = LegacyStream::open(req).await;
    assert!(!stream.is_sse());
    let response = stream.next().await.expect("the error");
    assert_eq!(reason(&response, -32603), "no_stream");
    server.stop().await;
}

#[actix_web::test]
async fn a_failed_round_withdraws_the_legs_still_open_at_the_client() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = open_sse(&session, &legacy_call(1, "ask_several", json!({}))).await;
    let mut legs = Vec::new();
    for _ in 0..4 {
        legs.push(stream.next_request().await);
    }
    let error = json!({"code": -1, "message": "no"});
    assert_accepted(&session.answer_error(leg_id(&legs[0]), error).await);
    let mut withdrawn = Vec::new();
    let response = loop {
        let message = stream.next().await.expect("a message");
        if message["method"] == "notifications/cancelled" {
            withdrawn.push(message["params"]["requestId"].clone());
        } else {
            break message;
        }
    };
    assert_eq!(reason(&response, -32603), "client_error");
    let mut expected: Vec<Value> = legs[1..].iter().map(|l| l["id"].clone()).collect();
    expected.sort_by_key(Value::to_string);
    withdrawn.sort_by_key(Value::to_string);
    assert_eq!(
        withdrawn, expected,
        "the three unanswered legs are withdrawn"
    );
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
