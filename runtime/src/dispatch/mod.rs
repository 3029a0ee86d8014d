//! Dispatch: everything between a transport's parsed request and a handler.
//!
//! A transport checks a modern request's envelope once ([`envelope::check_modern`]), builds
//! a `Call` from it (a Session actor builds a legacy one), and runs it with its worker's
//! `WorkerState`: `pipeline` routes the call to the tenant's catalog and applies the policies
//! around the handler (capability gate, sealing, stamping), which are plain functions in their
//! own files. The worker's Dispatcher actor owns the state's policy view and keeps it current;
//! it never runs a request.
//!
//! Edges go one way: `call` (with `relay`, the shim's way to a legacy client) and `reply`
//! are the vocabulary; `methods`, `mrtr` and `shim`
//! answer methods in it; `pipeline` routes to them; `worker` runs the pipeline with the view;
//! `dispatcher` owns the view.

mod call;
mod config;
mod dispatcher;
pub mod envelope;
pub mod gate;
mod methods;
mod mrtr;
mod pipeline;
mod protection;
mod relay;
mod reply;
pub(crate) mod shim;
pub mod stamp;
mod worker;

pub(crate) use call::{Call, Caller};
pub use config::{LegacyConfig, RuntimeConfig};
pub(crate) use dispatcher::Dispatcher;
pub use envelope::{Envelope, HttpHeaders};
pub use methods::server_capabilities;
pub(crate) use pipeline::dispatch;
pub use pipeline::REQUEST_SPAN;
pub(crate) use protection::Protection;
pub(crate) use relay::{NoRelay, Relay, Shim};
pub(crate) use reply::{Listen, Reply, ReplyKind};
pub use worker::StateKeys;
pub(crate) use worker::WorkerState;
