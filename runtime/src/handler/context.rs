//! What a handler knows about the request it serves, and the sinks it may write to.
//!
//! A `Context` is cheap to clone (one `Rc`) and never leaves the worker thread. Progress and
//! log notifications go to the request's own stream, and only when the request asked for
//! them: a progress token for progress, a `logLevel` for logs, at or above that level.

use std::cell::Cell;
use std::rc::Rc;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::mpsc::{self, Receiver, Sender};

use super::cancellation::Cancellation;
use super::principal::Principal;
use super::tenant::Tenant;
use crate::protocol::input::{InputResponse, InputResponses};
use crate::protocol::jsonrpc::{notification_bytes, request_bytes};
use crate::protocol::{ClientCapabilities, Era, LogLevel, RequestId};

/// A message for the transport to put on the request's own stream: a notification the
/// handler emitted, or (legacy sessions only) a server-to-client request of the shim, which
/// has an id.
#[derive(Debug, Clone, PartialEq)]
pub struct OutgoingMessage {
    /// The shim's server-to-client request id; `None` for a notification.
    pub id: Option<RequestId>,
    /// The JSON-RPC method, e.g. `notifications/progress` or `elicitation/create`.
    pub method: &'static str,
    /// The params, already shaped for `method`: written as they are.
    pub params: Value,
}

impl OutgoingMessage {
    /// The message as one JSON-RPC line (no framing).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        match &self.id {
            Some(id) => request_bytes(id, self.method, &self.params),
            None => notification_bytes(self.method, &self.params),
        }
    }
}

/// The channel to the request's stream, with what the request asked to receive.
///
/// Messages travel boxed: a channel allocates room for 32 of them up front, and a request
/// that sends none (most) should not pay for 32 inline messages. Bounded: a handler that
/// reports faster than its client reads loses the surplus (progress is a running figure and
/// logs are advisory) rather than growing memory without limit.
#[derive(Debug, Clone)]
pub struct Notifier {
    tx: Sender<Box<OutgoingMessage>>,
    progress_token: Option<Value>,
    log_level: Option<LogLevel>,
}

impl Notifier {
    /// Notifications one request may have queued for its stream.
    pub const CAPACITY: usize = 256;

    /// A notifier and the receiving end the transport puts on the request's stream.
    pub fn channel(
        progress_token: Option<Value>,
        log_level: Option<LogLevel>,
    ) -> (Notifier, Receiver<Box<OutgoingMessage>>) {
        let (tx, rx) = mpsc::channel(Self::CAPACITY);
        (
            Notifier {
                tx,
                progress_token,
                log_level,
            },
            rx,
        )
    }

    fn send(&self, notification: OutgoingMessage) {
        if self.tx.try_send(Box::new(notification)).is_err() {
            tracing::debug!("notification dropped: the stream is full or gone");
        }
    }

    /// The same stream, with the log level a legacy session set.
    pub(crate) fn with_log_level(mut self, level: Option<LogLevel>) -> Self {
        self.log_level = level;
        self
    }

    /// Tells the client a server-to-client request is withdrawn (best effort).
    pub(crate) fn cancelled(&self, id: &RequestId, reason: &str) {
        self.send(OutgoingMessage {
            id: None,
            method: "notifications/cancelled",
            params: json!({ "requestId": id, "reason": reason }),
        });
    }

    /// Queues a server-to-client request on the stream, waiting for room: unlike a
    /// notification it must not be lost. `false` when the stream is gone.
    pub(crate) async fn request(&self, id: RequestId, method: &'static str, params: Value) -> bool {
        self.tx
            .send(Box::new(OutgoingMessage {
                id: Some(id),
                method,
                params,
            }))
            .await
            .is_ok()
    }
}

#[derive(Debug)]
struct Inner {
    tenant: Arc<Tenant>,
    principal: Principal,
    era: Era,
    input_responses: InputResponses,
    request_state: Option<String>,
    round: u32,
    client_capabilities: ClientCapabilities,
    notifier: Option<Notifier>,
    last_progress: Cell<Option<f64>>,
    cancel: Cancellation,
}

/// What one handler run knows about its request: tenant, principal, era, client capabilities,
/// the answers and state of an input-required retry, and the request's notification stream
/// and cancellation.
#[derive(Debug, Clone)]
pub struct Context(Rc<Inner>);

