//! The `roundtrip` binary's library half: configuration, wiring and the compiled-in
//! catalogs, shared by `main.rs` and the integration tests.

pub mod catalogs;
pub mod cli;
pub mod commands;
pub mod config;
pub mod wiring;
