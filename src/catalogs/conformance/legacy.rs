//! Fixtures of the scenarios that exist only on the legacy (2025-11-25, `initialize`-based)
//! wire: `test_sampling`, `test_elicitation`, `test_elicitation_sep1034_defaults`,
//! `test_elicitation_sep1330_enums`, `test_tool_with_logging` and the resource
//! `test://watched-resource` (`resources-subscribe` / `-unsubscribe`).
//!
//! They are ordinary stateless handlers: a tool that needs the client returns
//! [`InputRequired`], and on a legacy session the runtime's shim sends each request to the
//! client as a real server-to-client JSON-RPC request and runs the handler again with the
//! answers. So nothing here knows which wire it serves, and the same tools also work as
//! multi round-trip tools on a 2026-07-28 request.
//!
//! The legacy scenarios check little beyond "the client was asked, the result has content"
//! (`tools-call-sampling`, `tools-call-elicitation`) or the exact schema the client was asked
//! with (`elicitation-sep1034-defaults`, `elicitation-sep1330-enums`). Requests and result
//! texts follow the scenario descriptions of `@modelcontextprotocol/conformance`
//! (`src/scenarios/server/tools.ts`, `elicitation-defaults.ts`, `elicitation-enums.ts`), so a
//! trace reads like the reference servers'. Params carry no `mode`: 2025-06-18 clients know
//! only form elicitation, and without `mode` it is form mode on every revision.
//!
//! As in [`super::mrtr`], an answer that does not fit (no usable action, no text) means "ask
//! again"; the runtime bounds the number of rounds.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use roundtrip_runtime::handler::{
    fn_tool, Context, InputRequired, Resource, ResourceDescriptor, ResourceOutcome, Tool,
    ToolDescriptor, ToolOutcome,
};
use roundtrip_runtime::protocol::input::InputRequest;
use roundtrip_runtime::protocol::result::{CallToolResult, ReadResourceResult, ResourceContents};
use roundtrip_runtime::protocol::{InputResponse, LogLevel};
use serde_json::{json, Map, Value};

/// Input key of `test_sampling`'s `sampling/createMessage`.
const SAMPLING_KEY: &str = "llm_response";
/// Input key of `test_elicitation`'s `elicitation/create`.
const ELICITATION_KEY: &str = "user_response";
/// Input key of `test_elicitation_sep1034_defaults`.
const DEFAULTS_KEY: &str = "form_with_defaults";
/// Input key of `test_elicitation_sep1330_enums`.
const ENUMS_KEY: &str = "enum_choices";

/// `maxTokens` of the sampling request, as `tools-call-sampling` specifies it.
const SAMPLING_MAX_TOKENS: u32 = 100;

/// The three messages of `test_tool_with_logging`, in order.
const LOG_STEPS: [&str; 3] = [
    "Tool execution started",
    "Tool processing data",
    "Tool execution completed",
];
/// Pause between two log messages: the scenario wants them spread over the call, so that a
/// client shows it receives notifications while the tool runs, not in one burst.
const LOG_STEP: Duration = Duration::from_millis(50);

const WATCHED_URI: &str = "test://watched-resource";

pub(super) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        fn_tool(
            ToolDescriptor::new(
                "test_sampling",
                "Tests server-initiated sampling: asks the client's LLM to answer the prompt",
                string_argument("prompt", "The prompt to send to the LLM"),
            ),
            |ctx, args| async move { sampling(&ctx, args.str("prompt")?) },
        ),
        fn_tool(
            ToolDescriptor::new(
                "test_elicitation",
                "Tests server-initiated elicitation: asks the user for a username and an email",
                string_argument("message", "The message to show the user"),
            ),
            |ctx, args| async move { elicitation(&ctx, args.str("message")?) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_elicitation_sep1034_defaults",
                "Tests elicitation with a default value for every primitive type (SEP-1034)",
            ),
            |ctx, _args| async move { elicitation_with_defaults(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_elicitation_sep1330_enums",
                "Tests elicitation with the five enum schema variants (SEP-1330)",
            ),
            |ctx, _args| async move { elicitation_with_enums(&ctx) },
        ),
        fn_tool(
            ToolDescriptor::no_args(
                "test_tool_with_logging",
                "Tests log notifications: logs three info messages while it runs",
            ),
            |ctx, _args| async move { log_three_steps(&ctx).await },
        ),
    ]
}

