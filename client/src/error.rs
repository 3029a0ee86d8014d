//! The crate's one error type.
//!
//! A JSON-RPC error from the server, an HTTP status without one, a dead connection and a
//! broken input-required flow are each their own variant, so a caller can match on what
//! went wrong; the server's own words stay in [`RpcError`].

use std::time::Duration;

use crate::protocol::input::InputRequired;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::tools::InvalidAnnotation;
use crate::protocol::Malformed;

/// Why a handler could not answer an input request (the user's terminal went away, the
/// model's API failed, ...).
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct HandlerError(Box<dyn std::error::Error + Send + Sync>);

impl HandlerError {
    /// Wraps any error.
    pub fn new(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        Self(error.into())
    }
}

/// Everything a client call can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The server answered with a JSON-RPC error.
    #[error("{method}: the server answered with error {error}")]
    Rpc {
        /// The method called.
        method: String,
        /// The server's error.
        error: RpcError,
    },
    /// HTTP 401 or 403: the server wants (other) credentials. Never taken as a sign of the
    /// era.
    #[error("{method}: the server refused the request's credentials (HTTP {status})")]
    Unauthorized {
        /// The method called.
        method: String,
        /// 401 or 403.
        status: u16,
        /// The `WWW-Authenticate` challenge, if the server sent one.
        www_authenticate: Option<String>,
    },
    /// An HTTP status with no JSON-RPC answer in the body.
    #[error("{method}: HTTP {status} without a JSON-RPC answer")]
    Http {
        /// The method called.
        method: String,
        /// The status.
        status: u16,
    },
    /// The server could not be reached, or the connection broke.
    #[error("{method}: cannot reach {url}")]
    Network {
        /// The method called.
        method: String,
        /// The endpoint.
        url: String,
        /// What the HTTP stack said.
        #[source]
        source: reqwest::Error,
    },
    /// The server process could not be started, or its pipes failed.
    #[error("stdio: {what}")]
    Io {
        /// What was being done.
        what: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The connection is gone (the server process exited, or closed its stdout).
    #[error("{method}: the connection to the server is closed")]
    Closed {
        /// The method called.
        method: String,
    },
    /// A response stream ended before the response came.
    #[error("{method}: the response stream ended before the response")]
    StreamEnded {
        /// The method called.
        method: String,
    },
    /// One SSE event of the answer held more bytes than the client allows
    /// ([`MAX_MESSAGE_BYTES`](crate::MAX_MESSAGE_BYTES)); the stream is dropped.
    #[error("{method}: an event of the response stream is longer than {limit} bytes")]
    EventTooLong {
        /// The method called.
        method: String,
        /// The limit, in bytes.
        limit: usize,
    },
    /// No answer within the configured time.
    #[error("{method}: no answer within {timeout:?}")]
    Timeout {
        /// The method called.
        method: String,
        /// The limit.
        timeout: Duration,
    },
    /// A message from the server does not have the shape the spec gives it.
    #[error("{method}: malformed answer")]
    Malformed {
        /// The method called.
        method: String,
        /// What was wrong.
        #[source]
        source: Malformed,
    },
    /// The server speaks no protocol version this client does.
    #[error("no protocol version in common: the server offers {offered:?}")]
    NoSharedVersion {
        /// What the server offered.
        offered: Vec<String>,
    },
    /// The server still asked for input after the most rounds the client allows.
    #[error("{method} still required input after {rounds} rounds")]
    RoundsExceeded {
        /// The method called.
        method: String,
        /// The rounds fulfilled.
        rounds: u32,
        /// The last round's questions and state, unanswered.
        last: InputRequired,
    },
    /// A `resultType` this client does not know (clients treat one as invalid).
    #[error("{method}: unknown resultType {result_type:?}")]
    UnknownResultType {
        /// The method called.
        method: String,
        /// The value.
        result_type: String,
    },
    /// An input-required result with neither questions nor state, which the spec forbids.
    #[error("{method}: an input-required result with neither inputRequests nor requestState")]
    EmptyInputRequired {
        /// The method called.
        method: String,
    },
    /// An input-required result from a method that may not return one.
    #[error("{method} may not return an input-required result")]
    UnexpectedInputRequired {
        /// The method called.
        method: String,
    },
    /// The server asked for input of a kind no handler is registered for.
    #[error("{method}: no handler registered for {input_method}")]
    MissingHandler {
        /// The method called.
        method: String,
        /// `elicitation/create` (naming the mode), `sampling/createMessage` or `roots/list`.
        input_method: &'static str,
        /// The question's key (`None` on a legacy session's request).
        key: Option<String>,
    },
    /// A handler failed.
    #[error("{method}: the {input_method} handler failed")]
    Handler {
        /// The method called.
        method: String,
        /// The kind of question.
        input_method: &'static str,
        /// The question's key (`None` on a legacy session's request).
        key: Option<String>,
        /// Its error.
        #[source]
        source: HandlerError,
    },
    /// The tool's `x-mcp-header` annotations are invalid, so the client does not call it.
    #[error("tool {name:?} is invalid")]
    InvalidTool {
        /// The tool.
        name: String,
        /// Which rule it breaks.
        #[source]
        reason: InvalidAnnotation,
    },
    /// A header the caller configured cannot be sent.
    #[error("header {name:?} cannot be sent")]
    InvalidHeader {
        /// The header's name.
        name: String,
    },
}

impl Error {
    /// The JSON-RPC error, if the server answered with one.
    pub fn rpc(&self) -> Option<&RpcError> {
        match self {
            Error::Rpc { error, .. } => Some(error),
            _ => None,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;
