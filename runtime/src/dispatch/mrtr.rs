//! The three methods that may answer input-required (`tools/call`, `prompts/get`,
//! `resources/read`): validate the retry, open the state, check the answers against the
//! schemas the previous round asked with, run the handler, then gate, seal and shape what it
//! returned.

use std::cell::OnceCell;
use std::sync::Arc;
use std::time::SystemTime;

use serde::Serialize;
use serde_json::{Map, Value};

use super::call::Call;
use super::gate;
use super::protection::{Opened, Protection};
use crate::handler::{
    Arguments, Catalog, Context, HandlerError, InputRequired, Outcome, Prompt, Resource,
    ResourceTemplate, TemplateVars, Tool,
};
use crate::protocol::input::{parse_input_responses, InputResponses};
use crate::protocol::result::{to_object, CallToolResult, InputRequiredResult};
use crate::protocol::{AnswerSchemas, CheckError, ClientCapabilities, McpError, Method, Mismatch};
use crate::sealing::{arguments_digest, Binding, ReplayCache};

/// What the handler produced: a complete result before stamping, or an input-required result
/// ready to write.
pub(crate) enum Produced {
    Complete(Completed),
    InputRequired(InputRequiredResult),
}

/// A handler's complete result, before stamping: a tool's stays typed until it is written.
#[derive(Debug)]
pub(crate) enum Completed {
    Tool(CallToolResult),
    Object(Map<String, Value>),
}

impl Completed {
    pub(crate) fn into_object(self) -> Map<String, Value> {
        match self {
            Self::Tool(r) => to_object(&r),
            Self::Object(r) => r,
        }
    }
}

/// Runs one round of an input-required-capable method.
/// `arguments` and `input_responses` are the request's `params.arguments` and
/// `params.inputResponses`, which the caller moved out of the request: the handler gets the
/// arguments shared with the state's binding, and only it reads the answers, so neither is
/// copied.
pub(crate) async fn run(
    call: &Call,
    arguments: Option<Value>,
    input_responses: Option<Value>,
    protection: &Protection,
    max_rounds: u32,
    replay: &dyn ReplayCache,
) -> Result<Produced, McpError> {
    let no_params = Map::new();
    let params = call.request.params.as_ref().unwrap_or(&no_params);
    let method = &call.request.method;
    let target = target_of(method, params)?;
    let arguments = Arc::new(arguments_of(arguments)?);
    call.span.record("target", target);
    let input_responses = parse_input_responses(input_responses)?;

    // The argument digest is needed only to open or seal a state: computed then, and once.
    let digest = OnceCell::new();
    let binding = || Binding {
        tenant: call.tenant.slug(),
        principal: call.principal.id(),
        method: method.as_str(),
        target,
        args_digest: *digest.get_or_init(|| arguments_digest(&arguments)),
    };
    let token = match params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(token)) => Some(token.as_str()),
        Some(other) => {
            tracing::warn!(
                kind = json_kind(other),
                "rejected requestState: not a string"
            );
            return Err(McpError::invalid_request_state());
        }
    };
    let opened = match token {
        None => Opened::default(),
        Some(token) => protection.open(&binding(), token, call.now()).await?,
    };
    call.span.record("round", opened.round);
    call.round
        .store(opened.round, std::sync::atomic::Ordering::Relaxed);
    // Only a sealed state carries the schemas: without one, there is nothing to check against.
    check_answers(&opened.answer_schemas, &input_responses, |m| {
        McpError::invalid_params(m.to_string())
    })?;
    // A single-use tool's state is claimed before its handler runs, so that two requests
    // presenting it at once cannot both run; the claim is given back (dropped) unless the
    // run completes.
    let claim = match token {
        Some(token) if *method == Method::ToolsCall && call.catalog.single_use_state(target) => {
            protection.claim(replay, token, &opened, call.now()).await?
        }
        _ => None,
    };

    match run_handler(
        call,
        target,
        Arguments::shared(arguments.clone()),
        input_responses,
        opened.state,
        opened.round,
    )
    .await?
    {
        Outcome::Complete(result) => {
            if let Some(claim) = claim {
                claim.keep();
            }
            Ok(Produced::Complete(result))
        }
        Outcome::InputRequired(ir) => {
            input_required(ir, call, protection, &binding(), opened.round, max_rounds)
                .map(Produced::InputRequired)
        }
    }
}