pub(super) fn resources() -> Vec<Arc<dyn Resource>> {
    vec![Arc::new(Watched)]
}

/// `{type: object, properties: {<name>: {type: string, description}}, required: [<name>]}`.
fn string_argument(name: &str, description: &str) -> Value {
    json!({
        "type": "object",
        "properties": {name: {"type": "string", "description": description}},
        "required": [name],
    })
}

fn sampling(ctx: &Context, prompt: &str) -> ToolOutcome {
    match ctx
        .input_response(SAMPLING_KEY)
        .and_then(InputResponse::sampled_text)
    {
        Some(text) => CallToolResult::text(format!("LLM response: {text}")).into(),
        None => InputRequired::new()
            .request(
                SAMPLING_KEY,
                InputRequest::sample_text(prompt, SAMPLING_MAX_TOKENS),
            )
            .into(),
    }
}

/// The schema `tools-call-elicitation` describes; its client answers exactly these fields.
fn user_info_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    })
}

fn elicitation(ctx: &Context, message: &str) -> ToolOutcome {
    match elicit_result(ctx, ELICITATION_KEY) {
        Some(summary) => CallToolResult::text(format!("User response: {summary}")).into(),
        None => ask(
            ELICITATION_KEY,
            json!({"message": message, "requestedSchema": user_info_schema()}),
        ),
    }
}

/// SEP-1034: a default for each primitive type; the scenario checks every type and value.
fn defaults_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "User name", "default": "John Doe"},
            "age": {"type": "integer", "description": "User age", "default": 30},
            "score": {"type": "number", "description": "User score", "default": 95.5},
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active",
            },
            "verified": {"type": "boolean", "description": "Verification status", "default": true},
        },
    })
}

fn elicitation_with_defaults(ctx: &Context) -> ToolOutcome {
    match elicit_result(ctx, DEFAULTS_KEY) {
        Some(summary) => completed(&summary),
        None => ask(
            DEFAULTS_KEY,
            json!({
                "message": "Please review and update the form fields with defaults",
                "requestedSchema": defaults_schema(),
            }),
        ),
    }
}

/// SEP-1330: untitled (`enum`), titled (`oneOf` of const/title) and legacy titled
/// (`enumNames`) single-select, untitled (`items.enum`) and titled (`items.anyOf`)
/// multi-select. The scenario also checks what each variant must *not* carry (an untitled
/// enum has no `oneOf`/`enumNames`, a titled one no `enum`, ...).
fn enums_schema() -> Value {
    let titled = |titles: [&str; 3]| -> Vec<Value> {
        titles
            .iter()
            .enumerate()
            .map(|(i, title)| json!({"const": format!("value{}", i + 1), "title": title}))
            .collect()
    };
    json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"],
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": titled(["First Option", "Second Option", "Third Option"]),
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "items": {"anyOf": titled(["First Choice", "Second Choice", "Third Choice"])},
            },
        },
    })
}

fn elicitation_with_enums(ctx: &Context) -> ToolOutcome {
    match elicit_result(ctx, ENUMS_KEY) {
        Some(summary) => completed(&summary),
        None => ask(
            ENUMS_KEY,
            json!({
                "message": "Please select options from the enum fields",
                "requestedSchema": enums_schema(),
            }),
        ),
    }
}

fn ask(key: &str, params: Value) -> ToolOutcome {
    InputRequired::new()
        .request(key, InputRequest::elicitation(params))
        .into()
}

