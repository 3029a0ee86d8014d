//! The command line, as clap structs; `config.rs` turns it into settings.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "roundtrip",
    version,
    about = "Multi-tenant MCP server runtime (MCP 2026-07-28, multi round-trip results)"
)]
pub struct Cli {
    /// Configuration file (TOML). Every key can also be set as ROUNDTRIP_<KEY>
    /// (nested keys joined by "__", e.g. ROUNDTRIP_HTTP__MAX_BODY_BYTES).
    #[arg(long, global = true, env = "ROUNDTRIP_CONFIG")]
    pub config: Option<PathBuf>,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Serve every tenant's MCP endpoint (POST /t/{tenant}/mcp) over HTTP.
    Serve(ServeArgs),
    /// Serve one tenant over stdin/stdout, both eras
    ///
    /// One JSON-RPC message per line. Modern requests carry the _meta envelope; a legacy
    /// client begins with initialize. Logs go to stderr.
    Stdio(StdioArgs),
}

#[derive(Debug, Args)]
pub struct StdioArgs {
    /// The tenant to serve (a tenant of the default set: demo, conformance).
    #[arg(long)]
    pub tenant: String,
}

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Address to listen on [default: 127.0.0.1:8080; env: ROUNDTRIP_LISTEN].
    #[arg(long)]
    pub listen: Option<String>,

    /// HTTP worker threads [default: one per CPU; env: ROUNDTRIP_WORKERS].
    #[arg(long)]
    pub workers: Option<usize>,
}
