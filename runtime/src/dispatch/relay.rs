//! What a legacy request's shim may use to reach its client: a [`Shim`], with the session's
//! [`Relay`], or the reason it has none ([`NoRelay`]). The session layer provides the relay;
//! `shim.rs` runs the loop with it.

use std::sync::Arc;

use async_trait::async_trait;

use crate::protocol::input::{InputRequests, InputResponses};
use crate::protocol::McpError;

/// How the shim reaches the client of a legacy session: sends one round's requests and
/// returns the answers under the same keys, or the error that ended the round.
#[async_trait(?Send)]
pub(crate) trait Relay: Send + Sync + std::fmt::Debug {
    async fn relay(&self, requests: InputRequests) -> Result<InputResponses, McpError>;
}

/// What a legacy request's shim may do.
#[derive(Debug, Clone)]
pub(crate) struct Shim {
    /// The way to the client, or why there is none.
    pub(crate) relay: Result<Arc<dyn Relay>, NoRelay>,
    /// Fulfilment rounds before the flow is stopped.
    pub(crate) max_rounds: u32,
    /// Bound on each handler run (the waits for the client are bounded per leg).
    pub(crate) run_timeout: std::time::Duration,
}

/// Why a legacy request's input requests cannot reach its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoRelay {
    /// The tenant turned the shim off.
    Disabled,
    /// The request does not accept `text/event-stream`, where input requests travel.
    NoStream,
}