fn completed(summary: &str) -> ToolOutcome {
    CallToolResult::text(format!("Elicitation completed: {summary}")).into()
}

/// `action=<action>, content=<JSON>` of the elicitation answer under `key` (content `{}` on
/// decline or cancel); `None` when there is no answer with a valid action.
fn elicit_result(ctx: &Context, key: &str) -> Option<String> {
    let answer = ctx.input_response(key)?;
    let action = answer.action()?;
    let content = answer
        .accepted_content()
        .cloned()
        .map_or_else(|| Value::Object(Map::new()), Value::Object);
    Some(format!("action={}, content={content}", action.as_str()))
}

/// Three info messages, `LOG_STEP` apart. Sent only if the request (modern) or the session
/// (legacy, via `logging/setLevel`) set a level at or below info; the result does not
/// depend on it.
async fn log_three_steps(ctx: &Context) -> ToolOutcome {
    for (i, step) in LOG_STEPS.into_iter().enumerate() {
        if i > 0 {
            actix_rt::time::sleep(LOG_STEP).await;
        }
        ctx.log(LogLevel::Info, None, json!(step));
    }
    CallToolResult::text("Tool with logging executed successfully").into()
}

/// `test://watched-resource`: the resource `resources-subscribe` / `-unsubscribe` name. Its
/// content never changes, so no update notification is ever due; the scenarios only check
/// that subscribing and unsubscribing succeed.
struct Watched;

#[async_trait(?Send)]
impl Resource for Watched {
    fn descriptor(&self) -> ResourceDescriptor {
        ResourceDescriptor::new(WATCHED_URI, "watched_resource", "text/plain")
            .with_description("A resource clients may subscribe to (resources/subscribe)")
    }

    async fn read(&self, _ctx: Context) -> ResourceOutcome {
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                WATCHED_URI,
                "text/plain",
                "Watched resource content",
            )],
        }
        .into()
    }
}

#[cfg(test)]
mod tests {
    use super::super::fixture_tests::{asked, builder, completed};
    use super::*;
    use roundtrip_runtime::handler::{Notifier, Outcome};
    use roundtrip_runtime::protocol::content::Content;

    /// The one request of an input-required outcome, as `(key, method, params)`.
    fn the_request(outcome: ToolOutcome) -> (String, &'static str, Value) {
        let ir = asked(outcome);
        assert_eq!(ir.handler_state(), None, "legacy fixtures keep no state");
        let mut requests = ir.requests().iter();
        let (key, request) = requests.next().expect("one request");
        assert!(requests.next().is_none(), "exactly one request");
        (
            key.clone(),
            request.method(),
            request.params().cloned().unwrap_or(Value::Null),
        )
    }

    fn text_of(outcome: ToolOutcome) -> String {
        match completed(outcome).content.as_slice() {
            [Content::Text { text }] => text.clone(),
            other => panic!("expected one text block, got {other:?}"),
        }
    }

    fn accepted(content: Value) -> Value {
        json!({"action": "accept", "content": content})
    }

    #[test]
    fn sampling_asks_for_the_prompt_with_100_tokens() {
        let (key, method, params) = the_request(sampling(&builder().build(), "Test prompt"));
        assert_eq!(key, SAMPLING_KEY);
        assert_eq!(method, "sampling/createMessage");
        assert_eq!(
            params,
            json!({
                "messages": [{"role": "user", "content": {"type": "text", "text": "Test prompt"}}],
                "maxTokens": 100,
            })
        );
    }

    #[test]
    fn sampling_returns_the_sampled_text_after_llm_response() {
        let ctx = builder()
            .answer(
                SAMPLING_KEY,
                json!({
                    "role": "assistant",
                    "content": {"type": "text", "text": "This is a test response from the client"},
                    "model": "test-model",
                    "stopReason": "endTurn",
                }),
            )
            .build();
        assert_eq!(
            text_of(sampling(&ctx, "Test prompt")),
            "LLM response: This is a test response from the client"
        );
    }

