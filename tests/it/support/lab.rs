//! The `lab` catalog: test fixtures written against the handler API, one per behaviour the
//! suite drives through HTTP.
//!
//! Tools (`tools/call`):
//! - `ask_form`, `ask_url`, `ask_sampling`, `ask_sampling_tools`, `ask_roots`: ask for one kind
//!   of input each; `ask_several` asks for form, URL, sampling and roots at once. Each
//!   completes once every key it asked for has an answer, echoing answers, state and round in
//!   `structuredContent`.
//! - `ask_signup`: a form with a string, an integer, a titled enum and a boolean (the form a
//!   person fills in through a pseudo-terminal, `tests/it/terminal.rs`).
//! - `ask_sampling_context`: sampling with `includeContext` (needs `sampling.context`).
//! - `progress_then_ask`: reports progress, then asks for a form (an error may follow
//!   notifications).
//! - `needs_text`: a tool whose required argument may be missing.
//! - `ask_forever`: asks again every round, carrying a state (for the round cap).
//! - `come_back_later`: two input-required rounds that carry only a state (no questions: "come
//!   back later"), then completes with the time between its runs (for the client's pause).
//! - `boom`: panics. `slow`: sleeps far longer than the test request timeout. `nap`: sleeps
//!   20 ms, then completes (a handler that cannot finish in its first poll).
//! - `chatty`: progress and logs at every level, then completes. `quiet`: completes at once.
//! - `regional`: arguments mirrored into `Mcp-Param-Region` / `Mcp-Param-Count`.
//! - `publish`: publishes a change of the tenant's lists (`{"list": "tools"|"prompts"|…}`).
//! - `wait_cancel`: reports progress, then waits for the client to go away (see [`Probe`]).
//!
//! Prompts: `ask_form` (same name as the tool, for cross-method replay) and `summary` (a
//! required argument, with completions). Resources: `lab://static`, `lab://roots` (asks for
//! roots) and the template `lab://items/{id}` (with completions). Custom methods: `lab/ask`
//! (returns input-required, which a custom method may not), `lab/fake_input_required` (a raw
//! `"input_required"` result), `lab/task` (a `"task"` result) and `lab/empty` (`{}`).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use roundtrip_runtime::handler::{
    fn_prompt, fn_tool, Arguments, Catalog, Context, InputRequired, MethodHandler, MethodOutcome,
    Outcome, Prompt, PromptDescriptor, PromptOutcome, Resource, ResourceDescriptor,
    ResourceOutcome, ResourceTemplate, TemplateDescriptor, ToolDescriptor, ToolOutcome,
};
use roundtrip_runtime::protocol::content::Content;
use roundtrip_runtime::protocol::result::{
    CallToolResult, Completion, GetPromptResult, PromptMessage, ReadResourceResult,
    ResourceContents,
};
use roundtrip_runtime::protocol::{LogLevel, Sampling};
use roundtrip_runtime::tenancy::ListChanged;
use serde_json::{json, Map, Value};

/// Flags the `wait_cancel` tool sets, so a test can see what its handler saw.
#[derive(Debug, Clone, Default)]
pub(crate) struct Probe {
    /// The handler is running.
    pub(crate) started: Arc<AtomicBool>,
    /// The handler ended with its context cancelled.
    pub(crate) cancelled: Arc<AtomicBool>,
    /// The handler ran its (async) clean-up after `ctx.cancelled()` resolved.
    pub(crate) cleaned_up: Arc<AtomicBool>,
}

