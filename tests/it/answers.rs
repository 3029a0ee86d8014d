//! Elicitation answers are checked against the `requestedSchema` that asked for them, before
//! the handler runs again, on both eras: on a modern retry against the schemas sealed in
//! `requestState`, on a legacy session against the requests the shim sent. A mismatch is
//! -32602 naming the input key (HTTP 400 on the modern wire, 200 on a legacy session, where it
//! ends the flow), and the handler never sees the answer.

use std::sync::{Arc, Mutex};

use roundtrip_runtime::handler::{
    fn_tool, Catalog, Context, InputRequired, ToolDescriptor, ToolOutcome,
};
use roundtrip_runtime::protocol::result::CallToolResult;
use serde_json::{json, Value};

use crate::support::legacy_client::{all_caps, legacy_call, LegacySession, LegacyStream};
use crate::support::{accept, retry, tool_call, Reply, Server};

/// The tenant these tests add, with the one tool `ask_profile`.
const TENANT: &str = "answers";
const KEY: &str = "profile";

/// Every content `ask_profile` was run with, in order.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<Value>>>);

impl Seen {
    fn contents(&self) -> Vec<Value> {
        self.0.lock().expect("not poisoned").clone()
    }

    /// The handler never ran with an answer.
    fn assert_nothing(&self) {
        let contents = self.contents();
        assert!(contents.is_empty(), "the handler saw {contents:?}");
    }
}

fn profile_schema() -> Value {
    json!({"type": "object", "properties": {
        "name": {"type": "string", "minLength": 1},
        "age": {"type": "integer", "minimum": 0},
        "color": {"type": "string", "enum": ["red", "green"]},
        "toppings": {"type": "array", "items": {"type": "string", "enum": ["cheese", "ham"]}},
    }, "required": ["name"]})
}

/// Asks the profile form; once answered, records what it got and returns it as text.
fn ask_profile(ctx: &Context, seen: &Seen) -> ToolOutcome {
    let Some(answer) = ctx.input_response(KEY) else {
        return InputRequired::new()
            .elicit(KEY, "Your profile?", profile_schema())
            .into();
    };
    let content = answer
        .accepted_content()
        .map_or(Value::Null, |c| Value::Object(c.clone()));
    seen.0.lock().expect("not poisoned").push(content.clone());
    CallToolResult::text(content.to_string()).into()
}

/// A server with the `answers` tenant, and what its tool sees.
async fn server() -> (Server, Seen) {
    let server = Server::start().await;
    let seen = Seen::default();
    let tool_seen = seen.clone();
    let catalog = Catalog::builder()
        .tool(fn_tool(
            ToolDescriptor::new(
                "ask_profile",
                "Asks a profile form.",
                json!({"type": "object"}),
            ),
            move |ctx, _args| {
                let seen = tool_seen.clone();
                async move { ask_profile(&ctx, &seen) }
            },
        ))
        .build();
    server.add_tenant(TENANT, catalog).await;
    (server, seen)
}

fn first_round() -> Value {
    tool_call(1, "ask_profile", json!({}), json!({"elicitation": {}}))
}

/// Round 1, then the retry answering the profile form with `answer`.
async fn retry_with(server: &Server, answers: Value) -> Reply {
    let first = first_round();
    let state = server.send(TENANT, &first).await.state();
    server
        .send(TENANT, &retry(&first, 2, answers, Some(&state)))
        .await
}

/// Each mismatch is -32602 (HTTP 400) whose message names the key and the field, and the
/// handler never runs with it: a string where an array is wanted, a value outside an enum, a
/// required field missing.
#[actix_web::test]
async fn a_mismatching_answer_is_refused_naming_the_key_before_the_handler_runs() {
    let (server, seen) = server().await;
    for (content, message) in [
        (
            json!({"name": "Ada", "toppings": "cheese"}),
            "inputResponses.profile: field 'toppings' must be an array",
        ),
        (
            json!({"name": "Ada", "color": "blue"}),
            "inputResponses.profile: field 'color' must be one of the schema's options",
        ),
        (
            json!({"age": 3}),
            "inputResponses.profile: field 'name' is required",
        ),
    ] {
        let reply = retry_with(&server, json!({KEY: accept(content)})).await;
        assert_eq!(reply.error(-32602, 400)["message"], message);
    }
    seen.assert_nothing();
    server.stop().await;
}

#[actix_web::test]
async fn a_matching_answer_completes_and_reaches_the_handler_once() {
    let (server, seen) = server().await;
    let content =
        json!({"name": "Ada", "age": 36, "color": "green", "toppings": ["ham", "cheese"]});
    let reply = retry_with(&server, json!({KEY: accept(content.clone())})).await;
    assert_eq!(reply.result()["resultType"], "complete", "{reply:?}");
    assert_eq!(seen.contents(), [content]);
    server.stop().await;
}

