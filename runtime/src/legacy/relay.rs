//! The shim's way to a legacy client: each input request becomes a real JSON-RPC request on
//! the originating request's own stream (SEP-2260), registered with the LegacyBridge before
//! it is written, and awaited with its own timeout.
//!
//! The legs of one round are sent **concurrently**: the client sees every question of the
//! round at once, and the round takes as long as its slowest answer rather than the sum. The
//! first leg that fails ends the round; the others are forgotten (a late answer to one of
//! them is then a stray). A leg that is dropped (the flow was cancelled or its stream closed)
//! forgets itself at the bridge.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use actix::Addr;
use async_trait::async_trait;
use futures_util::future::try_join_all;
use serde_json::{json, Value};
use tokio::sync::oneshot;

use super::bridge::{Expect, Forget, LegacyBridge};
use super::sessions::random_id;
use super::SessionId;
use crate::budget::{Account, Charge};
use crate::dispatch::shim::reason;
use crate::dispatch::Relay;
use crate::handler::Notifier;
use crate::protocol::input::{InputRequest, InputRequests, InputResponse, InputResponses};
use crate::protocol::{McpError, RequestId};

#[derive(Debug)]
pub(crate) struct SessionRelay {
    pub(crate) session: SessionId,
    pub(crate) bridge: Addr<LegacyBridge>,
    /// The originating request's stream.
    pub(crate) stream: Notifier,
    pub(crate) leg_timeout: Duration,
    /// The session's counter: leg ids are unique in the session.
    pub(crate) next_leg: Arc<AtomicU64>,
    /// Who the client's answers are charged to: the session's caller.
    pub(crate) account: Account,
    /// The charges of the answers this flow received, kept as long as the flow (the relay
    /// is dropped with it).
    pub(crate) answers: Mutex<Vec<Charge>>,
}

#[async_trait(?Send)]
impl Relay for SessionRelay {
    async fn relay(&self, requests: InputRequests) -> Result<InputResponses, McpError> {
        let legs = requests.into_iter().map(|(key, request)| async move {
            let answer = self.leg(&key, request).await?;
            Ok::<_, McpError>((key, answer))
        });
        Ok(try_join_all(legs).await?.into_iter().collect())
    }
}

/// Ends a leg however it ends: forgets it at the bridge, and tells the client a request it
/// was sent and has not answered is withdrawn (its round failed, or its flow was
/// cancelled), so it stops showing a question nobody waits for.
struct LegGuard<'a> {
    relay: &'a SessionRelay,
    id: RequestId,
    /// Written to the client and not answered.
    outstanding: bool,
    why: &'static str,
}

impl Drop for LegGuard<'_> {
    fn drop(&mut self) {
        self.relay.bridge.do_send(Forget {
            session: self.relay.session.clone(),
            id: self.id.clone(),
        });
        if self.outstanding {
            self.relay.stream.cancelled(&self.id, self.why);
        }
    }
}

impl SessionRelay {
    async fn leg(&self, key: &str, request: InputRequest) -> Result<InputResponse, McpError> {
        let n = self.next_leg.fetch_add(1, Ordering::Relaxed);
        let id = RequestId::String(format!("roundtrip-{n}"));
        let (method, params) = legacy_params(request);
        let (tx, rx) = oneshot::channel();
        // The guard comes first: once `send` is called the registration is queued, and a
        // flow dropped while waiting for it must still forget it.
        let mut guard = LegGuard {
            relay: self,
            id: id.clone(),
            outstanding: false,
            why: "withdrawn",
        };
        self.bridge
            .send(Expect {
                session: self.session.clone(),
                id: id.clone(),
                answer: tx,
                account: self.account.clone(),
            })
            .await
            .map_err(|_| McpError::internal("Internal error: legacy bridge unavailable"))?;
        let fail = |reason: &str, message: String| {
            McpError::internal(message)
                .with_data(json!({ "reason": reason, "key": key, "method": method }))
        };
        if !self.stream.request(id.clone(), method, params).await {
            return Err(fail(
                reason::STREAM_CLOSED,
                format!("The stream closed before {method} for '{key}' could be sent"),
            ));
        }
        guard.outstanding = true;
        tracing::debug!(%id, method, key, "legacy leg sent");
        let answer = tokio::time::timeout(self.leg_timeout, rx).await;
        guard.outstanding = answer.is_err();
        let answer = answer.map(|received| {
            received.map(|(answer, charge)| {
                self.answers
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push(charge);
                answer
            })
        });
        match answer {
            Err(_) => {
                tracing::info!(%id, method, key, "legacy leg timed out");
                guard.why = "timed out";
                Err(fail(
                    reason::LEG_TIMEOUT,
                    format!(
                        "The client did not answer {method} for '{key}' within {} s",
                        self.leg_timeout.as_secs()
                    ),
                ))
            }
            Ok(Err(_)) => Err(fail(
                reason::SESSION_ENDED,
                format!("The session ended while {method} for '{key}' was pending"),
            )),
            Ok(Ok(Err(error))) => {
                let detail = error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("no message");
                let mut e = fail(
                    reason::CLIENT_ERROR,
                    format!("The client answered {method} for '{key}' with an error: {detail}"),
                );
                if let Some(Value::Object(data)) = &mut e.data {
                    data.insert("clientError".into(), error);
                }
                Err(e)
            }
            Ok(Ok(Ok(Value::Object(result)))) => Ok(InputResponse::new(result)),
            Ok(Ok(Ok(_))) => Err(fail(
                reason::CLIENT_ERROR,
                format!("The client's answer to {method} for '{key}' is not an object"),
            )),
        }
    }
}

/// The params as a legacy client expects them: URL-mode elicitation needs an
/// `elicitationId` on the 2025-11-25 wire (a handler-supplied one is kept).
fn legacy_params(request: InputRequest) -> (&'static str, Value) {
    let (method, params) = request.into_parts();
    let mut params = params.unwrap_or_else(|| json!({}));
    if method == "elicitation/create" {
        if let Value::Object(p) = &mut params {
            if p.get("mode").and_then(Value::as_str) == Some("url") {
                p.entry("elicitationId")
                    .or_insert_with(|| Value::String(random_id()));
            }
        }
    }
    (method, params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_elicitation_gets_an_elicitation_id_and_form_does_not() {
        let (_, url) = legacy_params(InputRequest::elicit_url("Sign in", "https://x.test/a"));
        assert!(url["elicitationId"].as_str().is_some_and(|s| s.len() == 32));
        let (_, form) = legacy_params(InputRequest::elicit_form(
            "Name?",
            json!({"type": "object"}),
        ));
        assert!(form.get("elicitationId").is_none());
    }
}