    #[test]
    fn sampling_asks_again_when_the_answer_has_no_text() {
        let ctx = builder()
            .answer(SAMPLING_KEY, json!({"action": "accept"}))
            .build();
        assert_eq!(the_request(sampling(&ctx, "p")).0, SAMPLING_KEY);
    }

    #[test]
    fn elicitation_asks_with_the_message_and_the_username_email_form() {
        let (key, method, params) = the_request(elicitation(
            &builder().build(),
            "Please provide your information",
        ));
        assert_eq!(
            (key.as_str(), method),
            (ELICITATION_KEY, "elicitation/create")
        );
        assert_eq!(params["message"], "Please provide your information");
        assert_eq!(params["requestedSchema"], user_info_schema());
        assert_eq!(
            params["requestedSchema"]["required"],
            json!(["username", "email"])
        );
        assert!(
            params.get("mode").is_none(),
            "no mode: form on every revision"
        );
    }

    #[test]
    fn elicitation_returns_action_and_content() {
        let ctx = builder()
            .answer(
                ELICITATION_KEY,
                accepted(json!({"username": "testuser", "email": "test@example.com"})),
            )
            .build();
        assert_eq!(
            text_of(elicitation(&ctx, "m")),
            r#"User response: action=accept, content={"email":"test@example.com","username":"testuser"}"#
        );
        let declined = builder()
            .answer(ELICITATION_KEY, json!({"action": "decline"}))
            .build();
        assert_eq!(
            text_of(elicitation(&declined, "m")),
            "User response: action=decline, content={}"
        );
    }

    #[test]
    fn elicitation_asks_again_without_a_valid_action() {
        let ctx = builder()
            .answer(ELICITATION_KEY, json!({"action": "maybe"}))
            .build();
        assert_eq!(the_request(elicitation(&ctx, "m")).0, ELICITATION_KEY);
    }

    #[test]
    fn sep1034_asks_with_a_default_for_every_primitive_type() {
        let (key, method, params) = the_request(elicitation_with_defaults(&builder().build()));
        assert_eq!((key.as_str(), method), (DEFAULTS_KEY, "elicitation/create"));
        let props = &params["requestedSchema"]["properties"];
        let type_and_default = |field: &str| {
            (
                props[field]["type"].clone(),
                props[field]["default"].clone(),
            )
        };
        assert_eq!(
            type_and_default("name"),
            (json!("string"), json!("John Doe"))
        );
        assert_eq!(type_and_default("age"), (json!("integer"), json!(30)));
        assert!(props["age"]["default"].is_u64(), "30, not 30.0");
        assert_eq!(type_and_default("score"), (json!("number"), json!(95.5)));
        assert_eq!(
            type_and_default("status"),
            (json!("string"), json!("active"))
        );
        assert_eq!(
            props["status"]["enum"],
            json!(["active", "inactive", "pending"])
        );
        assert_eq!(
            type_and_default("verified"),
            (json!("boolean"), json!(true))
        );
    }

