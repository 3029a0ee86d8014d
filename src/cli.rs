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
    /// client begins with initialize. Logs go to stderr. At most stdio.max_in_flight requests
    /// run at once (stdin waits meanwhile); a line over stdio.max_line_bytes gets -32600. At
    /// the end of input every request is answered; exits 1 if one was still running after
    /// stdio.drain_timeout_ms (it got -32603) or stdout closed early.
    Stdio(StdioArgs),
    /// The client the official conformance suite launches (`conformance client --command`):
    /// connects to URL, lists the tools and calls them, answering every input request.
    ConformanceClient(ConformanceClientArgs),
    /// Drive concurrent clients against an MCP endpoint; report throughput, latency
    /// percentiles, errors and the server's memory (see BENCHMARKS.md).
    Bench(BenchArgs),
    /// Create or upgrade the tenant store's tables (also done at every start)
    Migrate,
    /// Create, list, show, suspend, resume or delete tenants in the store
    ///
    /// Works on the store the settings name (ROUNDTRIP_DATABASE_URL, or SQLite under
    /// data_dir); a running server follows within tenants.follow_ms.
    Tenant(TenantArgs),
    /// Create, list or revoke a tenant's API keys in the store
    Key(KeyArgs),
    /// Call a tool of any MCP server, answering its input requests (forms in the terminal)
    ///
    /// Prints the tool's text content (every content block, --json for the whole result).
    /// Exits 1 when the call fails or the tool reports an error.
    Call(CallArgs),
    /// Get a prompt of any MCP server, answering its input requests; prints its messages
    Prompt(PromptArgs),
    /// Read a resource of any MCP server, answering its input requests; prints its contents
    Read(ReadArgs),
}

#[derive(Debug, Args)]
pub struct TenantArgs {
    #[command(subcommand)]
    pub command: TenantCommand,
    /// Print JSON (the admin API's shapes) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum TenantCommand {
    /// Create a tenant, served at /t/SLUG/mcp
    Create {
        /// 2 to 63 lowercase letters, digits and '-', starting with a letter or digit.
        slug: String,
        /// A name for people [default: the slug].
        #[arg(long)]
        name: Option<String>,
        /// A catalog it serves (repeatable): examples, conformance.
        #[arg(long = "catalog", required = true)]
        catalogs: Vec<String>,
        /// How MCP callers authenticate.
        #[arg(long, value_enum, default_value_t = AuthArg::ApiKey)]
        auth: AuthArg,
        /// What clients are told about the server.
        #[arg(long)]
        instructions: Option<String>,
    },
    /// List every tenant
    List,
    /// Show one tenant
    Show { slug: String },
    /// Suspend a tenant: its MCP endpoint answers 403
    Suspend { slug: String },
    /// Resume a suspended tenant
    Resume { slug: String },
    /// Delete a tenant and its keys
    Delete { slug: String },
}

/// `--auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthArg {
    ApiKey,
    Anonymous,
}

#[derive(Debug, Args)]
pub struct KeyArgs {
    #[command(subcommand)]
    pub command: KeyCommand,
    /// Print JSON (the admin API's shapes) instead of text.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Debug, Subcommand)]
pub enum KeyCommand {
    /// Issue a key; its secret is printed this once
    Create {
        /// The tenant.
        tenant: String,
        /// What it may be used for (repeatable): mcp, tenant-admin [default: mcp].
        #[arg(long = "scope", value_enum)]
        scopes: Vec<ScopeArg>,
        /// Limit it to this tool (repeatable; any --allow-* limits the key to those listed).
        #[arg(long = "allow-tool", value_name = "NAME")]
        tools: Vec<String>,
        /// Limit it to this prompt (repeatable).
        #[arg(long = "allow-prompt", value_name = "NAME")]
        prompts: Vec<String>,
        /// Limit it to this resource URI or URI template (repeatable).
        #[arg(long = "allow-resource", value_name = "URI")]
        resources: Vec<String>,
        /// When it stops working (RFC 3339, e.g. 2027-01-31T12:00:00Z).
        #[arg(long, value_name = "TIME")]
        expires_at: Option<String>,
    },
    /// List a tenant's keys (never their secrets)
    List { tenant: String },
    /// Revoke a key: it stops working within tenants.follow_ms
    Revoke { tenant: String, id: String },
}

/// `--scope`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ScopeArg {
    Mcp,
    TenantAdmin,
}

#[derive(Debug, Args)]
pub struct CallArgs {
    /// The server's MCP endpoint, e.g. http://127.0.0.1:8080/t/demo/mcp.
    pub url: String,
    /// The tool to call.
    pub tool: String,
    /// The tool's arguments, a JSON object.
    #[arg(long, value_name = "JSON", value_parser = parse_object)]
    pub args: Option<serde_json::Map<String, serde_json::Value>>,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub answers: AnswerArgs,
}

