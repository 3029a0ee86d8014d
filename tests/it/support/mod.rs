//! The harness every test module uses: a real server in-process on port 0, an `awc` client
//! that sends MCP requests with the right headers, and wire checks applied to every message the
//! server sends, so that tests assert only what is specific to them. One concern per module:
//! - `server`: the server and its test tenants ([`Server`], [`DEMO`], [`LAB`], …);
//! - `requests`: building MCP messages ([`meta`], [`rpc`], [`tool_call`], [`retry`], …) and
//!   sending them with the request builder (`Req`);
//! - `replies`: reading what comes back ([`Reply`], [`Events`], SSE parsing);
//! - `wire_checks`: the checks every message the server sends passes, however it is read;
//! - `protocol`: the version the tests speak, the `_meta` keys, the fixed state error;
//! - `schema`: the committed MCP JSON schemas the checks validate against;
//! - `lab`: the test catalog; `legacy_client`: a 2025-11-25 client; `h2c_client`: HTTP/2;
//!   `stdio_in_process`: the stdio server in this process, for a tenant and caller a test holds;
//!   `serve_process`: `roundtrip serve` as a child process; `otlp_receiver`: a collector's
//!   OTLP/HTTP trace endpoint, for what `serve` exports. Redis under a prefix of the test's
//!   own, and a Redis a test can stop: `roundtrip_runtime::redis::testing`.
//!
//! Edges go one way: `legacy_client` -> `requests` -> `server` -> `lab`; `requests` ->
//! `replies` -> `wire_checks` -> `schema`, `protocol`; `h2c_client` -> `replies`. The names
//! tests use are re-exported here: a test imports `crate::support::{Server, rpc, …}`.

mod admin;
pub(crate) mod h2c_client;
pub(crate) mod lab;
pub(crate) mod legacy_client;
pub(crate) mod otlp_receiver;
mod protocol;
mod replies;
mod requests;
pub(crate) mod schema;
pub(crate) mod serve_process;
mod server;
pub(crate) mod stdio_in_process;
mod wire_checks;

pub(crate) use lab::Probe;
pub(crate) use protocol::{
    invalid_state_error, CLIENT_CAPABILITIES, CLIENT_INFO, LOG_LEVEL, PROTOCOL_VERSION,
    SERVER_INFO, SUBSCRIPTION_ID, VERSION,
};
pub(crate) use replies::{Events, Reply};
pub(crate) use requests::{accept, b64_header, mcp_headers, meta, retry, rpc, tool_call};
pub(crate) use schema::assert_valid;
pub(crate) use serve_process::Serve;
pub(crate) use server::{scratch_dir, Server, ALICE, BOB, CAROL, DEMO, EMPTY, LAB, LAB2};