/// One run of the handler `call` targets, with these answers and this (opened) state: the
/// step a modern retry and a legacy shim round share.
pub(crate) async fn run_handler(
    call: &Call,
    target: &str,
    arguments: Arguments,
    input_responses: InputResponses,
    state: Option<String>,
    round: u32,
) -> Result<Outcome<Completed>, McpError> {
    let method = &call.request.method;
    let handler_run = prepare(method, &call.catalog, target, arguments)?;
    let ctx = call
        .context()
        .input_responses(input_responses)
        .request_state(state)
        .round(round)
        .build();
    match handler_run.run(ctx).await {
        Ok(outcome) => Ok(outcome),
        // A tool's complaint about its arguments is a tool error the model can read and act
        // on, not a protocol error (the spec puts bad input values in an `isError` result).
        Err(HandlerError::InvalidParams(message)) if *method == Method::ToolsCall => Ok(
            Outcome::Complete(Completed::Tool(CallToolResult::error(message))),
        ),
        Err(e) => Err(e.into_wire(method.as_str())),
    }
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Shapes an input-required outcome: at least one of requests or state, the capability gate
/// against this request's declaration, the round cap, then sealing and stamping.
fn input_required(
    ir: InputRequired,
    call: &Call,
    protection: &Protection,
    binding: &Binding<'_>,
    round: u32,
    max_rounds: u32,
) -> Result<InputRequiredResult, McpError> {
    admit(
        &ir,
        &call.scope.client_capabilities,
        McpError::missing_capabilities,
    )?;
    if protection.counts_rounds() && round + 1 > max_rounds {
        tracing::warn!(round, max_rounds, "input-required round limit reached");
        return Err(McpError::internal(format!(
            "Input-required round limit ({max_rounds}) reached"
        ))
        .with_data(serde_json::json!({ "maxRounds": max_rounds })));
    }
    let (requests, state) = ir.into_parts();
    // Issued now, not at the request's time: a handler may take long, and the state's
    // lifetime (as short as a second for a tenant that sets it so) counts from its issue.
    let sealed = protection.seal(
        binding,
        round + 1,
        state.as_deref(),
        &requests,
        SystemTime::now(),
    )?;
    Ok(InputRequiredResult::new(
        requests,
        sealed,
        call.view.server_meta(),
    ))
}

/// What any input-required outcome must be, on either era: it asks for something (a handler
/// bug otherwise: an internal error), and only for what `declared` has (otherwise the error
/// `missing` phrases from the capabilities it lacks).
pub(crate) fn admit(
    ir: &InputRequired,
    declared: &ClientCapabilities,
    missing: impl FnOnce(Value) -> McpError,
) -> Result<(), McpError> {
    if ir.is_empty() {
        tracing::error!("handler returned input-required with neither input requests nor state");
        return Err(McpError::internal(
            "Internal error: empty input-required result",
        ));
    }
    match gate::missing_capabilities(ir.requests(), declared) {
        Some(lacking) => Err(missing(lacking)),
        None => Ok(()),
    }
}

/// Checks a round's answers against the schemas its form elicitations asked with, on either
/// era: a mismatch is the error `mismatch` phrases; schemas that cannot be read (a bug, since
/// only the runtime writes them) are an internal error.
pub(crate) fn check_answers(
    schemas: &AnswerSchemas,
    answers: &InputResponses,
    mismatch: impl FnOnce(Mismatch) -> McpError,
) -> Result<(), McpError> {
    match schemas.check(answers) {
        Ok(()) => Ok(()),
        Err(CheckError::Mismatch(m)) => {
            tracing::info!(key = %m.key, problem = %m.problem, "refused an answer that does not match its schema");
            Err(mismatch(m))
        }
        Err(CheckError::Unreadable(e)) => {
            tracing::error!(error = %e, "could not read the answer schemas");
            Err(McpError::internal("Internal error"))
        }
    }
}

/// The target and the arguments of params the caller owns: the target copied, the arguments
/// moved out (empty when absent or null) rather than copied, and the rest of the params
/// dropped.
pub(crate) fn take_target_and_arguments(
    method: &Method,
    mut params: Map<String, Value>,
) -> Result<(String, Arguments), McpError> {
    let target = target_of(method, &params)?.to_owned();
    let arguments = arguments_of(params.remove("arguments"))?;
    Ok((target, Arguments::new(arguments)))
}

/// The name (or URI) the request targets, checked and borrowed from its params.
fn target_of<'p>(method: &Method, params: &'p Map<String, Value>) -> Result<&'p str, McpError> {
    let key = method.target_key().unwrap_or("name");
    match params.get(key) {
        Some(Value::String(s)) => Ok(s.as_str()),
        Some(_) => Err(McpError::invalid_params(format!(
            "params.{key} must be a string"
        ))),
        None => Err(McpError::invalid_params(format!(
            "Missing required params.{key}"
        ))),
    }
}

