//! Multi round-trip fixtures (SEP-2322): the eight `test_input_required_result_*` tools and
//! the prompt `test_input_required_result_prompt`.
//!
//! Each one asks for input by returning [`InputRequired`] and completes once the retry carries
//! usable answers. What the runtime does around them is deliberately not repeated here: it
//! rejects malformed `inputResponses`, seals and verifies `requestState` (so a tampered token
//! never reaches a handler), and turns any request the client did not declare a capability
//! for into -32021. The fixtures only decide what to ask and when they are done.
//!
//! A retry carries only the latest round's answers, so an answer needed later travels in the
//! handler state (see `test_input_required_result_multi_round`). An answer that does not fit
//! (wrong key, wrong shape) means "ask again", never an error: that is what
//! `input-required-result-missing-input-response` expects.

use std::sync::{Arc, LazyLock};

use roundtrip_runtime::handler::{
    fn_prompt, fn_tool, Context, InputRequired, Prompt, PromptDescriptor, PromptOutcome, Tool,
    ToolDescriptor, ToolOutcome,
};
use roundtrip_runtime::protocol::content::Content;
use roundtrip_runtime::protocol::input::InputRequest;
use roundtrip_runtime::protocol::result::{CallToolResult, GetPromptResult, PromptMessage};
use roundtrip_runtime::protocol::{ClientCapabilities, ElicitAction, InputResponse};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// Handler state of `test_input_required_result_request_state`.
const CONFIRM_STATE: &str = "awaiting-confirmation";
/// Handler state of `test_input_required_result_tampered_state`.
const TAMPER_STATE: &str = "integrity-protected";
/// Handler state of `test_input_required_result_multiple_inputs`.
const MULTIPLE_STATE: &str = "multiple-inputs";
/// Handler state of `test_input_required_result_capabilities`.
const CAPABILITY_STATE: &str = "capability-gated";

/// The fixtures' fixed questions, each built once and serialised the first time it is sent,
/// as `greet`'s are (`catalogs/examples.rs`): a round 1 hands out a shared handle instead of
/// building, writing and dropping its form again. Only a question whose text changes (the
/// color question names the user) is built per round.
static ASK_NAME: LazyLock<InputRequest> = LazyLock::new(|| {
    InputRequest::elicit_form("What is your name?", one_field_form("name", "string"))
});
static CONFIRM: LazyLock<InputRequest> =
    LazyLock::new(|| InputRequest::elicit_form("Please confirm", one_field_form("ok", "boolean")));
static CAPITAL_QUESTION: LazyLock<InputRequest> =
    LazyLock::new(|| InputRequest::sample_text("What is the capital of France?", 100));
static GREETING: LazyLock<InputRequest> =
    LazyLock::new(|| InputRequest::sample_text("Write a one-line greeting.", 50));
static SAY_HELLO: LazyLock<InputRequest> =
    LazyLock::new(|| InputRequest::sample_text("Say hello", 50));
static ANYTHING_TO_ADD: LazyLock<InputRequest> = LazyLock::new(|| {
    InputRequest::elicit_form("Anything to add?", one_field_form("note", "string"))
});
static PROMPT_CONTEXT: LazyLock<InputRequest> = LazyLock::new(|| {
    InputRequest::elicit_form(
        "What context should the prompt include?",
        one_field_form("context", "string"),
    )
});
static ROOTS: LazyLock<InputRequest> = LazyLock::new(InputRequest::list_roots);