#[derive(Debug, Args)]
pub struct PromptArgs {
    /// The server's MCP endpoint.
    pub url: String,
    /// The prompt to get.
    pub name: String,
    /// The prompt's arguments, a JSON object of strings.
    #[arg(long, value_name = "JSON", value_parser = parse_object)]
    pub args: Option<serde_json::Map<String, serde_json::Value>>,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub answers: AnswerArgs,
}

#[derive(Debug, Args)]
pub struct ReadArgs {
    /// The server's MCP endpoint.
    pub url: String,
    /// The resource's URI.
    pub uri: String,
    #[command(flatten)]
    pub connect: ConnectArgs,
    #[command(flatten)]
    pub answers: AnswerArgs,
}

/// How a client command reaches its server (shared by call, prompt and read).
#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// The protocol era: auto probes server/discover and falls back to initialize;
    /// modern speaks 2026-07-28 at once; legacy begins with initialize.
    #[arg(long, value_enum, default_value_t = EraArg::Auto)]
    pub era: EraArg,

    /// A header for every HTTP request, NAME:VALUE. Repeatable.
    #[arg(long = "header", value_name = "NAME:VALUE", value_parser = parse_header)]
    pub headers: Vec<(String, String)>,

    /// Send `Authorization: Bearer TOKEN` [env: ROUNDTRIP_BEARER].
    #[arg(
        long,
        value_name = "TOKEN",
        env = "ROUNDTRIP_BEARER",
        hide_env = true,
        hide_env_values = true
    )]
    pub bearer: Option<String>,

    /// Print the whole result as one line of JSON instead of its text.
    #[arg(long)]
    pub json: bool,

    /// A root the server may see (a URI, e.g. file:///home/ada/project), answered to its
    /// roots/list; declares the roots capability. Repeatable.
    #[arg(long = "root", value_name = "URI")]
    pub roots: Vec<String>,

    /// The input-required rounds a call may take before it fails.
    #[arg(long, default_value_t = roundtrip_client::DEFAULT_MAX_ROUNDS, value_parser = clap::value_parser!(u32).range(1..=100))]
    pub max_rounds: u32,
}

/// `--era`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EraArg {
    Auto,
    Modern,
    Legacy,
}

/// `--header NAME:VALUE`; the value is trimmed, as HTTP trims it.
fn parse_header(arg: &str) -> Result<(String, String), String> {
    match arg.split_once(':') {
        Some((name, value)) if !name.trim().is_empty() => {
            Ok((name.trim().to_owned(), value.trim().to_owned()))
        }
        _ => Err("expected NAME:VALUE, e.g. 'X-Team: blue'".into()),
    }
}

/// `--args JSON`: a JSON object.
fn parse_object(arg: &str) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    match serde_json::from_str(arg) {
        Ok(serde_json::Value::Object(object)) => Ok(object),
        Ok(_) => Err("expected a JSON object, e.g. '{\"text\": \"hi\"}'".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

/// How a client command answers input requests it cannot ask a person for (shared by the
/// commands that call a server).
#[derive(Debug, Args)]
pub struct AnswerArgs {
    /// Answer the input request under KEY with JSON, the whole answer: an ElicitResult
    /// ('{"action":"accept","content":{...}}', '{"action":"decline"}'), a
    /// CreateMessageResult or a ListRootsResult. Repeatable; each answers its key once.
    /// A legacy server's requests have no key: there KEY is the method (elicitation/create,
    /// sampling/createMessage, roots/list). Requests without one are asked in the terminal,
    /// or fail when stdin is not a terminal.
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
    /// legacy: greet on a 2025-11-25 session, its elicitation answered through the shim;
    /// soak: mixed traffic (echo, sealed flows, legacy shim flows, listen streams opened and
    /// closed, hostile requests that must get their expected errors) at --rate or
    /// --calibrate for --duration, reported every --interval with p99 and the server's RSS
    /// (--server-pid); exits 1 on any unexpected answer.
    #[arg(long, value_enum, default_value_t = Mode::Call)]
    pub mode: Mode,

    /// Concurrent clients, each on its own keep-alive connection.
    #[arg(long, short = 'c', default_value_t = 32)]
    pub connections: usize,

    /// The measured window (10s, 500ms, 2m) [default: 10s; soak: 600s].
    #[arg(long, value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Load before the window, not measured [default: 1s; soak: 60s].
    #[arg(long, value_parser = parse_duration)]
    pub warmup: Option<Duration>,

    /// Soak: requests per second (a flow's rounds count one each).
    #[arg(long, conflicts_with = "calibrate")]
    pub rate: Option<f64>,

    /// Soak: first measure peak echo throughput for 5 s, then soak at half of it.
    #[arg(long)]
    pub calibrate: bool,

    /// Soak: how often a sample is printed and recorded.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub interval: Duration,

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