/// A request's `params.arguments`, checked: an object, or empty when absent or null.
fn arguments_of(arguments: Option<Value>) -> Result<Map<String, Value>, McpError> {
    match arguments {
        None | Some(Value::Null) => Ok(Map::new()),
        Some(Value::Object(a)) => Ok(a),
        Some(_) => Err(McpError::invalid_params(
            "params.arguments must be an object",
        )),
    }
}

/// The handler a request targets, found and checked, with what it runs on. An enum rather
/// than a boxed closure, so that running it allocates nothing beyond the handler's own
/// future: [`HandlerRun::run`] is awaited inside the round's future. It borrows the handler
/// from the call's catalog, which outlives the run: no reference count per request.
enum HandlerRun<'a> {
    Tool(&'a dyn Tool, Arguments),
    Prompt(&'a dyn Prompt, Arguments),
    Resource(&'a dyn Resource),
    Template(&'a dyn ResourceTemplate, &'a str, TemplateVars),
}

impl HandlerRun<'_> {
    async fn run(self, ctx: Context) -> Result<Outcome<Completed>, HandlerError> {
        match self {
            Self::Tool(tool, args) => map_outcome(tool.call(ctx, args).await, Completed::Tool),
            Self::Prompt(prompt, args) => map_outcome(prompt.get(ctx, args).await, object),
            Self::Resource(resource) => map_outcome(resource.read(ctx).await, object),
            Self::Template(template, uri, vars) => {
                map_outcome(template.read(ctx, uri, vars).await, object)
            }
        }
    }
}

/// Finds the handler and checks what can be checked before running it.
fn prepare<'a>(
    method: &Method,
    catalog: &'a Catalog,
    target: &'a str,
    args: Arguments,
) -> Result<HandlerRun<'a>, McpError> {
    let offered = match method {
        Method::ToolsCall => catalog.has_tools(),
        Method::PromptsGet => catalog.has_prompts(),
        _ => catalog.has_resources(),
    };
    if !offered {
        return Err(McpError::method_not_found(method.as_str()));
    }
    match method {
        Method::ToolsCall => {
            let (tool, _) = catalog
                .tool(target)
                .ok_or_else(|| McpError::invalid_params(format!("Unknown tool: {target}")))?;
            Ok(HandlerRun::Tool(tool.as_ref(), args))
        }
        Method::PromptsGet => {
            let prompt = catalog
                .prompt(target)
                .ok_or_else(|| McpError::invalid_params(format!("Unknown prompt: {target}")))?;
            if let Some(missing) = prompt
                .descriptor()
                .required_arguments()
                .find(|a| args.get(a).is_none())
            {
                return Err(McpError::invalid_params(format!(
                    "Missing required argument '{missing}' for prompt {target}"
                )));
            }
            Ok(HandlerRun::Prompt(prompt.as_ref(), args))
        }
        _ => {
            if let Some(resource) = catalog.resource(target) {
                return Ok(HandlerRun::Resource(resource.as_ref()));
            }
            let (template, vars) = catalog
                .template_for(target)
                .ok_or_else(|| McpError::resource_not_found(target))?;
            Ok(HandlerRun::Template(template.as_ref(), target, vars))
        }
    }
}

fn object<T: Serialize>(r: T) -> Completed {
    Completed::Object(to_object(&r))
}

fn map_outcome<T>(
    outcome: Result<Outcome<T>, HandlerError>,
    f: impl FnOnce(T) -> Completed,
) -> Result<Outcome<Completed>, HandlerError> {
    outcome.map(|o| match o {
        Outcome::Complete(r) => Outcome::Complete(f(r)),
        Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
    })
}