impl Probe {
    /// Waits (bounded) until `flag` is set; returns whether it was.
    pub(crate) async fn wait_for(flag: &AtomicBool) -> bool {
        for _ in 0..400 {
            if flag.load(Ordering::SeqCst) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        flag.load(Ordering::SeqCst)
    }
}

pub(crate) fn catalog(probe: &Probe) -> Catalog {
    let any_args = || json!({"type": "object"});
    let wait_probe = probe.clone();
    Catalog::builder()
        .tool(fn_tool(
            ToolDescriptor::new("ask_form", "Form elicitation.", any_args()),
            |ctx, _args| async move { ask_form(&ctx) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_url", "URL elicitation.", any_args()),
            |ctx, _args| async move {
                until_answered(
                    &ctx,
                    InputRequired::new().elicit_url(
                        "login",
                        "Sign in to the lab",
                        "https://example.com/authorize",
                    ),
                )
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_signup", "A form of four field types.", any_args()),
            |ctx, _args| async move {
                let ask = InputRequired::new().elicit("signup", "Create your lab account", signup_schema());
                until_answered(&ctx, ask)
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_sampling", "Sampling.", any_args()),
            |ctx, _args| async move {
                until_answered(&ctx, InputRequired::new().sample_text("llm", "Say hi", 10))
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_sampling_tools", "Sampling with tools.", any_args()),
            |ctx, _args| async move { until_answered(&ctx, sampling_with_tools()) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_sampling_context", "Sampling with server context.", any_args()),
            |ctx, _args| async move {
                let sampling = Sampling::new(10).user_text("Summarize").include_context("thisServer");
                until_answered(&ctx, InputRequired::new().sample_with("llm", sampling))
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("progress_then_ask", "Reports progress, then asks a form.", any_args()),
            |ctx, _args| async move {
                ctx.progress(1.0, Some(2.0), Some("half way"));
                until_answered(&ctx, InputRequired::new().elicit("form", "Name?", json!({"type": "object", "properties": {}})))
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("needs_text", "Needs a string argument `text`.", any_args()),
            |_ctx, args| async move { Ok(CallToolResult::text(args.str("text")?).into()) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_roots", "Roots.", any_args()),
            |ctx, _args| async move { until_answered(&ctx, InputRequired::new().list_roots("roots")) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_several", "Form, URL, sampling and roots at once.", any_args()),
            |ctx, _args| async move {
                until_answered(
                    &ctx,
                    InputRequired::new()
                        .elicit("form", "Your name?", name_schema())
                        .elicit_url("login", "Sign in", "https://example.com/authorize")
                        .sample_text("llm", "Say hi", 10)
                        .list_roots("roots"),
                )
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("ask_forever", "Asks again, every round.", any_args()),
            |ctx, _args| async move { ask_forever(&ctx) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("come_back_later", "Carries only state for two rounds, then completes.", any_args()),
            |ctx, _args| async move { come_back_later(&ctx) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("boom", "Panics.", any_args()),
            |_ctx, args| async move { boom(&args) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("slow", "Sleeps for a minute.", any_args()),
            |_ctx, _args| async move {
                tokio::time::sleep(Duration::from_secs(60)).await;
                Ok(CallToolResult::text("slept").into())
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("chatty", "Progress and logs, then a result.", any_args()),
            |ctx, _args| async move { chatty(ctx).await },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("nap", "Sleeps 20 ms, then completes.", any_args()),
            |_ctx, _args| async move {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(CallToolResult::text("rested").into())
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("quiet", "Completes at once.", any_args()),
            |_ctx, _args| async move { Ok(CallToolResult::text("quiet").into()) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new(
                "regional",
                "Arguments mirrored into headers.",
                json!({"type": "object", "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "count": {"type": "integer", "x-mcp-header": "Count"},
                    "note": {"type": "string"}
                }}),
            ),
            |_ctx, args| async move {
                let mut r = CallToolResult::text("regional");
                r.structured_content = Some(Value::Object(args.as_map().clone()));
                Ok(r.into())
            },
        ))
        .tool(fn_tool(
            ToolDescriptor::new(
                "publish",
                "Publishes a change of the tenant's lists.",
                json!({"type": "object", "properties": {"list": {"type": "string"}}, "required": ["list"]}),
            ),
            |ctx, args| async move { publish(&ctx, &args) },
        ))
        .tool(fn_tool(
            ToolDescriptor::new("wait_cancel", "Waits for the client to leave.", any_args()),
            move |ctx, _args| wait_cancel(ctx, wait_probe.clone()),
        ))
        .prompt(fn_prompt(
            PromptDescriptor::new("ask_form", "A prompt that asks a form first."),
            |ctx, _args| async move { ask_form_prompt(&ctx) },
        ))
        .prompt(Arc::new(Summary))
        .resource(Arc::new(Static))
        .resource(Arc::new(Roots))
        .template(Arc::new(Items))
        .method(Arc::new(Custom("lab/ask", |_| {
            Ok(Outcome::InputRequired(
                InputRequired::new().elicit("form", "Your name?", name_schema()),
            ))
        })))
        .method(Arc::new(Custom("lab/fake_input_required", |_| {
            Ok(Outcome::Complete(json!({
                "resultType": "input_required",
                "inputRequests": {"form": {"method": "elicitation/create", "params": {"message": "m", "requestedSchema": {"type": "object", "properties": {}}}}}
            })))
        })))
        .method(Arc::new(Custom("lab/task", |_| {
            Ok(Outcome::Complete(json!({
                "resultType": "task",
                "task": {"taskId": "task-1", "status": "working", "createdAt": "2026-07-28T00:00:00Z", "lastUpdatedAt": "2026-07-28T00:00:00Z", "ttlMs": null}
            })))
        })))
        .method(Arc::new(Custom("lab/empty", |_| Ok(Outcome::Complete(json!({}))))))
        .build()
}

pub(crate) fn name_schema() -> Value {
    json!({"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}, "required": ["name"]})
}

/// `ask_signup`'s form: a string with a minimum length, an integer with bounds, a titled
/// single-select enum, and an optional boolean with a default.
pub(crate) fn signup_schema() -> Value {
    json!({
        "type": "object",
        "required": ["name", "age", "plan"],
        "properties": {
            "name": {"type": "string", "title": "Name", "minLength": 2},
            "age": {"type": "integer", "title": "Age", "minimum": 0, "maximum": 150},
            "plan": {"type": "string", "title": "Plan", "oneOf": [
                {"const": "free", "title": "Free"}, {"const": "pro", "title": "Pro"}]},
            "newsletter": {"type": "boolean", "title": "Newsletter", "default": false},
        },
    })
}

/// Completes once every key `ask` names has an answer; otherwise asks for all of them.
fn until_answered(ctx: &Context, ask: InputRequired) -> ToolOutcome {
    if !ask
        .requests()
        .keys()
        .all(|k| ctx.input_response(k).is_some())
    {
        return ask.into();
    }
    let answers: Map<String, Value> = ctx
        .input_responses()
        .iter()
        .map(|(k, v)| (k.clone(), Value::Object(v.as_object().clone())))
        .collect();
    let mut r = CallToolResult::text("answered");
    r.structured_content = Some(json!({
        "answers": answers,
        "state": ctx.request_state(),
        "round": ctx.round(),
    }));
    r.into()
}

fn ask_form(ctx: &Context) -> ToolOutcome {
    until_answered(
        ctx,
        InputRequired::new()
            .elicit("form", "Your name?", name_schema())
            .state("form-state"),
    )
}

fn ask_form_prompt(ctx: &Context) -> PromptOutcome {
    if ctx.input_response("form").is_none() {
        return InputRequired::new()
            .elicit("form", "Your name?", name_schema())
            .state("form-state")
            .into();
    }
    GetPromptResult {
        description: Some("answered".into()),
        messages: vec![PromptMessage::user(Content::text("answered"))],
    }
    .into()
}

fn sampling_with_tools() -> InputRequired {
    InputRequired::new().sample(
        "llm",
        json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Look it up"}}],
            "maxTokens": 10,
            "tools": [{"name": "lookup", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"}
        }),
    )
}

fn ask_forever(ctx: &Context) -> ToolOutcome {
    let round = ctx.round();
    InputRequired::new()
        .elicit("again", format!("Round {round}: once more?"), name_schema())
        .state(format!("round-{round}"))
        .into()
}

/// Microseconds on a monotonic clock that starts with the first call: what `come_back_later`
/// keeps in its state.
fn lab_micros() -> u64 {
    static START: LazyLock<Instant> = LazyLock::new(Instant::now);
    u64::try_from(START.elapsed().as_micros()).unwrap_or(u64::MAX)
}

/// Each run adds its time to the state; the first two return that state and nothing to ask,
/// the third completes with `gapsMicros`, the time between consecutive runs.
fn come_back_later(ctx: &Context) -> ToolOutcome {
    let mut runs: Vec<u64> = ctx.request_state_json().unwrap_or_default();
    runs.push(lab_micros());
    if runs.len() < 3 {
        return InputRequired::new().state_json(&runs)?.into();
    }
    let gaps: Vec<u64> = runs.windows(2).map(|w| w[1].saturating_sub(w[0])).collect();
    let mut r = CallToolResult::text("came back");
    r.structured_content = Some(json!({"gapsMicros": gaps, "round": ctx.round()}));
    r.into()
}

fn boom(args: &Arguments) -> ToolOutcome {
    if args.get("spare").is_none() {
        panic!("deliberate panic in the lab's boom tool");
    }
    Ok(CallToolResult::text("spared").into())
}

async fn chatty(ctx: Context) -> ToolOutcome {
    ctx.progress(1.0, Some(3.0), Some("one"));
    for level in [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Warning,
        LogLevel::Error,
    ] {
        ctx.log(level, Some("lab"), json!({"said": level.as_str()}));
    }
    tokio::task::yield_now().await;
    ctx.progress(2.0, Some(3.0), None);
    // Not increasing: the runtime drops it.
    ctx.progress(2.0, Some(3.0), None);
    tokio::task::yield_now().await;
    ctx.progress(3.0, Some(3.0), Some("three"));
    Ok(CallToolResult::text("chatty done").into())
}

fn publish(ctx: &Context, args: &Arguments) -> ToolOutcome {
    let event = match args.str("list")? {
        "tools" => ListChanged::Tools,
        "prompts" => ListChanged::Prompts,
        "resources" => ListChanged::Resources,
        uri => ListChanged::ResourceUpdated(uri.to_owned()),
    };
    ctx.tenant().publish(event);
    Ok(CallToolResult::text("published").into())
}

/// Sets `probe.cancelled` when the handler ends (normally or by being dropped) with its
/// context cancelled, whichever way it ends.
struct CancelWitness(Context, Arc<AtomicBool>);

impl Drop for CancelWitness {
    fn drop(&mut self) {
        if self.0.is_cancelled() {
            self.1.store(true, Ordering::SeqCst);
        }
    }
}

async fn wait_cancel(ctx: Context, probe: Probe) -> ToolOutcome {
    let _witness = CancelWitness(ctx.clone(), probe.cancelled.clone());
    probe.started.store(true, Ordering::SeqCst);
    ctx.progress(1.0, None, Some("waiting for the client to leave"));
    ctx.cancelled().await;
    // Clean-up that itself awaits: the runtime's cancel grace lets it finish.
    tokio::time::sleep(Duration::from_millis(20)).await;
    probe.cleaned_up.store(true, Ordering::SeqCst);
    Ok(CallToolResult::text("cancelled").into())
}

/// A prompt with a required argument and completions for it.
struct Summary;

#[async_trait(?Send)]
impl Prompt for Summary {
    fn descriptor(&self) -> PromptDescriptor {
        PromptDescriptor::new("summary", "Summarises a topic.").argument(
            "topic",
            "What to summarise",
            true,
        )
    }

    async fn get(&self, _ctx: Context, args: Arguments) -> PromptOutcome {
        let topic = args.str("topic")?;
        GetPromptResult {
            description: None,
            messages: vec![PromptMessage::user(Content::text(format!(
                "Summarise {topic}."
            )))],
        }
        .into()
    }

    fn complete(&self, argument: &str, value: &str) -> Completion {
        complete_from(&["rust", "rest", "ruby"], argument == "topic", value)
    }
}

fn complete_from(options: &[&str], known_argument: bool, prefix: &str) -> Completion {
    let values = if known_argument {
        options
            .iter()
            .filter(|o| o.starts_with(prefix))
            .map(|o| (*o).to_owned())
            .collect()
    } else {
        Vec::new()
    };
    Completion {
        values,
        total: None,
        has_more: false,
    }
}

struct Static;

#[async_trait(?Send)]
impl Resource for Static {
    fn descriptor(&self) -> ResourceDescriptor {
        ResourceDescriptor::new("lab://static", "Static", "text/plain")
    }

    async fn read(&self, _ctx: Context) -> ResourceOutcome {
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                "lab://static",
                "text/plain",
                "static text",
            )],
        }
        .into()
    }
}

struct Roots;

#[async_trait(?Send)]
impl Resource for Roots {
    fn descriptor(&self) -> ResourceDescriptor {
        ResourceDescriptor::new("lab://roots", "Roots", "application/json")
    }

    async fn read(&self, ctx: Context) -> ResourceOutcome {
        let Some(roots) = ctx.input_response("roots").and_then(|a| a.roots()) else {
            return InputRequired::new().list_roots("roots").into();
        };
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                "lab://roots",
                "application/json",
                Value::Array(roots.clone()).to_string(),
            )],
        }
        .into()
    }
}

struct Items;

#[async_trait(?Send)]
impl ResourceTemplate for Items {
    fn descriptor(&self) -> TemplateDescriptor {
        TemplateDescriptor::new("lab://items/{id}", "Items", "text/plain")
    }

    async fn read(
        &self,
        _ctx: Context,
        uri: &str,
        vars: BTreeMap<String, String>,
    ) -> ResourceOutcome {
        let id = vars.get("id").cloned().unwrap_or_default();
        ReadResourceResult {
            contents: vec![ResourceContents::text(
                uri,
                "text/plain",
                format!("item {id}"),
            )],
        }
        .into()
    }

    fn complete(&self, argument: &str, value: &str) -> Completion {
        complete_from(&["alpha", "beta", "gamma"], argument == "id", value)
    }
}

/// A custom method answering with a fixed outcome.
struct Custom(&'static str, fn(&Context) -> MethodOutcome);

#[async_trait(?Send)]
impl MethodHandler for Custom {
    fn method(&self) -> &str {
        self.0
    }

    async fn handle(&self, ctx: Context, _params: Map<String, Value>) -> MethodOutcome {
        (self.1)(&ctx)
    }
}