    #[test]
    fn sep1034_reports_the_answer() {
        let ctx = builder()
            .answer(
                DEFAULTS_KEY,
                accepted(json!({"name": "Jane Smith", "age": 25, "score": 88.0,
                                "status": "inactive", "verified": false})),
            )
            .build();
        let text = text_of(elicitation_with_defaults(&ctx));
        assert!(
            text.starts_with("Elicitation completed: action=accept, content={"),
            "{text}"
        );
        assert!(text.contains(r#""name":"Jane Smith""#), "{text}");
    }

    #[test]
    fn sep1330_asks_with_the_five_enum_variants_each_in_its_own_shape() {
        let (key, method, params) = the_request(elicitation_with_enums(&builder().build()));
        assert_eq!((key.as_str(), method), (ENUMS_KEY, "elicitation/create"));
        let p = &params["requestedSchema"]["properties"];
        let is_titled_list = |v: &Value| {
            v.as_array().is_some_and(|items| {
                items.len() == 3
                    && items
                        .iter()
                        .all(|i| i["const"].is_string() && i["title"].is_string())
            })
        };

        let untitled = &p["untitledSingle"];
        assert_eq!(untitled["type"], "string");
        assert_eq!(untitled["enum"], json!(["option1", "option2", "option3"]));
        assert!(untitled.get("oneOf").is_none() && untitled.get("enumNames").is_none());

        let titled = &p["titledSingle"];
        assert_eq!(titled["type"], "string");
        assert!(is_titled_list(&titled["oneOf"]) && titled.get("enum").is_none());
        assert_eq!(
            titled["oneOf"][0],
            json!({"const": "value1", "title": "First Option"})
        );

        let legacy = &p["legacyEnum"];
        assert_eq!(legacy["type"], "string");
        assert_eq!(legacy["enum"], json!(["opt1", "opt2", "opt3"]));
        assert_eq!(
            legacy["enumNames"],
            json!(["Option One", "Option Two", "Option Three"])
        );

        let untitled_multi = &p["untitledMulti"];
        assert_eq!(untitled_multi["type"], "array");
        assert_eq!(untitled_multi["items"]["type"], "string");
        assert_eq!(
            untitled_multi["items"]["enum"],
            json!(["option1", "option2", "option3"])
        );
        assert!(untitled_multi["items"].get("anyOf").is_none());

        let titled_multi = &p["titledMulti"];
        assert_eq!(titled_multi["type"], "array");
        assert!(is_titled_list(&titled_multi["items"]["anyOf"]));
        assert!(titled_multi["items"].get("enum").is_none());
        assert_eq!(
            titled_multi["items"]["anyOf"][2],
            json!({"const": "value3", "title": "Third Choice"})
        );
    }

    #[test]
    fn sep1330_reports_the_answer() {
        let ctx = builder()
            .answer(
                ENUMS_KEY,
                accepted(json!({"untitledSingle": "option1", "titledMulti": ["value1", "value2"]})),
            )
            .build();
        assert_eq!(
            text_of(elicitation_with_enums(&ctx)),
            r#"Elicitation completed: action=accept, content={"titledMulti":["value1","value2"],"untitledSingle":"option1"}"#
        );
    }

    #[actix_rt::test]
    async fn logging_sends_three_info_messages_in_order_then_completes() {
        let (notifier, mut rx) = Notifier::channel(None, Some(LogLevel::Debug));
        let ctx = builder().notifier(Some(notifier)).build();
        let started = std::time::Instant::now();
        let text = text_of(log_three_steps(&ctx).await);
        assert!(started.elapsed() >= 2 * LOG_STEP, "spread over the call");
        assert_eq!(text, "Tool with logging executed successfully");
        let mut sent = Vec::new();
        while let Ok(n) = rx.try_recv() {
            sent.push((n.method, n.params));
        }
        let expected: Vec<_> = LOG_STEPS
            .iter()
            .map(|s| ("notifications/message", json!({"level": "info", "data": s})))
            .collect();
        assert_eq!(sent, expected);
    }

    #[actix_rt::test]
    async fn logging_above_info_sends_nothing_but_still_completes() {
        let (notifier, mut rx) = Notifier::channel(None, Some(LogLevel::Warning));
        let ctx = builder().notifier(Some(notifier)).build();
        text_of(log_three_steps(&ctx).await);
        assert!(rx.try_recv().is_err());
    }

    #[actix_rt::test]
    async fn the_watched_resource_reads_as_text() {
        let result = match Watched.read(builder().build()).await {
            Ok(Outcome::Complete(r)) => r,
            other => panic!("expected contents, got {other:?}"),
        };
        assert_eq!(
            result.contents,
            vec![ResourceContents::text(
                WATCHED_URI,
                "text/plain",
                "Watched resource content"
            )]
        );
    }
}
