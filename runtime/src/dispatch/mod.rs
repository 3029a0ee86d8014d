//! Dispatch: everything between a transport's parsed request and a handler.
//!
//! The transport calls [`envelope::check_modern`] once, then hands the request to its
//! worker's [`Dispatcher`], which routes it to the tenant's catalog and applies the policies
//! (capability gate, sealing, stamping) around the handler. Policies are plain functions in
//! their own files; the actor only owns per-worker state (the key-ring snapshot).

mod config;
mod dispatcher;
pub mod envelope;
pub mod gate;
mod methods;
mod mrtr;
mod protection;
pub mod shim;
pub mod stamp;

pub use config::{LegacyConfig, RuntimeConfig};
pub(crate) use dispatcher::dispatch;
pub use dispatcher::{
    Call, Dispatch, Dispatcher, Listen, Reply, ReplyKind, Scope, StateKeys, WorkerState,
};
pub use envelope::{Envelope, HttpHeaders};
pub use methods::server_capabilities;
pub use protection::Protection;
pub use shim::{Relay, Shim};