impl Context {
    /// A builder for `tenant`'s context; unset parts default to an anonymous principal, the
    /// modern era, round 0, no answers, no state, no capabilities, no notifier.
    pub fn builder(tenant: Arc<Tenant>) -> ContextBuilder {
        ContextBuilder {
            tenant,
            principal: None,
            era: Era::Modern,
            input_responses: InputResponses::new(),
            request_state: None,
            round: 0,
            client_capabilities: None,
            notifier: None,
            cancel: None,
        }
    }

    /// The answer the client gave under `key` on this retry, if any. A missing answer means
    /// "ask again".
    ///
    /// An accepted answer to a form elicitation the previous round asked has already been
    /// checked against its `requestedSchema`: on a legacy session always; on the stateless
    /// wire when the runtime seals `requestState` (as the `roundtrip` binary always does) and
    /// the retry carries it. A stateless client may also send answers with no state at all,
    /// to a question nothing on the server remembers asking: those are not checked, so a
    /// handler that acts on an answer must still read it through the typed views, which
    /// yield `None` for what does not fit. Declined and cancelled answers carry no content.
    pub fn input_response(&self, key: &str) -> Option<&InputResponse> {
        self.0.input_responses.get(key)
    }

    /// Every answer of this retry (only the latest round's: carry earlier answers forward in
    /// the request state).
    pub fn input_responses(&self) -> &InputResponses {
        &self.0.input_responses
    }

    /// The state this handler returned with its last input-required result, already opened
    /// and verified by the runtime.
    pub fn request_state(&self) -> Option<&str> {
        self.0.request_state.as_deref()
    }

    /// The request state parsed as JSON; `None` if absent or not of type `T`.
    pub fn request_state_json<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_str(self.request_state()?).ok()
    }

    /// How many input-required rounds came before this run (0 on a first call).
    pub fn round(&self) -> u32 {
        self.0.round
    }

    /// The tenant serving this request: the live handle, so a handler may change its
    /// configuration.
    pub fn tenant(&self) -> &Arc<Tenant> {
        &self.0.tenant
    }

    /// Who made the request, as its credentials authenticated it.
    pub fn principal(&self) -> &Principal {
        &self.0.principal
    }

    /// Whether the request came statelessly (modern) or in a legacy session.
    pub fn era(&self) -> Era {
        self.0.era
    }

    /// The capabilities this request declared (modern) or the session negotiated (legacy).
    pub fn client_capabilities(&self) -> &ClientCapabilities {
        &self.0.client_capabilities
    }

    /// Reports progress; a no-op unless the request carried a progress token. Values that do
    /// not increase are dropped, since the spec requires progress to increase.
    pub fn progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let Some(n) = &self.0.notifier else { return };
        let Some(token) = &n.progress_token else {
            return;
        };
        if self
            .0
            .last_progress
            .get()
            .is_some_and(|last| progress <= last)
        {
            return;
        }
        self.0.last_progress.set(Some(progress));
        let mut params = json!({ "progressToken": token, "progress": progress });
        if let Some(total) = total {
            params["total"] = json!(total);
        }
        if let Some(message) = message {
            params["message"] = json!(message);
        }
        n.send(OutgoingMessage {
            id: None,
            method: "notifications/progress",
            params,
        });
    }

    /// Sends a log message; a no-op unless the request set a log level at or below `level`.
    pub fn log(&self, level: LogLevel, logger: Option<&str>, data: Value) {
        let Some(n) = &self.0.notifier else { return };
        if n.log_level.is_none_or(|min| level < min) {
            return;
        }
        let mut params = json!({ "level": level.as_str(), "data": data });
        if let Some(logger) = logger {
            params["logger"] = json!(logger);
        }
        n.send(OutgoingMessage {
            id: None,
            method: "notifications/message",
            params,
        });
    }

    /// True once the client has gone away (closed stream or cancellation).
    pub fn is_cancelled(&self) -> bool {
        self.0.cancel.is_cancelled()
    }

    /// Resolves when the client goes away. The handler then has a short grace
    /// (`RuntimeConfig::cancel_grace`) to clean up; whatever it returns is discarded, and it is
    /// dropped when the grace runs out.
    pub async fn cancelled(&self) {
        self.0.cancel.cancelled().await
    }
}

