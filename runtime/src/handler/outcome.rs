//! What a handler returns: a complete result, or a request for input; or an error.

use serde::Serialize;
use serde_json::Value;

use crate::protocol::input::{InputRequest, InputRequests, Sampling};
use crate::protocol::result::{CallToolResult, GetPromptResult, ReadResourceResult};
use crate::protocol::McpError;

/// Complete with `T`, or ask the client for input and be called again.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The final result, stamped `complete` on the modern era.
    Complete(T),
    /// The client must answer these requests and call again (SEP-2322); on a legacy session
    /// the shim asks the client and re-runs the handler itself.
    InputRequired(InputRequired),
}

/// What [`Tool::call`](super::Tool::call) returns.
pub type ToolOutcome = Result<Outcome<CallToolResult>, HandlerError>;
/// What [`Prompt::get`](super::Prompt::get) returns.
pub type PromptOutcome = Result<Outcome<GetPromptResult>, HandlerError>;
/// What [`Resource::read`](super::Resource::read) and
/// [`ResourceTemplate::read`](super::ResourceTemplate::read) return.
pub type ResourceOutcome = Result<Outcome<ReadResourceResult>, HandlerError>;
/// Custom (extension) methods return raw result objects.
pub type MethodOutcome = Result<Outcome<Value>, HandlerError>;

/// Errors a handler reports as JSON-RPC errors. Failures of a tool's own work belong in a
/// complete `CallToolResult` with `is_error`, not here.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HandlerError {
    /// Arguments the handler cannot use: -32602 with this message.
    #[error("{0}")]
    InvalidParams(String),
    /// No resource at this URI: -32602 with the URI in `data`, the error an unmatched URI
    /// gets.
    #[error("Resource not found: {0}")]
    ResourceNotFound(String),
    /// The message is logged; the client gets a generic internal error.
    #[error("internal error: {0}")]
    Internal(String),
}

impl HandlerError {
    /// The wire error, logging what the client does not get to see.
    pub fn into_wire(self, method: &str) -> McpError {
        if let Self::Internal(detail) = &self {
            tracing::error!(method, %detail, "handler failed");
        }
        self.to_wire()
    }

    /// The wire error, logging nothing: an internal error's detail is dropped.
    fn to_wire(&self) -> McpError {
        match self {
            Self::InvalidParams(m) => McpError::invalid_params(m.clone()),
            Self::ResourceNotFound(uri) => McpError::resource_not_found(uri),
            Self::Internal(_) => McpError::internal("Internal error"),
        }
    }
}

/// An input-required outcome: the embedded requests (by key) and the handler's own state,
/// which the runtime seals before it leaves the server.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InputRequired {
    requests: InputRequests,
    state: Option<String>,
}

impl InputRequired {
    /// No requests and no state yet: returned empty, it is answered with an internal error.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a request under `key`; a later request under the same key replaces it.
    pub fn request(mut self, key: impl Into<String>, request: InputRequest) -> Self {
        self.requests.insert(key.into(), request);
        self
    }

    /// Form elicitation.
    pub fn elicit(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        requested_schema: Value,
    ) -> Self {
        self.request(key, InputRequest::elicit_form(message, requested_schema))
    }

    /// URL elicitation.
    pub fn elicit_url(
        self,
        key: impl Into<String>,
        message: impl Into<String>,
        url: impl Into<String>,
    ) -> Self {
        self.request(key, InputRequest::elicit_url(message, url))
    }

    /// Sampling with full `CreateMessageRequestParams`.
    pub fn sample(self, key: impl Into<String>, params: Value) -> Self {
        self.request(key, InputRequest::sampling(params))
    }

    /// Sampling built with [`Sampling`] (messages, tools, tool choice, context).
    pub fn sample_with(self, key: impl Into<String>, sampling: Sampling) -> Self {
        self.request(key, InputRequest::sample(sampling))
    }

    /// Sampling of one user text prompt.
    pub fn sample_text(
        self,
        key: impl Into<String>,
        prompt: impl Into<String>,
        max_tokens: u32,
    ) -> Self {
        self.request(key, InputRequest::sample_text(prompt, max_tokens))
    }

    /// The client's roots.
    pub fn list_roots(self, key: impl Into<String>) -> Self {
        self.request(key, InputRequest::list_roots())
    }

    /// The handler's own state, handed back by `Context::request_state` on the retry.
    pub fn state(mut self, state: impl Into<String>) -> Self {
        self.state = Some(state.into());
        self
    }

    /// The handler's own state as JSON. Fails (an internal error) only for values JSON cannot
    /// hold, such as a map with non-string keys.
    pub fn state_json<T: Serialize>(self, state: &T) -> Result<Self, HandlerError> {
        serde_json::to_string(state)
            .map(|s| self.state(s))
            .map_err(|e| HandlerError::Internal(format!("request state is not serialisable: {e}")))
    }

    /// The input requests, by key.
    pub fn requests(&self) -> &InputRequests {
        &self.requests
    }

    /// The state set with [`InputRequired::state`], before the runtime seals it.
    pub fn handler_state(&self) -> Option<&str> {
        self.state.as_deref()
    }

    /// The requests and the handler's state, moved out for gating, sealing and stamping.
    pub(crate) fn into_parts(self) -> (InputRequests, Option<String>) {
        (self.requests, self.state)
    }

    /// The spec requires at least one of input requests or state.
    pub fn is_empty(&self) -> bool {
        self.requests.is_empty() && self.state.is_none()
    }
}

impl<T> From<InputRequired> for Outcome<T> {
    fn from(ir: InputRequired) -> Self {
        Outcome::InputRequired(ir)
    }
}

impl<T> From<InputRequired> for Result<Outcome<T>, HandlerError> {
    fn from(ir: InputRequired) -> Self {
        Ok(Outcome::InputRequired(ir))
    }
}

macro_rules! complete_from {
    ($($t:ty),*) => {$(
        impl From<$t> for Outcome<$t> {
            fn from(r: $t) -> Self { Outcome::Complete(r) }
        }
        impl From<$t> for Result<Outcome<$t>, HandlerError> {
            fn from(r: $t) -> Self { Ok(Outcome::Complete(r)) }
        }
    )*};
}
complete_from!(CallToolResult, GetPromptResult, ReadResourceResult);

impl From<Value> for Outcome<Value> {
    fn from(r: Value) -> Self {
        Outcome::Complete(r)
    }
}
