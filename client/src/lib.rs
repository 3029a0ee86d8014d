//! Roundtrip's MCP client: one API for both eras of the protocol, over Streamable HTTP or a
//! child process's stdio, that drives multi round-trip (input-required) results to the end.
//!
//! ```no_run
//! # async fn run() -> Result<(), roundtrip_client::Error> {
//! use roundtrip_client::handler::{elicit_with, ElicitationModes};
//! use roundtrip_client::protocol::input::{ElicitRequest, ElicitResult};
//! use roundtrip_client::Client;
//! use serde_json::json;
//!
//! let client = Client::builder()
//!     .elicitation(elicit_with(ElicitationModes::FORM, |request, _context| async move {
//!         let ElicitRequest::Form(_form) = request else {
//!             return Ok(ElicitResult::decline());
//!         };
//!         let mut answer = serde_json::Map::new();
//!         answer.insert("name".into(), json!("Ada"));
//!         Ok(ElicitResult::accept(answer))
//!     }))
//!     .connect_http("http://127.0.0.1:8080/t/demo/mcp")
//!     .await?;
//! let greeting = client.call_tool("greet", json!({})).await?;
//! println!("{}", greeting.text());
//! # Ok(()) }
//! ```
//!
//! Layers, each using only those after it:
//! - [`Client`] (`client.rs`): the calls; `mrtr.rs` drives input-required rounds, `simple.rs`
//!   the one-round methods;
//! - `era.rs`: decides the era once per connection (probe, fallback, cache); `session.rs`
//!   frames each request for it (envelope, headers);
//! - `transport`: Streamable HTTP and stdio, which also answer a legacy server's own requests
//!   with the [`handler`]s;
//! - [`protocol`]: the wire types.
//!
//! Futures are `Send`; the client runs on any tokio runtime, `actix_rt`'s included.

#![warn(missing_docs, missing_debug_implementations)]

mod client;
mod era;
pub mod error;
pub mod handler;
mod mrtr;
pub mod protocol;
mod session;
mod simple;
mod transport;

pub use client::{Client, ClientBuilder, CompletionRef};
pub use error::{Error, HandlerError};
pub use mrtr::{Retry, DEFAULT_MAX_ROUNDS};
pub use protocol::version::{Era, EraChoice, ProtocolVersion};
pub use session::ServerInfo;
