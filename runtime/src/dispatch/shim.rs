//! The legacy shim: on a legacy session the client cannot retry, so the runtime plays the
//! client's part. Each input-required round becomes real server-to-client requests (sent by
//! a [`Relay`] the session layer provides), the answers are collected under the handler's
//! keys, checked against the schemas of the form elicitations that asked for them, and the
//! handler runs again with them and its own state.
//!
//! The state never leaves the server here, so it is not sealed; for the same reason whatever
//! `inputResponses` or `requestState` a legacy client puts in its request is ignored: only
//! the runtime feeds a handler answers and state on this path.

use serde_json::{json, Map, Value};

use super::call::Call;
use super::mrtr;
use super::relay::{NoRelay, Shim};
use crate::handler::Outcome;
use crate::protocol::input::InputResponses;
use crate::protocol::{AnswerSchemas, McpError, Mismatch};

/// Why a shim flow failed, as `error.data.reason` names it.
pub(crate) mod reason {
    pub(crate) const SHIM_DISABLED: &str = "shim_disabled";
    pub(crate) const NO_STREAM: &str = "no_stream";
    pub(crate) const MISSING_CAPABILITIES: &str = "missing_capabilities";
    pub(crate) const ROUND_LIMIT: &str = "round_limit";
    pub(crate) const CLIENT_ERROR: &str = "client_error";
    pub(crate) const LEG_TIMEOUT: &str = "leg_timeout";
    pub(crate) const STREAM_CLOSED: &str = "stream_closed";
    pub(crate) const SESSION_ENDED: &str = "session_ended";
    pub(crate) const INVALID_ANSWER: &str = "invalid_answer";
}

/// The refusal a legacy request gets when its handler asks for input and the shim cannot
/// relay it.
pub(crate) fn refused(no: NoRelay) -> McpError {
    let (why, reason) = match no {
        NoRelay::Disabled => (
            "this server does not relay input requests to legacy sessions",
            reason::SHIM_DISABLED,
        ),
        NoRelay::NoStream => (
            "the request does not accept text/event-stream, where input requests travel",
            reason::NO_STREAM,
        ),
    };
    McpError::internal(format!(
        "input_required results need the 2026-07-28 stateless lifecycle (SEP-2322): {why}"
    ))
    .with_data(json!({ "reason": reason }))
}

/// Runs a legacy `tools/call`, `prompts/get` or `resources/read` to completion. `params` is
/// the request's, moved out of it: the flow reads them once and then may wait minutes for its
/// user, so it does not keep them.
pub(crate) async fn run(
    call: &Call,
    params: Option<Map<String, Value>>,
    shim: &Shim,
) -> Result<Map<String, Value>, McpError> {
    let mut rounds = 0;
    let result = flow(call, params, shim, &mut rounds).await;
    call.span.record("round", rounds);
    call.round
        .store(rounds, std::sync::atomic::Ordering::Relaxed);
    result
}

/// The flow; `rounds` counts the fulfilment rounds it went through.
async fn flow(
    call: &Call,
    params: Option<Map<String, Value>>,
    shim: &Shim,
    rounds: &mut u32,
) -> Result<Map<String, Value>, McpError> {
    let method = &call.request.method;
    // Only the target and the arguments are kept: a flow lasts as long as its user takes.
    let (target, arguments) = mrtr::take_target_and_arguments(method, params.unwrap_or_default())?;
    call.span.record("target", target.as_str());

    let mut answers = InputResponses::new();
    let mut state = None;
    let mut round = 0;
    loop {
        *rounds = round;
        let run = mrtr::run_handler(call, &target, arguments.clone(), answers, state, round);
        let outcome = tokio::time::timeout(shim.run_timeout, run)
            .await
            .map_err(|_| {
                tracing::warn!(round, "legacy handler run timed out");
                McpError::internal("Internal error: request timed out")
            })??;
        let ir = match outcome {
            Outcome::Complete(result) => return Ok(result.into_object()),
            Outcome::InputRequired(ir) => ir,
        };
        let relay = shim.relay.as_ref().map_err(|no| refused(*no))?;
        mrtr::admit(&ir, &call.scope.client_capabilities, missing_capabilities)?;
        if round == shim.max_rounds {
            tracing::warn!(round, "legacy shim round limit reached");
            return Err(McpError::internal(format!(
                "Handler still required input after {round} rounds"
            ))
            .with_data(json!({ "reason": reason::ROUND_LIMIT, "maxRounds": shim.max_rounds })));
        }
        let (requests, next_state) = ir.into_parts();
        // A state-only round needs nothing from the client: the handler runs again at once.
        answers = if requests.is_empty() {
            InputResponses::new()
        } else {
            // The round's schemas, kept while the client answers, are checked before the
            // handler sees an answer.
            let schemas = AnswerSchemas::of(&requests);
            let answers = relay.relay(requests).await?;
            mrtr::check_answers(&schemas, &answers, invalid_answer)?;
            answers
        };
        state = next_state;
        round += 1;
    }
}

/// An answer that does not fit its schema ends the flow with `-32602` (HTTP 200, as every
/// legacy error), naming the key and the problem.
fn invalid_answer(m: Mismatch) -> McpError {
    McpError::invalid_params(format!(
        "The client's answer to elicitation/create for '{}' does not match the requested schema: {}",
        m.key, m.problem
    ))
    .with_data(json!({ "reason": reason::INVALID_ANSWER, "key": m.key }))
}

/// The gate on a legacy session checks what the client declared at `initialize`. The code is
/// the modern `-32021` (in the implementation-defined server-error range, so a legacy client
/// reads it as a server error), with the same `data.requiredCapabilities`, and a message
/// that names what is missing.
fn missing_capabilities(missing: Value) -> McpError {
    let names = capability_names(&missing, "").join(", ");
    let mut error = McpError::missing_capabilities(missing);
    error.message = format!(
        "The client did not declare at initialize the capabilities this request needs: {names}"
    )
    .into();
    if let Some(Value::Object(data)) = &mut error.data {
        data.insert("reason".into(), json!(reason::MISSING_CAPABILITIES));
    }
    error
}

/// Dotted names of the leaves of a capabilities object: `elicitation.url`, `sampling`.
fn capability_names(caps: &Value, prefix: &str) -> Vec<String> {
    let Some(map) = caps.as_object() else {
        return Vec::new();
    };
    map.iter()
        .flat_map(|(key, sub)| {
            let name = if prefix.is_empty() {
                key.clone()
            } else {
                format!("{prefix}.{key}")
            };
            match sub.as_object() {
                Some(inner) if !inner.is_empty() => capability_names(sub, &name),
                _ => vec![name],
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capability_names_are_dotted_leaves() {
        let names = capability_names(
            &json!({"elicitation": {"url": {}}, "sampling": {}, "roots": {}}),
            "",
        );
        assert_eq!(names, ["elicitation.url", "roots", "sampling"]);
    }
}
