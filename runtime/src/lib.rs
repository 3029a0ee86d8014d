//! Roundtrip's MCP runtime.
//!
//! Layers, each depending only on those after it:
//! - [`transport`]: Streamable HTTP (and, later, stdio) framing;
//! - [`dispatch`]: envelope checks, routing, and the policies around every handler: the
//!   capability gate, `requestState` sealing and `resultType` stamping;
//! - [`handler`]: the API tool, prompt and resource authors write against;
//! - [`sealing`]: AES-256-GCM sealing of `requestState` and the KeyManager actor;
//! - [`protocol`]: wire types; imports nothing above it.
//!
//! Tenancy plugs in through the traits in [`tenancy`].

#![warn(missing_docs, missing_debug_implementations)]

pub mod dispatch;
pub mod handler;
pub mod legacy;
pub mod protocol;
pub mod sealing;
pub mod tenancy;
pub mod transport;
