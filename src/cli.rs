//! The command line, as clap structs; `config.rs` turns it into settings.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};

use crate::answers::{parse_preset, PresetAnswer};
use crate::bench::{parse_duration, Mode};

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
    /// Serve every tenant's MCP endpoint (POST /t/{tenant}/mcp) over HTTP/1.1, and HTTP/2
    /// cleartext (prior knowledge) on the same port.
    Serve(ServeArgs),
    /// Serve one tenant over stdin/stdout, both eras
    ///
    /// One JSON-RPC message per line. Modern requests carry the _meta envelope; a legacy
    /// client begins with initialize. Logs go to stderr.
    Stdio(StdioArgs),
    /// The client the official conformance suite launches (`conformance client --command`):
    /// connects to URL, lists the tools and calls them, answering every input request.
    ConformanceClient(ConformanceClientArgs),
    /// Drive concurrent clients against an MCP endpoint; report throughput, latency
    /// percentiles, errors and the server's memory (see BENCHMARKS.md).
    Bench(BenchArgs),
    /// Answer one input request as `roundtrip call` would, and print the answer as JSON.
    ///
    /// Not for users: it runs the answer sources of `call` (`--answer`, `--sampling-command`,
    /// the terminal form) on a request given as `{"method": ..., "params": ...}`, so that they
    /// can be tried, and tested through a pseudo-terminal, without a client.
    #[command(hide = true)]
    AnswerInput(AnswerInputArgs),
}

#[derive(Debug, Args)]
pub struct AnswerInputArgs {
    /// The request's key, as in a server's `inputRequests`.
    pub key: String,
    /// The request, `{"method": ..., "params": ...}`.
    pub request: String,
    #[command(flatten)]
    pub answers: AnswerArgs,
}

/// How a client command answers input requests it cannot ask a person for (shared by the
/// commands that call a server).
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// Answer the input request under KEY with JSON, the whole answer: an ElicitResult
    /// ('{"action":"accept","content":{...}}', '{"action":"decline"}'), a
    /// CreateMessageResult or a ListRootsResult. Repeatable; each answers its key once.
    /// Requests without one are asked in the terminal, or fail when stdin is not a terminal.
    #[arg(long = "answer", value_name = "KEY=JSON", value_parser = parse_preset)]
    pub answers: Vec<PresetAnswer>,

    /// Answer sampling requests by running CMD (through `sh -c`) with the request as JSON on
    /// stdin; it prints the CreateMessageResult on stdout. Without it, you type the reply.
    #[arg(long, value_name = "CMD")]
    pub sampling_command: Option<String>,

    /// How long --sampling-command may take for one request (30s, 2m) [default: 60s].
    #[arg(long, value_parser = parse_duration)]
    pub sampling_timeout: Option<Duration>,
}

#[derive(Debug, Args)]
pub struct ConformanceClientArgs {
    /// The scenario's mock server (the suite appends it as the last argument).
    pub url: String,

    /// The scenario the suite runs.
    #[arg(long, env = "MCP_CONFORMANCE_SCENARIO")]
    pub scenario: Option<String>,

    /// The protocol revision of the scenario: 2026-07-28 speaks the modern era,
    /// an earlier one begins with initialize; absent, the era is detected.
    #[arg(long, env = "MCP_CONFORMANCE_PROTOCOL_VERSION")]
    pub protocol_version: Option<String>,

    /// The scenario's context, JSON; its `toolCalls` (`[{name, arguments}]`) are the calls
    /// to make instead of calling every listed tool.
    #[arg(long, env = "MCP_CONFORMANCE_CONTEXT")]
    pub context: Option<String>,
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

#[derive(Debug, Args)]
pub struct BenchArgs {
    /// The MCP endpoint, plain HTTP/1.1, e.g. http://127.0.0.1:8080/t/demo/mcp.
    #[arg(long)]
    pub url: String,

    /// call: tools/call echo; mrtr: sealed two-round greet flows; mix: both, alternately;
    /// legacy: greet on a 2025-11-25 session, its elicitation answered through the shim.
    #[arg(long, value_enum, default_value_t = Mode::Call)]
    pub mode: Mode,

    /// Concurrent clients, each on its own keep-alive connection.
    #[arg(long, short = 'c', default_value_t = 32)]
    pub connections: usize,

    /// The measured window (10s, 500ms, 2m).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub duration: Duration,

    /// Load before the window, not measured.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub warmup: Duration,

    /// API key, sent as `Authorization: Bearer`.
    #[arg(long, env = "ROUNDTRIP_BENCH_KEY")]
    pub key: Option<String>,

    /// The text `echo` is asked to return.
    #[arg(long, default_value = "hello")]
    pub text: String,

    /// Accept results without `resultType` (peers that do not stamp it); a wrong one still
    /// fails.
    #[arg(long)]
    pub lenient_result_type: bool,

    /// The server's process id: its RSS (/proc/PID/status) and CPU go into the report.
    #[arg(long)]
    pub server_pid: Option<u32>,

    /// Write the report as JSON to this file.
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// One request's time limit.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub timeout: Duration,

    /// Legacy mode: wait this long before answering each elicitation (holds flows open).
    #[arg(long, default_value = "0s", value_parser = parse_duration)]
    pub hold: Duration,
}