#[actix_web::test]
async fn a_declined_answer_is_not_checked_and_reaches_the_handler() {
    let (server, seen) = server().await;
    let answer = json!({KEY: {"action": "decline", "content": {"toppings": "cheese"}}});
    let reply = retry_with(&server, answer).await;
    assert_eq!(reply.result()["resultType"], "complete", "{reply:?}");
    assert_eq!(
        seen.contents(),
        [Value::Null],
        "declined: no accepted content"
    );
    server.stop().await;
}

#[actix_web::test]
async fn an_answer_under_a_key_that_was_not_asked_is_ignored() {
    let (server, seen) = server().await;
    let answers = json!({
        KEY: accept(json!({"name": "Ada"})),
        "unasked": accept(json!({"name": 12, "toppings": "cheese"})),
    });
    let reply = retry_with(&server, answers).await;
    assert_eq!(reply.result()["resultType"], "complete", "{reply:?}");
    assert_eq!(seen.contents(), [json!({"name": "Ada"})]);
    server.stop().await;
}

/// Without a `requestState` the server asked nothing in this flow as far as it can tell (it
/// keeps no memory between rounds), so there is nothing to check the answers against: the
/// handler decides. This is how the conformance suite's `ignore-extra-params` calls a tool.
#[actix_web::test]
async fn answers_sent_without_a_request_state_have_no_schema_to_be_checked_against() {
    let (server, seen) = server().await;
    let answers = json!({KEY: accept(json!({"name": "Ada", "color": "blue"}))});
    let reply = server
        .send(TENANT, &retry(&first_round(), 2, answers, None))
        .await;
    assert_eq!(reply.result()["resultType"], "complete", "{reply:?}");
    assert_eq!(seen.contents(), [json!({"name": "Ada", "color": "blue"})]);
    server.stop().await;
}

#[actix_web::test]
async fn the_sealed_greet_flow_refuses_a_name_that_is_not_a_string() {
    let server = Server::start().await;
    let first = tool_call(1, "greet", json!({}), json!({"elicitation": {}}));
    let state = server.send_demo(&first).await.state();
    let answer = json!({"user_name": accept(json!({"name": ["Ada"]}))});
    let reply = server
        .send_demo(&retry(&first, 2, answer, Some(&state)))
        .await;
    assert_eq!(
        reply.error(-32602, 400)["message"],
        "inputResponses.user_name: field 'name' must be a string"
    );
    let answer = json!({"user_name": accept(json!({"name": "Ada"}))});
    let reply = server
        .send_demo(&retry(&first, 3, answer, Some(&state)))
        .await;
    assert_eq!(reply.result()["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Legacy sessions: the shim checks each answer against the request it sent

/// A legacy call of `ask_profile`: its stream, and the leg asking the profile form.
async fn legacy_leg(session: &LegacySession<'_>) -> (LegacyStream, Value) {
    let mut stream = session
        .open(&legacy_call(1, "ask_profile", json!({})))
        .await;
    assert_eq!(stream.status, 200);
    let leg = stream.next_request().await;
    assert_eq!(leg["method"], "elicitation/create");
    assert_eq!(leg["params"]["requestedSchema"], profile_schema());
    (stream, leg)
}

#[actix_web::test]
async fn a_legacy_answer_that_does_not_match_ends_the_flow_with_invalid_params_naming_the_key() {
    let (server, seen) = server().await;
    let session = server.legacy_session(TENANT, all_caps()).await;
    let (mut stream, leg) = legacy_leg(&session).await;
    let answer = accept(json!({"name": "Ada", "toppings": "cheese"}));
    let posted = session.answer(&leg["id"], answer).await;
    assert_eq!(
        posted.status, 202,
        "the answer itself reached the flow: {posted:?}"
    );
    let response = stream.response().await;
    let error = &response["error"];
    assert_eq!(error["code"], -32602, "{response}");
    assert_eq!(
        error["message"],
        "The client's answer to elicitation/create for 'profile' does not match the requested \
         schema: field 'toppings' must be an array"
    );
    assert_eq!(
        error["data"],
        json!({"reason": "invalid_answer", "key": KEY})
    );
    seen.assert_nothing();
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_answer_that_matches_completes_the_flow() {
    let (server, seen) = server().await;
    let session = server.legacy_session(TENANT, all_caps()).await;
    let (mut stream, leg) = legacy_leg(&session).await;
    let content = json!({"name": "Ada", "color": "red", "toppings": ["cheese"]});
    let posted = session.answer(&leg["id"], accept(content.clone())).await;
    assert_eq!(posted.status, 202, "{posted:?}");
    let response = stream.response().await;
    assert!(response.get("result").is_some(), "{response}");
    assert_eq!(seen.contents(), [content]);
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_cancelled_answer_is_not_checked() {
    let (server, seen) = server().await;
    let session = server.legacy_session(TENANT, all_caps()).await;
    let (mut stream, leg) = legacy_leg(&session).await;
    let posted = session
        .answer(&leg["id"], json!({"action": "cancel"}))
        .await;
    assert_eq!(posted.status, 202, "{posted:?}");
    let response = stream.response().await;
    assert!(response.get("result").is_some(), "{response}");
    assert_eq!(seen.contents(), [Value::Null]);
    server.stop().await;
}
