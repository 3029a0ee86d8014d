//! The `roundtrip` binary's library half: configuration, wiring and the compiled-in
//! catalogs, shared by `main.rs` and the integration tests.
//!
//! The README follows, included here so that its Rust example is compiled and run as a
//! doctest (`cargo test -p roundtrip --doc`) and cannot fall behind the handler API. Its other
//! code blocks are tagged (`sh`, `json`), which rustdoc leaves alone.
//!
//! ---
//!
#![doc = include_str!("../README.md")]

pub mod answers;
pub mod bench;
pub mod budgets;
pub mod catalogs;
pub mod cli;
pub mod commands;
pub mod config;
pub mod master_key;
pub mod telemetry;
pub mod terminal;
pub mod wiring;
