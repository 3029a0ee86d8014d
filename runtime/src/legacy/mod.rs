//! Legacy sessions (2025-11-25 and older, begun by `initialize`), on any transport.
//!
//! - [`sessions`]: the process's registry of live sessions, with its cap, and session ids;
//! - [`session`]: the Session actor, one per session: negotiated capabilities, log level,
//!   subscriptions, its notification streams and the shim flows of its requests;
//! - [`bridge`]: the LegacyBridge actor, which matches the client's answers to the
//!   server-to-client requests the shim sent;
//! - [`relay`]: the shim's way to the client, one leg per input request;
//! - [`handshake`]: the `initialize` request and its result.
//!
//! A modern request never reaches this module: the transport decides the era first.

pub mod bridge;
pub mod handshake;
mod relay;
pub mod session;
pub mod sessions;

use std::sync::Arc;

use actix::{Actor, Addr};

pub use bridge::LegacyBridge;
pub use session::Session;
pub use sessions::{SessionId, Sessions};

pub use crate::dispatch::LegacyConfig;
use crate::dispatch::RuntimeConfig;

/// What every legacy session of a process shares: the registry, the bridge and the limits.
#[derive(Debug, Clone)]
pub struct Legacy {
    pub sessions: Arc<Sessions>,
    pub bridge: Addr<LegacyBridge>,
    pub runtime: Arc<RuntimeConfig>,
}

impl Legacy {
    /// Starts the process's LegacyBridge on the current arbiter.
    pub fn start(runtime: Arc<RuntimeConfig>) -> Self {
        Self {
            sessions: Arc::new(Sessions::new(
                runtime.legacy.max_sessions,
                runtime.legacy.max_sessions_per_caller,
            )),
            bridge: LegacyBridge::default().start(),
            runtime,
        }
    }

    pub fn config(&self) -> &LegacyConfig {
        &self.runtime.legacy
    }
}
