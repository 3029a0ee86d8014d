//! How messages reach a server: Streamable HTTP ([`http`]) or the stdio of a child process
//! ([`stdio`]).
//!
//! A transport moves JSON-RPC messages and nothing more: the envelope, the headers and the era
//! are decided above it and handed down in [`Outgoing`]. What both transports share is here:
//! answering the requests a legacy server sends while one of ours is pending.

pub(crate) mod http;
pub(crate) mod sse;
pub(crate) mod stdio;

use serde_json::Value;

use crate::error::Error;
use crate::handler::{Handlers, InputContext, Unanswered};
use crate::protocol::input::InputRequest;
use crate::protocol::jsonrpc::{RequestId, RpcError};

/// The most bytes the client holds for one message from a server: one SSE event, or one
/// line of a stdio server's stdout (the same order as the server's own 1 MiB line cap).
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// One request, ready to go.
#[derive(Debug, Clone)]
pub(crate) struct Outgoing {
    pub(crate) id: RequestId,
    pub(crate) method: String,
    /// The whole JSON-RPC message.
    pub(crate) message: Value,
    /// HTTP headers mirroring the body (ignored on stdio).
    pub(crate) headers: Vec<(String, String)>,
    /// Where a legacy server's request during this one comes from.
    pub(crate) context: InputContext,
}

/// The server's answer to one request: its result, or its JSON-RPC error.
pub(crate) type Answer = Result<Value, RpcError>;

/// A connected transport.
#[derive(Debug)]
pub(crate) enum Transport {
    Http(http::Http),
    Stdio(stdio::Stdio),
}

impl Transport {
    /// Sends `out` and waits for its answer, answering the server's own requests meanwhile.
    pub(crate) async fn request(&self, out: &Outgoing) -> Result<Answer, Error> {
        match self {
            Transport::Http(t) => t.request(out).await,
            Transport::Stdio(t) => t.request(out).await,
        }
    }

    /// Sends a notification.
    pub(crate) async fn notify(
        &self,
        method: &str,
        message: Value,
        headers: &[(String, String)],
    ) -> Result<(), Error> {
        match self {
            Transport::Http(t) => t.notify(method, message, headers).await,
            Transport::Stdio(t) => t.notify(method, message).await,
        }
    }

    /// A legacy session began at `version`: on HTTP, open its standalone GET stream.
    pub(crate) async fn initialized(&self, version: crate::protocol::version::ProtocolVersion) {
        if let Transport::Http(t) = self {
            t.listen(version).await;
        }
    }

    pub(crate) fn is_stdio(&self) -> bool {
        matches!(self, Transport::Stdio(_))
    }

    /// Ends the connection: DELETE of a legacy HTTP session, or the end of the child.
    pub(crate) async fn close(&self) {
        match self {
            Transport::Http(t) => t.close().await,
            Transport::Stdio(t) => t.close().await,
        }
    }
}

/// Answers a request a legacy server sent: `ping`, or one of the three questions, with the
/// registered handlers. A question no handler takes gets -32601 (the client did not declare
/// it); a failing handler, -32603.
pub(crate) async fn serve(
    handlers: &Handlers,
    method: &str,
    params: Option<Value>,
    context: &InputContext,
) -> Answer {
    if method == "ping" {
        return Ok(Value::Object(Default::default()));
    }
    let request = match InputRequest::from_method(method, params) {
        Ok(Some(request)) => request,
        Ok(None) => {
            return Err(RpcError::new(
                RpcError::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            ))
        }
        Err(malformed) => {
            return Err(RpcError::new(
                RpcError::INVALID_PARAMS,
                malformed.to_string(),
            ))
        }
    };
    match handlers.answer(request, context).await {
        Ok(response) => serde_json::to_value(response)
            .map_err(|e| RpcError::new(RpcError::INTERNAL_ERROR, e.to_string())),
        Err(Unanswered::Missing(kind)) => Err(RpcError::new(
            RpcError::METHOD_NOT_FOUND,
            format!("This client does not handle {kind}"),
        )),
        Err(Unanswered::Failed(kind, e)) => {
            tracing::warn!(kind, error = %e, "a handler failed to answer the server");
            Err(RpcError::new(
                RpcError::INTERNAL_ERROR,
                format!("The client could not answer {kind}: {e}"),
            ))
        }
    }
}
