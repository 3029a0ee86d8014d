//! Roundtrip's MCP runtime.
//!
//! Layers, each depending only on those after it:
//! - [`transport`]: Streamable HTTP (both eras, on actix-web) and stdio;
//! - [`legacy`]: legacy (2025-11-25 and older) sessions on any transport, and the shim that
//!   relays input requests to their clients;
//! - [`dispatch`]: envelope checks, routing, and the policies around every handler: the
//!   capability gate, `requestState` sealing and `resultType` stamping;
//! - [`budget`]: what callers, tenants and the process may keep, in bytes and streams;
//! - [`handler`]: the API tool, prompt and resource authors write against, and the tenant
//!   and principal as handlers see them;
//! - [`redis`]: what a fleet of worker processes shares through Redis;
//! - [`fleet`]: a process's part in a fleet's legacy sessions: the directory of which worker
//!   holds each session, the fleet's caps, and the key that vouches for a forward's client;
//! - [`sealing`]: AES-256-GCM sealing of `requestState` and the KeyManager actor;
//! - [`protocol`]: wire types; imports nothing above it.
//!
//! Tenancy plugs in through the traits in [`tenancy`].

#![warn(missing_docs, missing_debug_implementations)]

pub mod budget;
pub mod dispatch;
pub mod fleet;
pub mod handler;
pub mod legacy;
pub mod metrics;
pub mod protocol;
pub mod redis;
pub mod sealing;
pub mod tenancy;
pub mod transport;
