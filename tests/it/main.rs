//! Roundtrip's integration tests: one binary, a module per feature. Every test starts its own
//! server on port 0 (see `support`), talks to it over HTTP/1.1 with `awc` (over h2c with the
//! `h2` crate, see `support::h2c_client`), and every message the server sends is checked
//! against the committed MCP 2026-07-28 schema (2025-11-25 in a legacy session, see
//! `support::legacy_client`).

mod support;

mod admin;
mod answers;
mod bench_driver;
mod budgets;
mod call_command;
mod client;
mod discovery;
mod envelope;
mod errors;
mod fleet;
mod gate;
mod grants;
mod h2c;
mod headers;
mod health;
mod legacy;
mod limits;
mod live_change;
mod malformed;
mod mrtr;
mod readme;
mod replay;
mod sealing;
mod stamping;
mod state_keys;
mod stdio;
mod stdio_bounds;
mod store_cli;
mod streaming;
mod strict;
mod telemetry;
mod terminal;