/// Builds a `Context`: the dispatcher uses it, and so do handler unit tests.
///
/// The parts with a default that allocates (principal, capabilities, cancellation) are made
/// at [`ContextBuilder::build`] only when unset: the runtime sets all three on every request.
#[derive(Debug)]
pub struct ContextBuilder {
    tenant: Arc<Tenant>,
    principal: Option<Principal>,
    era: Era,
    input_responses: InputResponses,
    request_state: Option<String>,
    round: u32,
    client_capabilities: Option<ClientCapabilities>,
    notifier: Option<Notifier>,
    cancel: Option<Cancellation>,
}

impl ContextBuilder {
    /// Who made the request (default: anonymous).
    pub fn principal(mut self, principal: Principal) -> Self {
        self.principal = Some(principal);
        self
    }

    /// The request's era (default: modern).
    pub fn era(mut self, era: Era) -> Self {
        self.era = era;
        self
    }

    /// Every answer of this retry, replacing any added before.
    pub fn input_responses(mut self, responses: InputResponses) -> Self {
        self.input_responses = responses;
        self
    }

    /// Adds one answer (handy in tests).
    pub fn answer(mut self, key: &str, answer: Value) -> Self {
        if let Value::Object(o) = answer {
            self.input_responses
                .insert(key.to_owned(), InputResponse::new(o));
        }
        self
    }

    /// The handler's own state from its last input-required result, already opened.
    pub fn request_state(mut self, state: Option<String>) -> Self {
        self.request_state = state;
        self
    }

    /// How many input-required rounds came before this run.
    pub fn round(mut self, round: u32) -> Self {
        self.round = round;
        self
    }

    /// The capabilities the request declared (or the legacy session negotiated).
    pub fn client_capabilities(mut self, caps: ClientCapabilities) -> Self {
        self.client_capabilities = Some(caps);
        self
    }

    /// The request's stream for progress and logs; `None` drops them.
    pub fn notifier(mut self, notifier: Option<Notifier>) -> Self {
        self.notifier = notifier;
        self
    }

    /// Cancelled when the client goes away (default: a token nobody cancels).
    pub fn cancel(mut self, cancel: Cancellation) -> Self {
        self.cancel = Some(cancel);
        self
    }

    /// Finishes the context, for one handler run.
    pub fn build(self) -> Context {
        Context(Rc::new(Inner {
            tenant: self.tenant,
            principal: self.principal.unwrap_or_else(Principal::anonymous),
            era: self.era,
            input_responses: self.input_responses,
            request_state: self.request_state,
            round: self.round,
            client_capabilities: self.client_capabilities.unwrap_or_default(),
            notifier: self.notifier,
            last_progress: Cell::new(None),
            cancel: self.cancel.unwrap_or_default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::Catalog;

    #[test]
    fn a_notifier_drops_what_its_stream_cannot_hold() {
        let (notifier, mut rx) = Notifier::channel(Some(json!("p")), None);
        let tenant = Arc::new(Tenant::new("t", Catalog::builder().build()));
        let ctx = Context::builder(tenant).notifier(Some(notifier)).build();
        for i in 0..(Notifier::CAPACITY + 50) {
            ctx.progress(i as f64, None, None);
        }
        let mut received = 0;
        while rx.try_recv().is_ok() {
            received += 1;
        }
        assert_eq!(received, Notifier::CAPACITY);
    }

    #[test]
    fn progress_that_does_not_increase_is_dropped() {
        let (notifier, mut rx) = Notifier::channel(Some(json!("p")), None);
        let tenant = Arc::new(Tenant::new("t", Catalog::builder().build()));
        let ctx = Context::builder(tenant).notifier(Some(notifier)).build();
        for p in [1.0, 1.0, 0.5, 2.0] {
            ctx.progress(p, None, None);
        }
        let mut seen = Vec::new();
        while let Ok(n) = rx.try_recv() {
            seen.push(n.params["progress"].as_f64().unwrap_or_default());
        }
        assert_eq!(seen, [1.0, 2.0]);
    }
}
