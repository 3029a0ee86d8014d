//! The input-required loop (SEP-2322) behind `call_tool`, `get_prompt` and `read_resource`.
//!
//! Each round is a new request (a new JSON-RPC id) with the original params, this round's
//! answers under the server's keys, and the server's `requestState` echoed byte for byte, or
//! left out when the server sent none. Nothing of a flow leaks into another call: the state
//! and answers live in this loop only. Every question of a round is put to its handler at
//! once, and the first failure abandons the others. A round with state and no questions
//! ("come back later") is retried after a pause: 50 ms, doubling up to 250 ms, back to 50 ms
//! after a round with questions. After `max_rounds` input-required results the flow stops
//! with [`Error::RoundsExceeded`], carrying the last questions and state.

use std::time::Duration;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::handler::{InputContext, Unanswered};
use crate::protocol::input::{InputRequired, InputResponses};
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::results::{Classified, Outcome};
use crate::session::Session;
use crate::simple::{all_tools, malformed};

/// The input-required results a flow fulfils before it gives up, unless configured.
pub const DEFAULT_MAX_ROUNDS: u32 = 10;
const FIRST_PAUSE: Duration = Duration::from_millis(50);
const LONGEST_PAUSE: Duration = Duration::from_millis(250);

/// What a retry adds to the original params: the answers and the echoed state.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Retry {
    /// The answers to the previous round's questions, under its keys.
    pub input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, unchanged.
    pub request_state: Option<String>,
}

impl Retry {
    /// The retry of `round` with `answers`.
    pub fn of(round: &InputRequired, answers: Option<InputResponses>) -> Self {
        Self {
            input_responses: answers,
            request_state: round.request_state.clone(),
        }
    }
}

/// The pause before retrying a round that carried only state.
#[derive(Debug)]
struct Pace {
    next: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Self { next: FIRST_PAUSE }
    }
}

impl Pace {
    /// This pause; the next one is twice as long, up to the longest.
    fn take(&mut self) -> Duration {
        let now = self.next;
        self.next = (self.next * 2).min(LONGEST_PAUSE);
        now
    }

    fn reset(&mut self) {
        self.next = FIRST_PAUSE;
    }
}

/// One round: `base` params plus `retry`, classified. For `tools/call`, a -32020 for a tool
/// the client has not listed yet (so it could not mirror its `x-mcp-header` arguments) lists
/// the tools and tries once more.
pub(crate) async fn round(
    session: &Session,
    method: &str,
    base: &Map<String, Value>,
    retry: &Retry,
    context: &InputContext,
) -> Result<Outcome<Map<String, Value>>, Error> {
    let mut params = base.clone();
    if let Some(answers) = &retry.input_responses {
        let answers = serde_json::to_value(answers)
            .map_err(|e| malformed(method, crate::protocol::Malformed::new("inputResponses", e)))?;
        params.insert("inputResponses".into(), answers);
    }
    if let Some(state) = &retry.request_state {
        params.insert("requestState".into(), Value::String(state.clone()));
    }
    let result = match session.call(method, params.clone(), context).await {
        Err(Error::Rpc { error, .. })
            if error.code == RpcError::HEADER_MISMATCH && unlisted_tool(session, method, base) =>
        {
            all_tools(session).await?;
            session.call(method, params, context).await?
        }
        other => other?,
    };
    match Classified::of(result).map_err(|source| malformed(method, source))? {
        Classified::Complete(result) => Ok(Outcome::Complete(result)),
        Classified::InputRequired(ir)
            if ir.input_requests.is_empty() && ir.request_state.is_none() =>
        {
            Err(Error::EmptyInputRequired {
                method: method.to_owned(),
            })
        }
        Classified::InputRequired(ir) => Ok(Outcome::InputRequired(ir)),
        Classified::Unknown(result_type) => Err(Error::UnknownResultType {
            method: method.to_owned(),
            result_type,
        }),
    }
}

fn unlisted_tool(session: &Session, method: &str, base: &Map<String, Value>) -> bool {
    method == "tools/call"
        && base
            .get("name")
            .and_then(Value::as_str)
            .is_some_and(|name| !session.knows_tool(name))
}

/// Drives `method` to its complete result.
pub(crate) async fn drive(
    session: &Session,
    method: &str,
    base: Map<String, Value>,
    context: &InputContext,
    max_rounds: u32,
) -> Result<Map<String, Value>, Error> {
    let mut retry = Retry::default();
    let mut pace = Pace::default();
    let mut rounds = 0;
    loop {
        let ir = match round(session, method, &base, &retry, context).await? {
            Outcome::Complete(result) => return Ok(result),
            Outcome::InputRequired(ir) => ir,
        };
        if rounds == max_rounds {
            return Err(Error::RoundsExceeded {
                method: method.to_owned(),
                rounds,
                last: ir,
            });
        }
        rounds += 1;
        let answers = if ir.input_requests.is_empty() {
            tokio::time::sleep(pace.take()).await;
            None
        } else {
            pace.reset();
            Some(fulfil(session, method, &ir, context).await?)
        };
        retry = Retry::of(&ir, answers);
    }
}

/// Answers every question of `round` at once. A question no handler takes fails the round
/// before any handler is asked.
pub(crate) async fn fulfil(
    session: &Session,
    method: &str,
    round: &InputRequired,
    context: &InputContext,
) -> Result<InputResponses, Error> {
    for (key, request) in &round.input_requests {
        if let Some(kind) = session.handlers.missing(request) {
            return Err(Error::MissingHandler {
                method: method.to_owned(),
                input_method: kind,
                key: Some(key.clone()),
            });
        }
    }
    let asks = round
        .input_requests
        .iter()
        .map(|(key, request)| async move {
            let context = InputContext {
                key: Some(key.clone()),
                ..context.clone()
            };
            match session.handlers.answer(request.clone(), &context).await {
                Ok(answer) => Ok((key.clone(), answer)),
                Err(Unanswered::Missing(kind)) => Err(Error::MissingHandler {
                    method: method.to_owned(),
                    input_method: kind,
                    key: Some(key.clone()),
                }),
                Err(Unanswered::Failed(kind, source)) => Err(Error::Handler {
                    method: method.to_owned(),
                    input_method: kind,
                    key: Some(key.clone()),
                    source,
                }),
            }
        });
    let answers = futures_util::future::try_join_all(asks).await?;
    Ok(answers.into_iter().collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_only_pauses_double_from_50_ms_up_to_250_ms() {
        let mut pace = Pace::default();
        let pauses: Vec<u128> = (0..5).map(|_| pace.take().as_millis()).collect();
        assert_eq!(pauses, [50, 100, 200, 250, 250]);
        pace.reset();
        assert_eq!(pace.take(), Duration::from_millis(50));
    }
}