pub(super) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_elicitation",
                "Tests InputRequiredResult with one form elicitation (user_name)",
            ),
            |ctx, _args| async move { elicitation(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_sampling",
                "Tests InputRequiredResult with a sampling request (capital_question)",
            ),
            |ctx, _args| async move { sampling(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_list_roots",
                "Tests InputRequiredResult with a roots request (client_roots)",
            ),
            |ctx, _args| async move { list_roots(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_request_state",
                "Tests InputRequiredResult with a request state to echo",
            ),
            |ctx, _args| async move { request_state(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_multiple_inputs",
                "Tests InputRequiredResult with elicitation, sampling and roots at once",
            ),
            |ctx, _args| async move { multiple_inputs(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_multi_round",
                "Tests three rounds: a name, then a color, then the answer",
            ),
            |ctx, _args| async move { multi_round(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_tampered_state",
                "Tests that a modified request state is rejected",
            ),
            |ctx, _args| async move { tampered_state(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_input_required_result_capabilities",
                "Tests InputRequiredResult asking only for declared capabilities",
            ),
            |ctx, _args| async move { capabilities(&ctx) },
        ),
    ]
}

pub(super) fn prompts() -> Vec<Arc<dyn Prompt>> {
    vec![fn_prompt(
        PromptDescriptor::new(
            "test_input_required_result_prompt",
            "Tests InputRequiredResult from prompts/get (SEP-2322 non-tool request)",
        ),
        |ctx, _args| async move { prompt_with_context(&ctx) },
    )]
}

/// `{type: object, properties: {<field>: {type: <kind>}}, required: [<field>]}`.
fn one_field_form(field: &str, kind: &str) -> Value {
    json!({"type": "object", "properties": {field: {"type": kind}}, "required": [field]})
}

fn ask_name(ir: InputRequired, key: &str) -> InputRequired {
    ir.request(key, ASK_NAME.clone())
}

/// `user_name` answered with a name completes; anything else asks again. Needs no state:
/// the `ignore-extra-params` scenario retries without one.
fn elicitation(ctx: &Context) -> ToolOutcome {
    let answer = ctx.input_response("user_name");
    match (
        answer.and_then(InputResponse::action),
        answer.and_then(|a| a.content_str("name")),
    ) {
        (Some(ElicitAction::Accept), Some(name)) => {
            CallToolResult::text(format!("Hello, {name}!")).into()
        }
        (Some(ElicitAction::Decline | ElicitAction::Cancel), _) => {
            CallToolResult::text("Hello, stranger! (no name given)").into()
        }
        _ => ask_name(InputRequired::new(), "user_name").into(),
    }
}

fn sampling(ctx: &Context) -> ToolOutcome {
    match ctx
        .input_response("capital_question")
        .and_then(InputResponse::sampled_text)
    {
        Some(text) => CallToolResult::text(format!("The model answered: {text}")).into(),
        None => InputRequired::new()
            .request("capital_question", CAPITAL_QUESTION.clone())
            .into(),
    }
}

fn list_roots(ctx: &Context) -> ToolOutcome {
    match ctx
        .input_response("client_roots")
        .and_then(InputResponse::roots)
    {
        Some(roots) => CallToolResult::text(format!(
            "The client has {} root(s): {}",
            roots.len(),
            root_uris(roots)
        ))
        .into(),
        None => InputRequired::new()
            .request("client_roots", ROOTS.clone())
            .into(),
    }
}

fn root_uris(roots: &[Value]) -> String {
    let uris: Vec<&str> = roots
        .iter()
        .filter_map(|r| r.get("uri")?.as_str())
        .collect();
    uris.join(", ")
}

fn request_state(ctx: &Context) -> ToolOutcome {
    confirm_with_state(ctx, CONFIRM_STATE, "state-ok: confirmation received")
}

/// The runtime rejects a tampered token before this runs; reaching the end means it was intact.
fn tampered_state(ctx: &Context) -> ToolOutcome {
    confirm_with_state(ctx, TAMPER_STATE, "state verified: confirmation received")
}

/// Asks `confirm` with handler state `state`; completes with `done` once the retry brings both
/// the answer and that state back.
fn confirm_with_state(ctx: &Context, state: &str, done: &str) -> ToolOutcome {
    let answered = ctx
        .input_response("confirm")
        .and_then(InputResponse::action);
    match (ctx.request_state() == Some(state), answered) {
        (true, Some(ElicitAction::Accept)) => CallToolResult::text(done).into(),
        (true, Some(_)) => CallToolResult::text("Not confirmed.").into(),
        _ => InputRequired::new()
            .request("confirm", CONFIRM.clone())
            .state(state)
            .into(),
    }
}

/// One of each kind at once; all three answers and the state are needed to complete.
fn multiple_inputs(ctx: &Context) -> ToolOutcome {
    let name = ctx
        .input_response("user_name")
        .and_then(|a| a.content_str("name"));
    let greeting = ctx
        .input_response("greeting")
        .and_then(InputResponse::sampled_text);
    let roots = ctx
        .input_response("client_roots")
        .and_then(InputResponse::roots);
    match (
        ctx.request_state() == Some(MULTIPLE_STATE),
        name,
        greeting,
        roots,
    ) {
        (true, Some(name), Some(greeting), Some(roots)) => CallToolResult::text(format!(
            "{greeting} {name}, you have {} root(s).",
            roots.len()
        ))
        .into(),
        _ => ask_name(InputRequired::new(), "user_name")
            .request("greeting", GREETING.clone())
            .request("client_roots", ROOTS.clone())
            .state(MULTIPLE_STATE)
            .into(),
    }
}

/// Where `test_input_required_result_multi_round` stands; the name rides along in round 2
/// because round 3's retry carries only the color.
#[derive(Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "step", rename_all = "snake_case")]
enum MultiRound {
    AskedName,
    AskedColor { name: String },
}

fn multi_round(ctx: &Context) -> ToolOutcome {
    match ctx.request_state_json::<MultiRound>() {
        Some(MultiRound::AskedName) => match ctx
            .input_response("step1")
            .and_then(|a| a.content_str("name"))
        {
            Some(name) => ask_color(name.to_owned()),
            None => ask_first_name(),
        },
        Some(MultiRound::AskedColor { name }) => {
            match ctx
                .input_response("step2")
                .and_then(|a| a.content_str("color"))
            {
                Some(color) => {
                    CallToolResult::text(format!("{name}'s favorite color is {color}.")).into()
                }
                None => ask_color(name),
            }
        }
        None => ask_first_name(),
    }
}

fn ask_first_name() -> ToolOutcome {
    ask_name(InputRequired::new(), "step1")
        .state_json(&MultiRound::AskedName)?
        .into()
}

fn ask_color(name: String) -> ToolOutcome {
    InputRequired::new()
        .elicit(
            "step2",
            format!("Thanks, {name}. What is your favorite color?"),
            one_field_form("color", "string"),
        )
        .state_json(&MultiRound::AskedColor { name })?
        .into()
}

/// The requests this client can take, from the capabilities of *this* request (a modern
/// client declares them per request).
fn declared_requests(caps: &ClientCapabilities) -> InputRequired {
    let mut ir = InputRequired::new();
    if caps.has("sampling") {
        ir = ir.request("sample", SAY_HELLO.clone());
    }
    if caps.allows_form_elicitation() {
        ir = ir.request("ask", ANYTHING_TO_ADD.clone());
    }
    if caps.has("roots") {
        ir = ir.request("roots", ROOTS.clone());
    }
    ir
}

/// Is every request of `ir` answered with something of the right shape?
fn all_answered(ctx: &Context, ir: &InputRequired) -> bool {
    ir.requests().iter().all(|(key, request)| {
        let Some(answer) = ctx.input_response(key) else {
            return false;
        };
        match request.method() {
            "sampling/createMessage" => answer.sampled_text().is_some(),
            "roots/list" => answer.roots().is_some(),
            _ => answer.action().is_some(),
        }
    })
}

fn capabilities(ctx: &Context) -> ToolOutcome {
    let ir = declared_requests(ctx.client_capabilities());
    if ir.requests().is_empty() {
        return CallToolResult::text("The client declared no input capability; nothing to ask.")
            .into();
    }
    if ctx.request_state() == Some(CAPABILITY_STATE) && all_answered(ctx, &ir) {
        let kinds: Vec<&str> = ir.requests().values().map(|r| r.method()).collect();
        return CallToolResult::text(format!("Answered: {}", kinds.join(", "))).into();
    }
    ir.state(CAPABILITY_STATE).into()
}

/// `prompts/get` that asks for some context first.
fn prompt_with_context(ctx: &Context) -> PromptOutcome {
    let Some(answer) = ctx.input_response("user_context") else {
        return InputRequired::new()
            .request("user_context", PROMPT_CONTEXT.clone())
            .into();
    };
    let text = match answer.content_str("context") {
        Some(context) => format!("Answer with this context in mind: {context}"),
        None => "Answer without any extra context.".to_owned(),
    };
    GetPromptResult {
        description: None,
        messages: vec![PromptMessage::user(Content::text(text))],
    }
    .into()
}

#[cfg(test)]
mod tests {
    use super::super::fixture_tests::{asked, builder, completed};
    use super::*;

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities::new(v.as_object().cloned().unwrap_or_default())
    }

    fn sampled(text: &str) -> Value {
        json!({"role": "assistant", "content": {"type": "text", "text": text}, "model": "m"})
    }

    #[test]
    fn elicitation_reasks_on_a_wrong_key_and_completes_without_state() {
        let wrong = builder()
            .answer(
                "wrong_key",
                json!({"action": "accept", "content": {"data": "wrong"}}),
            )
            .build();
        let ir = asked(elicitation(&wrong));
        assert!(ir.requests().contains_key("user_name"));
        assert_eq!(ir.handler_state(), None);

        let answered = builder()
            .answer(
                "user_name",
                json!({"action": "accept", "content": {"name": "Alice"}}),
            )
            .build();
        assert_eq!(
            completed(elicitation(&answered)).content,
            vec![Content::text("Hello, Alice!")]
        );
    }

    #[test]
    fn multi_round_issues_a_new_state_each_round_and_carries_the_name() {
        let r1 = asked(multi_round(&builder().build()));
        assert!(r1.requests().contains_key("step1"));
        let ctx2 = builder()
            .request_state(r1.handler_state().map(str::to_owned))
            .answer(
                "step1",
                json!({"action": "accept", "content": {"name": "Alice"}}),
            )
            .build();
        let r2 = asked(multi_round(&ctx2));
        assert!(r2.requests().contains_key("step2"));
        assert_ne!(r2.handler_state(), r1.handler_state());

        let ctx3 = builder()
            .request_state(r2.handler_state().map(str::to_owned))
            .answer(
                "step2",
                json!({"action": "accept", "content": {"color": "blue"}}),
            )
            .build();
        let done = completed(multi_round(&ctx3));
        assert_eq!(
            done.content,
            vec![Content::text("Alice's favorite color is blue.")]
        );
    }

    #[test]
    fn capabilities_asks_only_for_declared_kinds() {
        let ctx = builder()
            .client_capabilities(caps(json!({"sampling": {}})))
            .build();
        let ir = asked(capabilities(&ctx));
        let methods: Vec<&str> = ir.requests().values().map(|r| r.method()).collect();
        assert_eq!(methods, ["sampling/createMessage"]);
        assert_eq!(ir.handler_state(), Some(CAPABILITY_STATE));

        let all = builder()
            .client_capabilities(caps(
                json!({"sampling": {}, "elicitation": {}, "roots": {}}),
            ))
            .build();
        assert_eq!(asked(capabilities(&all)).requests().len(), 3);

        let none = builder().build();
        completed(capabilities(&none));
    }

    #[test]
    fn capabilities_completes_once_answered() {
        let ctx = builder()
            .client_capabilities(caps(json!({"sampling": {}})))
            .request_state(Some(CAPABILITY_STATE.to_owned()))
            .answer("sample", sampled("Hi"))
            .build();
        completed(capabilities(&ctx));
    }

    #[test]
    fn multiple_inputs_needs_every_answer_and_the_state() {
        let ir = asked(multiple_inputs(&builder().build()));
        let methods: Vec<&str> = ir.requests().values().map(|r| r.method()).collect();
        assert_eq!(methods.len(), 3);
        for m in ["elicitation/create", "sampling/createMessage", "roots/list"] {
            assert!(methods.contains(&m), "{m} asked");
        }
        let without_roots = builder()
            .request_state(Some(MULTIPLE_STATE.to_owned()))
            .answer(
                "user_name",
                json!({"action": "accept", "content": {"name": "Alice"}}),
            )
            .answer(
                "greeting",
                json!({"role": "assistant", "content": {"type": "text", "text": "Hello there!"}}),
            )
            .build();
        asked(multiple_inputs(&without_roots));
    }

    #[test]
    fn request_state_tool_needs_its_state_back() {
        let answered_without_state = builder()
            .answer(
                "confirm",
                json!({"action": "accept", "content": {"ok": true}}),
            )
            .build();
        let ir = asked(confirm_with_state(
            &answered_without_state,
            CONFIRM_STATE,
            "done",
        ));
        assert_eq!(ir.handler_state(), Some(CONFIRM_STATE));
    }
}
