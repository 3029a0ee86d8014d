//! The legacy shim: a handler's input requests relayed to the session's client as real
//! server-to-client requests (legs) on the call's own SSE stream, one kind of input each and
//! several at once; answers POSTed back, rounds until the handler completes or the round cap,
//! leg timeouts, client errors, cancellation, strays and duplicates; and the refusals
//! (`missing_capabilities`, `shim_disabled`, `no_stream`) that answer a call without a leg.

use std::time::Duration;

use serde_json::{json, Value};

use super::{accept_name, assert_accepted, error_of, leg_id, open_sse, UNKNOWN_SESSION};
use crate::support::lab;
use crate::support::legacy_client::{
    all_caps, legacy_call, legacy_rpc, LegacyStream, LEGACY_VERSION,
};
use crate::support::{Probe, Reply, Server, ALICE, DEMO, LAB};

/// An answer the server refused: nobody waits for it (HTTP 400, -32600, no id).
fn assert_stray(reply: &Reply) {
    error_of(reply, -32600, 400);
    assert!(
        reply.json().get("id").is_none(),
        "a refused answer's error has no id: {reply:?}"
    );
}

fn sampled(text: &str) -> Value {
    json!({"role": "assistant", "content": {"type": "text", "text": text},
        "model": "test-model", "stopReason": "endTurn"})
}

/// The `error.data.reason` of a final error response, after checking its code.
fn reason(response: &Value, code: i64) -> String {
    assert_eq!(response["error"]["code"], code, "{response}");
    response["error"]["data"]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("a shim error names its reason: {response}"))
        .to_owned()
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
    // The server notices at its next writes (keep-alives every 100 ms in tests): a few of
    // them, however late a loaded machine runs the server's timers (1 s was once too short
    // with the whole suite running on two CPUs).
    tokio::time::sleep(Duration::from_millis(3000)).await;
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
    server
        .add_tenant_without_shim("noshim", lab::catalog(&Probe::default()))
        .await;
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

// ---------------------------------------------------------------------------------------------
// Limits and edges found on a read-through

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
