//! Settings: embedded defaults, then the optional `roundtrip.toml` (or `--config`), then
//! `ROUNDTRIP_*` environment variables, then command-line flags. The result is validated
//! ([`Config::validate`]) before anything uses it, so a bad value stops the binary at start-up
//! with a message naming its key, instead of panicking a worker later (a zero SSE keep-alive
//! period panics tokio's interval; zero workers panics actix) or serving a server that refuses
//! every request (an empty host allow-list).
//!
//! The defaults are the runtime's own (`HttpConfig`, `RuntimeConfig`, `SealPolicy`), read from
//! it rather than repeated, so the binary and the library cannot drift apart. Only the settings
//! the runtime has no notion of (`listen`, `workers`, `log`, `demo_api_key`) are defined here.
//!
//! Settings come from the environment only through this module, with two deliberate
//! exceptions, both needed before these settings exist:
//! - `ROUNDTRIP_CONFIG`, read by clap in `cli.rs` as the default of `--config`: it names the
//!   file to load, so it cannot come from that file.
//! - `RUST_LOG`, read by the tracing set-up (`telemetry.rs`): the filter every Rust operator
//!   expects to work, so it wins over the `log` setting.
//!
//! And, only when traces are exported (`otlp_endpoint` set), the OpenTelemetry SDK's own
//! standard `OTEL_*` variables (`OTEL_BSP_SCHEDULE_DELAY` and the other batch settings,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_EXPORTER_OTLP_TIMEOUT`, `OTEL_RESOURCE_ATTRIBUTES`),
//! read by the SDK itself: collectors' operators know them, and repeating them here would only
//! rename them. The default `worker_id` reads the host name (`/proc/sys/kernel/hostname`, else
//! `HOSTNAME`).

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use roundtrip_runtime::dispatch::{LegacyConfig, RuntimeConfig};
use roundtrip_runtime::fleet::directory::FleetCaps;
use roundtrip_runtime::redis::{Redis, RedisUrlError};
use roundtrip_runtime::sealing::{
    MasterKey, MasterKeyError, SealPolicy, DEFAULT_REPLAY_MAX_BYTES, REPLAY_ENTRY_BYTES,
};
use roundtrip_runtime::transport::http::HttpConfig;
use roundtrip_runtime::transport::stdio::StdioLimits;
use roundtrip_tenants::redis_limits::RedisFallback;
use serde::Deserialize;

use crate::budgets::{self, BudgetSettings, ClientSettings, StreamSettings};
use crate::cli::ServeArgs;

/// The longest SSE keep-alive period accepted: beyond an hour every proxy has long since
/// closed an idle stream, and a far-future first tick would overflow `Instant`.
pub const MAX_SSE_KEEPALIVE_MS: u64 = 60 * 60 * 1000;

/// The most input-required rounds a flow may be allowed. Each round is a client round trip
/// and a re-sealed state; a flow that needs more is better split into several calls.
pub const MAX_ROUNDS_LIMIT: u32 = 64;

/// The smallest `state.max_token_bytes` accepted: a token carrying no state at all is a few
/// hundred bytes, so a smaller cap would make every input-required result fail to seal.
pub const MIN_TOKEN_BYTES: usize = 1024;

/// The host names `HostGuard::localhost()` allows; kept here because the guard does not
/// expose its list (a test checks they agree).
const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "[::1]"];

#[derive(Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `host:port` to listen on.
    pub listen: String,
    /// HTTP workers; `None` = one per CPU.
    pub workers: Option<usize>,
    /// The demo tenant's API key; generated (and printed once) when unset.
    pub demo_api_key: Option<String>,
    /// Log filter (tracing `EnvFilter` syntax); `RUST_LOG` wins.
    pub log: String,
    /// This process's name in a fleet (`ROUNDTRIP_WORKER_ID`): on every log line
    /// (`worker_id=…`) and, as `service.instance.id`, on every exported span. Unset:
    /// `{host name}-{pid}` ([`Config::worker_id`]). In Kubernetes, set it to the pod's name
    /// through the downward API. Printable, no spaces, 1 to 128 characters.
    pub worker_id: Option<String>,
    /// The OTLP/HTTP receiver traces are exported to (`ROUNDTRIP_OTLP_ENDPOINT`), as
    /// `OTEL_EXPORTER_OTLP_ENDPOINT` is written: the base URL, `/v1/traces` is added (e.g.
    /// `http://otel-collector:4318`). Unset: nothing of OpenTelemetry is installed.
    pub otlp_endpoint: Option<String>,
    /// The tenant store: `sqlite://PATH` or `postgres://…` (`ROUNDTRIP_DATABASE_URL`);
    /// unset: SQLite at `{data_dir}/roundtrip.db`.
    pub database_url: Option<String>,
    /// Where embedded state lives (the default SQLite store).
    pub data_dir: String,
    /// The admin API's operator token (`ROUNDTRIP_ADMIN_TOKEN`); unset: only tenant-admin
    /// keys reach the admin API.
    pub admin_token: Option<String>,
    /// The master key that wraps requestState keys at rest (`ROUNDTRIP_MASTER_KEY`): 32
    /// bytes, base64. Unset: the key in `{data_dir}/master.key`, generated on first start
    /// (see `master_key.rs`).
    pub master_key: Option<String>,
    /// Redis (`ROUNDTRIP_REDIS_URL`, `redis://[:password@]host:port[/db]`): shares key rings,
    /// single-use state claims and rate limits between worker processes. Unset: each process
    /// keeps its own, and key rings live in the tenant store.
    pub redis_url: Option<String>,
    /// The prefix of every Redis key and channel this fleet uses (`ROUNDTRIP_REDIS_PREFIX`),
    /// so several fleets can share one Redis. Letters, digits, `-`, `_`, `.`; 1 to 64.
    pub redis_prefix: String,
    /// With Redis, the URL the other workers reach this one at, to forward a legacy session's
    /// requests to it (`ROUNDTRIP_ADVERTISE_URL`, `http://10.0.0.5:8080`). Unset: the listen
    /// address, or, listening on `0.0.0.0`, this host's address on its route to Redis.
    pub advertise_url: Option<String>,
    pub limits: LimitsSettings,
    pub tenants: TenantsSettings,
    pub audit: AuditSettings,
    pub http: HttpSettings,
    pub mcp: McpSettings,
    pub state: StateSettings,
    pub legacy: LegacySettings,
    pub budgets: BudgetSettings,
    pub streams: StreamSettings,
    pub clients: ClientSettings,
    pub stdio: StdioSettings,
    pub replay: ReplaySettings,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("workers", &self.workers)
            .field(
                "demo_api_key",
                &self.demo_api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("log", &self.log)
            .field("worker_id", &self.worker_id)
            .field(
                "otlp_endpoint",
                &self.otlp_endpoint.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "database_url",
                &self.database_url.as_ref().map(|_| "<redacted>"),
            )
            .field("data_dir", &self.data_dir)
            .field(
                "admin_token",
                &self.admin_token.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "master_key",
                &self.master_key.as_ref().map(|_| "<redacted>"),
            )
            .field("redis_url", &self.redis_url.as_ref().map(|_| "<redacted>"))
            .field("redis_prefix", &self.redis_prefix)
            .field("advertise_url", &self.advertise_url)
            .field("limits", &self.limits)
            .field("tenants", &self.tenants)
            .field("audit", &self.audit)
            .field("http", &self.http)
            .field("mcp", &self.mcp)
            .field("state", &self.state)
            .field("legacy", &self.legacy)
            .field("budgets", &self.budgets)
            .field("streams", &self.streams)
            .field("clients", &self.clients)
            .field("stdio", &self.stdio)
            .field("replay", &self.replay)
            .finish()
    }
}

/// Tenants' rate limits, when their buckets are in Redis (`redis_url` set): shared by every
/// process of the fleet.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct LimitsSettings {
    /// What a request a limit applies to gets when Redis fails to answer within its bound:
    /// `open` (the default: admitted; an outage of Redis lifts the limits) or `closed`
    /// (refused, HTTP 503 with `Retry-After: 1`).
    pub redis_fallback: RedisFallback,
}

/// How a serving process follows the tenant store.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct TenantsSettings {
    /// How often the store's change log is read: changes made by another process or the CLI
    /// (revocations, suspensions) take effect within this.
    pub follow_ms: u64,
}

impl Default for TenantsSettings {
    fn default() -> Self {
        Self { follow_ms: 500 }
    }
}

/// The audit log of calls and admin actions.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct AuditSettings {
    /// Record every `tools/call`, `prompts/get` and `resources/read`.
    pub enabled: bool,
    /// Days records are kept.
    pub retention_days: u64,
    /// Records waiting to be written; beyond it records are dropped and counted.
    pub queue: usize,
}

impl Default for AuditSettings {
    fn default() -> Self {
        Self {
            enabled: true,
            retention_days: 30,
            queue: roundtrip_tenants::audit_log::AuditSettings::default().queue,
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct HttpSettings {
    pub max_body_bytes: usize,
    pub body_timeout_ms: u64,
    pub sse_keepalive_ms: u64,
    /// Host names accepted in `Host` and `Origin` (DNS-rebinding protection); `*` = any.
    pub allowed_hosts: Vec<String>,
    /// Further full origins accepted in `Origin`.
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct McpSettings {
    pub request_timeout_ms: u64,
    /// How long a handler whose client went away may go on cleaning up.
    pub cancel_grace_ms: u64,
    /// Input-required rounds one flow may take.
    pub max_rounds: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct StateSettings {
    /// Lifetime of a sealed `requestState`, per round.
    pub ttl_secs: u64,
    pub clock_skew_secs: u64,
    /// Largest `requestState` token accepted (checked before decoding).
    pub max_token_bytes: usize,
    /// Largest handler state sealed, counted together with the answer schemas sealed beside
    /// it (the compiled `requestedSchema` of the round's form elicitations).
    pub max_state_bytes: usize,
}

/// Legacy (2025-11-25 and older) sessions and the shim that relays input requests to them.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct LegacySettings {
    /// Live legacy sessions per process; `initialize` beyond it gets HTTP 503.
    pub max_sessions: usize,
    /// Live legacy sessions one caller (an API key, or an anonymous client's address) holds
    /// per tenant; with Redis, across the whole fleet.
    pub max_sessions_per_caller: usize,
    /// With Redis: live legacy sessions in the whole fleet; `initialize` beyond it gets
    /// -31503 (HTTP 503) on any worker.
    pub max_fleet_sessions: usize,
    /// Requests one legacy session runs at once (held shim flows among them).
    pub max_requests_per_session: usize,
    /// A session with no request, flow or open stream for this long ends.
    pub idle_timeout_secs: u64,
    /// The same for a session never used after `initialize` (the shorter applies).
    pub unused_timeout_secs: u64,
    /// How long the shim waits for the client's answer to one input request.
    pub leg_timeout_secs: u64,
}

/// The record of sealed states that completed a call of a single-use tool (`notes_delete`).
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct ReplaySettings {
    /// Bytes the record may hold (each state is charged a fixed 192 bytes); when full, a
    /// single-use tool's retry is refused (-31429) until its earliest entry expires.
    pub max_bytes: usize,
}

impl Default for ReplaySettings {
    fn default() -> Self {
        Self {
            max_bytes: DEFAULT_REPLAY_MAX_BYTES,
        }
    }
}

impl Default for LegacySettings {
    fn default() -> Self {
        let runtime = LegacyConfig::default();
        Self {
            max_sessions: runtime.max_sessions,
            max_sessions_per_caller: runtime.max_sessions_per_caller,
            max_fleet_sessions: DEFAULT_MAX_FLEET_SESSIONS,
            max_requests_per_session: runtime.max_requests_per_session,
            idle_timeout_secs: runtime.idle_timeout.as_secs(),
            unused_timeout_secs: runtime.unused_timeout.as_secs(),
            leg_timeout_secs: runtime.leg_timeout.as_secs(),
        }
    }
}

/// Live legacy sessions a fleet holds by default: ten workers at the per-process default.
const DEFAULT_MAX_FLEET_SESSIONS: usize = 100_000;

impl LegacySettings {
    /// The fleet-wide caps a worker records its sessions within.
    pub fn fleet_caps(&self) -> FleetCaps {
        FleetCaps {
            sessions: self.max_fleet_sessions,
            per_caller: self.max_sessions_per_caller,
        }
    }

    pub fn runtime(&self) -> LegacyConfig {
        LegacyConfig {
            max_sessions: self.max_sessions,
            max_sessions_per_caller: self.max_sessions_per_caller,
            max_requests_per_session: self.max_requests_per_session,
            idle_timeout: Duration::from_secs(self.idle_timeout_secs),
            unused_timeout: Duration::from_secs(self.unused_timeout_secs),
            leg_timeout: Duration::from_secs(self.leg_timeout_secs),
        }
    }
}

/// `roundtrip stdio`: how much it takes in at once, and how long it waits at the end.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct StdioSettings {
    /// Requests running at once; with that many running, stdin is not read (1..=65536).
    pub max_in_flight: usize,
    /// The longest line read, newline excluded (1..=1 GiB); a longer one gets -32600 and is
    /// skipped unread.
    pub max_line_bytes: usize,
    /// At end of input, how long running requests may take to finish (1..=1 day); each one
    /// still running then gets its own -32603 and the command exits 1.
    pub drain_timeout_ms: u64,
}

impl Default for StdioSettings {
    fn default() -> Self {
        let limits = StdioLimits::default();
        Self {
            max_in_flight: limits.max_in_flight,
            max_line_bytes: limits.max_line_bytes,
            drain_timeout_ms: millis(limits.drain_timeout),
        }
    }
}

impl StdioSettings {
    pub fn limits(&self) -> StdioLimits {
        StdioLimits {
            max_in_flight: self.max_in_flight,
            max_line_bytes: self.max_line_bytes,
            drain_timeout: Duration::from_millis(self.drain_timeout_ms),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            workers: None,
            demo_api_key: None,
            log: "info".into(),
            worker_id: None,
            otlp_endpoint: None,
            database_url: None,
            data_dir: "./.roundtrip".into(),
            admin_token: None,
            master_key: None,
            redis_url: None,
            redis_prefix: "roundtrip".into(),
            advertise_url: None,
            limits: LimitsSettings::default(),
            tenants: TenantsSettings::default(),
            audit: AuditSettings::default(),
            http: HttpSettings::default(),
            mcp: McpSettings::default(),
            state: StateSettings::default(),
            legacy: LegacySettings::default(),
            budgets: BudgetSettings::default(),
            streams: StreamSettings::default(),
            clients: ClientSettings::default(),
            stdio: StdioSettings::default(),
            replay: ReplaySettings::default(),
        }
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        let runtime = HttpConfig::default();
        Self {
            max_body_bytes: runtime.max_body_bytes,
            body_timeout_ms: millis(runtime.body_timeout),
            sse_keepalive_ms: millis(runtime.sse_keepalive),
            allowed_hosts: LOOPBACK_HOSTS.map(String::from).to_vec(),
            allowed_origins: Vec::new(),
        }
    }
}

impl Default for McpSettings {
    fn default() -> Self {
        let runtime = RuntimeConfig::default();
        Self {
            request_timeout_ms: millis(runtime.request_timeout),
            cancel_grace_ms: millis(runtime.cancel_grace),
            max_rounds: runtime.max_rounds,
        }
    }
}

impl Default for StateSettings {
    fn default() -> Self {
        let policy = SealPolicy::default();
        Self {
            ttl_secs: policy.ttl.as_secs(),
            clock_skew_secs: policy.clock_skew.as_secs(),
            max_token_bytes: policy.max_token_bytes,
            max_state_bytes: policy.max_state_bytes,
        }
    }
}

/// A runtime default in the whole milliseconds our settings are written in.
fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Why a [`Config`] was refused; each message names the offending key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidConfig {
    #[error("`{key}` must be greater than 0")]
    Zero { key: &'static str },
    #[error("`{key}` is {value}, above the maximum of {max}")]
    AboveMax {
        key: &'static str,
        value: u64,
        max: u64,
    },
    #[error("`{key}` is {value}, below the minimum of {min}")]
    BelowMin {
        key: &'static str,
        value: u64,
        min: u64,
    },
    #[error(
        "`state.max_state_bytes` ({state}) does not fit in `state.max_token_bytes` ({token}): \
         a sealed state is base64 (4/3 of its size) plus about 128 bytes"
    )]
    StateLargerThanToken { state: usize, token: usize },
    #[error(
        "`http.allowed_hosts` is empty, so every request would be refused \
         (list the server's host names, or \"*\" to allow any)"
    )]
    NoAllowedHosts,
    #[error("`listen` is {0:?}, not `host:port` with a port from 0 to 65535")]
    Listen(String),
    /// Never carries the key's text.
    #[error("`master_key` (ROUNDTRIP_MASTER_KEY) is not a master key: {0}")]
    MasterKey(#[source] MasterKeyError),
    /// Never carries the URL, which may hold a password.
    #[error("`redis_url` (ROUNDTRIP_REDIS_URL): {0}")]
    RedisUrl(#[source] RedisUrlError),
    #[error("`redis_prefix` is {0:?}: use 1 to 64 letters, digits, `-`, `_` or `.`")]
    RedisPrefix(String),
    #[error("`advertise_url` is {0:?}: use http://HOST:PORT, as the other workers reach this one")]
    AdvertiseUrl(String),
    #[error(
        "`worker_id` (ROUNDTRIP_WORKER_ID) is {0:?}: use 1 to {MAX_WORKER_ID_CHARS} printable \
         characters, no spaces"
    )]
    WorkerId(String),
    /// Carries why, never the URL: its user part may hold a secret.
    #[error(
        "`otlp_endpoint` (ROUNDTRIP_OTLP_ENDPOINT) is not an http:// or https:// URL like \
         http://otel-collector:4318: {0}"
    )]
    OtlpEndpoint(String),
}

/// The longest `worker_id`: a Kubernetes pod name is at most 63, a host name 64, plus a pid.
pub const MAX_WORKER_ID_CHARS: usize = 128;

/// Longest idle time of a legacy session, and longest wait for one answer: a day.
const MAX_LEGACY_TIMEOUT_SECS: u64 = 24 * 60 * 60;

/// Slowest reading of the store's change log: a minute (revocations wait that long at most).
const MAX_FOLLOW_MS: u64 = 60_000;

/// Longest audit retention: ten years.
const MAX_AUDIT_RETENTION_DAYS: u64 = 3650;

/// Most stdio requests at once, longest stdio line (a GiB) and longest stdio drain (a day).
const MAX_STDIO_IN_FLIGHT: u64 = 65_536;
const MAX_STDIO_LINE_BYTES: u64 = 1 << 30;
const MAX_STDIO_DRAIN_MS: u64 = 24 * 60 * 60 * 1000;

/// Longest lifetime of a sealed state: a day. Rotated keys stay verifiable that long.
const MAX_STATE_TTL_SECS: u64 = 24 * 60 * 60;

/// The largest handler state that fits a token of `token_bytes` once sealed: base64 grows
/// it by 4/3, and the version, key id, nonce, tag and claims take about 128 bytes more.
fn sealable_state_bytes(token_bytes: usize) -> usize {
    (token_bytes / 4 * 3).saturating_sub(128)
}

impl Config {
    /// Defaults, then `path` (or `./roundtrip.toml` if present), then `ROUNDTRIP_*`. Not yet
    /// validated: apply the flags (`with_serve_args`) first.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Config> {
        Self::load_from(path, None)
    }

    /// [`Config::load`] with the environment given as a map (`None`: the process's own).
    fn load_from(
        path: Option<&Path>,
        environment: Option<config::Map<String, String>>,
    ) -> anyhow::Result<Config> {
        let mut builder = config::Config::builder();
        match path {
            Some(p) => builder = builder.add_source(config::File::from(p).required(true)),
            None => {
                builder =
                    builder.add_source(config::File::with_name("roundtrip.toml").required(false))
            }
        }
        let env = config::Environment::with_prefix("ROUNDTRIP")
            .prefix_separator("_")
            .separator("__")
            .list_separator(",")
            .with_list_parse_key("http.allowed_hosts")
            .with_list_parse_key("http.allowed_origins")
            .with_list_parse_key("clients.trusted_proxies")
            .try_parsing(true)
            .source(environment);
        let config: Config = builder
            .add_source(env)
            .build()
            .and_then(|c| c.try_deserialize())
            .context("reading roundtrip.toml and ROUNDTRIP_* variables")?;
        // Not validated yet: command-line flags may still override a value (see
        // `with_serve_args`, and `wiring::start_with`, which validate).
        Ok(config)
    }

    /// Applies `serve`'s flags over the loaded settings, and validates the result (the flags
    /// can set `listen` and `workers`).
    pub fn with_serve_args(mut self, args: &ServeArgs) -> Result<Config, InvalidConfig> {
        if let Some(listen) = &args.listen {
            self.listen = listen.clone();
        }
        if args.workers.is_some() {
            self.workers = args.workers;
        }
        self.validate()?;
        Ok(self)
    }

    /// Refuses values that would panic the server, make it refuse every request, or make
    /// sealing impossible. The first problem found is reported.
    pub fn validate(&self) -> Result<(), InvalidConfig> {
        let Some((host, port)) = self.listen.rsplit_once(':') else {
            return Err(InvalidConfig::Listen(self.listen.clone()));
        };
        if host.is_empty() || port.parse::<u16>().is_err() {
            return Err(InvalidConfig::Listen(self.listen.clone()));
        }
        if self.workers == Some(0) {
            return Err(InvalidConfig::Zero { key: "workers" });
        }
        self.configured_master_key()?;
        if let Some(url) = &self.redis_url {
            Redis::check_url(url).map_err(InvalidConfig::RedisUrl)?;
        }
        let prefix_ok = (1..=64).contains(&self.redis_prefix.len())
            && self
                .redis_prefix
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
        if !prefix_ok {
            return Err(InvalidConfig::RedisPrefix(self.redis_prefix.clone()));
        }
        if let Some(url) = &self.advertise_url {
            if !is_advertise_url(url) {
                return Err(InvalidConfig::AdvertiseUrl(url.clone()));
            }
        }
        if let Some(id) = &self.worker_id {
            if !is_worker_id(id) {
                return Err(InvalidConfig::WorkerId(id.clone()));
            }
        }
        if let Some(endpoint) = &self.otlp_endpoint {
            check_otlp_endpoint(endpoint).map_err(InvalidConfig::OtlpEndpoint)?;
        }

        let http = &self.http;
        non_zero("http.max_body_bytes", http.max_body_bytes as u64)?;
        non_zero("http.body_timeout_ms", http.body_timeout_ms)?;
        within(
            "http.sse_keepalive_ms",
            http.sse_keepalive_ms,
            MAX_SSE_KEEPALIVE_MS,
        )?;
        // A list of blank names (`ROUNDTRIP_HTTP__ALLOWED_HOSTS=` parses as `[""]`) allows
        // nothing either.
        if http.allowed_hosts.iter().all(|h| h.trim().is_empty()) {
            return Err(InvalidConfig::NoAllowedHosts);
        }

        let mcp = &self.mcp;
        non_zero("mcp.request_timeout_ms", mcp.request_timeout_ms)?;
        within(
            "mcp.max_rounds",
            u64::from(mcp.max_rounds),
            u64::from(MAX_ROUNDS_LIMIT),
        )?;

        within("tenants.follow_ms", self.tenants.follow_ms, MAX_FOLLOW_MS)?;
        within(
            "audit.retention_days",
            self.audit.retention_days,
            MAX_AUDIT_RETENTION_DAYS,
        )?;
        non_zero("audit.queue", self.audit.queue as u64)?;

        let legacy = &self.legacy;
        non_zero("legacy.max_sessions", legacy.max_sessions as u64)?;
        non_zero(
            "legacy.max_sessions_per_caller",
            legacy.max_sessions_per_caller as u64,
        )?;
        non_zero(
            "legacy.max_fleet_sessions",
            legacy.max_fleet_sessions as u64,
        )?;
        within(
            "legacy.idle_timeout_secs",
            legacy.idle_timeout_secs,
            MAX_LEGACY_TIMEOUT_SECS,
        )?;
        within(
            "legacy.unused_timeout_secs",
            legacy.unused_timeout_secs,
            MAX_LEGACY_TIMEOUT_SECS,
        )?;
        within(
            "legacy.leg_timeout_secs",
            legacy.leg_timeout_secs,
            MAX_LEGACY_TIMEOUT_SECS,
        )?;

        if let Some(key) = budgets::zero_key(&self.budgets, &self.streams) {
            return Err(InvalidConfig::Zero { key });
        }
        let stdio = &self.stdio;
        within(
            "stdio.max_in_flight",
            stdio.max_in_flight as u64,
            MAX_STDIO_IN_FLIGHT,
        )?;
        within(
            "stdio.max_line_bytes",
            stdio.max_line_bytes as u64,
            MAX_STDIO_LINE_BYTES,
        )?;
        within(
            "stdio.drain_timeout_ms",
            stdio.drain_timeout_ms,
            MAX_STDIO_DRAIN_MS,
        )?;

        let state = &self.state;
        non_zero("state.ttl_secs", state.ttl_secs)?;
        if state.max_token_bytes < MIN_TOKEN_BYTES {
            return Err(InvalidConfig::BelowMin {
                key: "state.max_token_bytes",
                value: state.max_token_bytes as u64,
                min: MIN_TOKEN_BYTES as u64,
            });
        }
        within("state.ttl_secs", state.ttl_secs, MAX_STATE_TTL_SECS)?;
        if state.max_state_bytes > sealable_state_bytes(state.max_token_bytes) {
            return Err(InvalidConfig::StateLargerThanToken {
                state: state.max_state_bytes,
                token: state.max_token_bytes,
            });
        }
        if self.replay.max_bytes < REPLAY_ENTRY_BYTES {
            return Err(InvalidConfig::BelowMin {
                key: "replay.max_bytes",
                value: self.replay.max_bytes as u64,
                min: REPLAY_ENTRY_BYTES as u64,
            });
        }
        Ok(())
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.mcp.request_timeout_ms)
    }

    /// The master key set by `master_key` (`ROUNDTRIP_MASTER_KEY`), if one is.
    pub fn configured_master_key(&self) -> Result<Option<MasterKey>, InvalidConfig> {
        self.master_key
            .as_deref()
            .map(MasterKey::from_base64)
            .transpose()
            .map_err(InvalidConfig::MasterKey)
    }

    /// This process's name in the fleet: `worker_id`, or `{host name}-{pid}` (the host name
    /// alone tells no two processes of one machine apart; the pid alone, no two machines).
    pub fn worker_id(&self) -> String {
        match &self.worker_id {
            Some(id) => id.clone(),
            None => format!("{}-{}", host_name(), std::process::id()),
        }
    }

    /// Where the generated master key is kept when `master_key` is unset.
    pub fn master_key_file(&self) -> std::path::PathBuf {
        Path::new(&self.data_dir).join("master.key")
    }

    /// The tenant store's URL: `database_url`, or the SQLite file under `data_dir`.
    pub fn store_url(&self) -> String {
        match &self.database_url {
            Some(url) => url.clone(),
            None => {
                let dir = self.data_dir.trim_end_matches('/');
                format!("sqlite://{dir}/roundtrip.db")
            }
        }
    }
}

/// The kernel's host name (a container's or pod's own), else `HOSTNAME`, else `localhost`;
/// kept to what a worker id may hold.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default();
    let name: String = name
        .trim()
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .take(MAX_WORKER_ID_CHARS - 11)
        .collect();
    if name.is_empty() {
        "localhost".to_owned()
    } else {
        name
    }
}

/// A worker id stays one token of a log line: printable, no spaces, not too long.
fn is_worker_id(id: &str) -> bool {
    let chars = id.chars().count();
    (1..=MAX_WORKER_ID_CHARS).contains(&chars)
        && id.chars().all(|c| !c.is_whitespace() && !c.is_control())
}

/// An absolute `http` or `https` URL with a host; `Err` says why not, without the URL.
/// `http://HOST[:PORT]` and nothing more: the other workers put a request's path after it.
fn is_advertise_url(text: &str) -> bool {
    let Ok(url) = url::Url::parse(text) else {
        return false;
    };
    url.scheme() == "http"
        && url.host_str().is_some_and(|h| !h.is_empty())
        && url.username().is_empty()
        && url.password().is_none()
        && url.path() == "/"
        && !text.ends_with('/')
        && url.query().is_none()
        && url.fragment().is_none()
}

fn check_otlp_endpoint(endpoint: &str) -> Result<(), String> {
    let url = url::Url::parse(endpoint).map_err(|e| e.to_string())?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("the scheme is {:?}", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err("it names no host".to_owned());
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err("a query or fragment has no place in it".to_owned());
    }
    Ok(())
}

fn non_zero(key: &'static str, value: u64) -> Result<(), InvalidConfig> {
    if value == 0 {
        return Err(InvalidConfig::Zero { key });
    }
    Ok(())
}

/// `1..=max`.
fn within(key: &'static str, value: u64, max: u64) -> Result<(), InvalidConfig> {
    non_zero(key, value)?;
    if value > max {
        return Err(InvalidConfig::AboveMax { key, value, max });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtrip_runtime::transport::http::HostGuard;

    /// The defaults with `tune` applied, validated.
    fn validated(tune: impl FnOnce(&mut Config)) -> Result<(), InvalidConfig> {
        let mut c = Config::default();
        tune(&mut c);
        c.validate()
    }

    #[test]
    fn a_redis_url_that_is_not_one_is_refused_without_echoing_it() {
        let err = validated(|c| c.redis_url = Some("http://:hunter2@host".into())).unwrap_err();
        assert_eq!(err, InvalidConfig::RedisUrl(RedisUrlError));
        assert!(!err.to_string().contains("hunter2"));
        assert_eq!(
            validated(|c| c.redis_url = Some("redis://127.0.0.1:6379".into())),
            Ok(())
        );
    }

    #[test]
    fn an_advertise_url_must_be_http_host_and_port_and_nothing_more() {
        for good in [
            "http://10.0.0.5:8080",
            "http://worker-1.internal:9000",
            "http://[::1]:80",
        ] {
            assert_eq!(
                validated(|c| c.advertise_url = Some(good.into())),
                Ok(()),
                "{good}"
            );
        }
        for bad in [
            "",
            "10.0.0.5:8080",
            "https://10.0.0.5:8080",
            "http://10.0.0.5:8080/",
            "http://10.0.0.5:8080/mcp",
            "http://10.0.0.5:8080?x=1",
            "http://user@10.0.0.5:8080",
        ] {
            assert_eq!(
                validated(|c| c.advertise_url = Some(bad.into())),
                Err(InvalidConfig::AdvertiseUrl(bad.into())),
                "{bad}"
            );
        }
    }

    #[test]
    fn an_otlp_endpoint_must_be_an_http_url_and_is_not_echoed() {
        for bad in [
            "",
            "otel-collector:4318",
            "grpc://otel-collector:4317",
            "http://",
            "http://user:hunter2@collector:4318?x=1",
        ] {
            let err = validated(|c| c.otlp_endpoint = Some(bad.into())).unwrap_err();
            assert!(
                matches!(err, InvalidConfig::OtlpEndpoint(_)),
                "{bad:?}: {err:?}"
            );
            assert!(!err.to_string().contains("hunter2"), "{err}");
        }
        for good in [
            "http://otel-collector:4318",
            "https://collector.example/otlp/",
            "http://127.0.0.1:4318",
        ] {
            assert_eq!(
                validated(|c| c.otlp_endpoint = Some(good.into())),
                Ok(()),
                "{good}"
            );
        }
    }

    #[test]
    fn the_otlp_endpoint_and_worker_id_come_from_their_variables() {
        let env = config::Map::from([
            (
                "ROUNDTRIP_OTLP_ENDPOINT".to_owned(),
                "http://collector:4318".to_owned(),
            ),
            ("ROUNDTRIP_WORKER_ID".to_owned(), "api-7f9c-x2".to_owned()),
        ]);
        let c = Config::load_from(None, Some(env)).expect("loads");
        assert_eq!(c.otlp_endpoint.as_deref(), Some("http://collector:4318"));
        assert_eq!(c.worker_id(), "api-7f9c-x2");
        assert_eq!(Config::default().otlp_endpoint, None);
    }

    #[test]
    fn the_default_worker_id_is_the_host_name_and_the_pid() {
        let id = Config::default().worker_id();
        let pid = std::process::id().to_string();
        let (host, tail) = id.rsplit_once('-').expect("host-pid");
        assert_eq!(tail, pid);
        assert!(!host.is_empty());
        assert!(is_worker_id(&id), "{id:?}");
    }

    #[test]
    fn a_worker_id_must_be_one_printable_token() {
        for bad in [
            "",
            "two words",
            "tab\there",
            "line\nbreak",
            &"x".repeat(129),
        ] {
            assert_eq!(
                validated(|c| c.worker_id = Some(bad.into())),
                Err(InvalidConfig::WorkerId(bad.into()))
            );
        }
        for good in [
            "roundtrip-0",
            "api-7f9c4d-x2kq",
            "host.example-123",
            &"x".repeat(128),
        ] {
            assert_eq!(validated(|c| c.worker_id = Some(good.into())), Ok(()));
        }
    }

    #[test]
    fn a_redis_prefix_must_be_a_short_plain_name() {
        for bad in ["", "has space", "a:b", &"x".repeat(65)] {
            assert_eq!(
                validated(|c| c.redis_prefix = bad.into()),
                Err(InvalidConfig::RedisPrefix(bad.into()))
            );
        }
        assert_eq!(
            validated(|c| c.redis_prefix = "fleet-1.eu_west".into()),
            Ok(())
        );
    }

    #[test]
    fn the_redis_fallback_is_open_unless_set_to_closed() {
        assert_eq!(Config::default().limits.redis_fallback, RedisFallback::Open);
        let env = |v: &str| {
            config::Map::from([("ROUNDTRIP_LIMITS__REDIS_FALLBACK".to_owned(), v.to_owned())])
        };
        let closed = Config::load_from(None, Some(env("closed"))).expect("loads");
        assert_eq!(closed.limits.redis_fallback, RedisFallback::Closed);
        let message = format!(
            "{:#}",
            Config::load_from(None, Some(env("shut"))).expect_err("refused")
        );
        assert!(message.contains("redis_fallback"), "{message}");
    }

    #[test]
    fn a_replay_record_too_small_for_one_state_is_refused() {
        assert_eq!(
            validated(|c| c.replay.max_bytes = REPLAY_ENTRY_BYTES - 1),
            Err(InvalidConfig::BelowMin {
                key: "replay.max_bytes",
                value: (REPLAY_ENTRY_BYTES - 1) as u64,
                min: REPLAY_ENTRY_BYTES as u64,
            })
        );
        assert_eq!(
            validated(|c| c.replay.max_bytes = REPLAY_ENTRY_BYTES),
            Ok(())
        );
    }

    #[test]
    fn defaults_listen_on_loopback_8080() {
        let c = Config::default();
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(c.state.ttl_secs, 300);
        assert_eq!(c.mcp.max_rounds, 8);
    }

    #[test]
    fn debug_redacts_the_demo_key() {
        let c = Config {
            demo_api_key: Some("secret-key".into()),
            ..Config::default()
        };
        assert!(!format!("{c:?}").contains("secret-key"));
    }

    #[test]
    fn debug_redacts_the_master_key() {
        let c = Config {
            master_key: Some("c2VjcmV0LW1hc3Rlci1rZXk=".into()),
            ..Config::default()
        };
        assert!(!format!("{c:?}").contains("c2VjcmV0"));
    }

    #[test]
    fn a_master_key_that_is_not_base64_is_refused_naming_the_variable() {
        let err = validated(|c| c.master_key = Some("not base64!".into())).unwrap_err();
        assert_eq!(err, InvalidConfig::MasterKey(MasterKeyError::NotBase64));
        let message = err.to_string();
        assert!(message.contains("ROUNDTRIP_MASTER_KEY"), "{message}");
        assert!(!message.contains("not base64!"), "{message}");
    }

    #[test]
    fn a_master_key_that_is_not_32_bytes_is_refused() {
        // 24 bytes of base64.
        let err = validated(|c| c.master_key = Some("AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA".into()));
        assert_eq!(
            err,
            Err(InvalidConfig::MasterKey(MasterKeyError::WrongLength {
                len: 24
            }))
        );
    }

    #[test]
    fn a_32_byte_base64_master_key_is_accepted() {
        let key = MasterKey::generate().to_base64();
        assert_eq!(validated(|c| c.master_key = Some(key.to_string())), Ok(()));
    }

    #[test]
    fn the_default_allowed_hosts_are_what_the_localhost_guard_allows() {
        let hosts = HttpSettings::default().allowed_hosts;
        assert_eq!(HostGuard::new(hosts, Vec::new()), HostGuard::localhost());
    }

    #[test]
    fn configured_legacy_limits_reach_the_runtime_in_their_units() {
        let mut c = Config::default();
        c.legacy.idle_timeout_secs = 90;
        c.legacy.leg_timeout_secs = 7;
        c.legacy.max_requests_per_session = 3;
        let runtime = c.legacy.runtime();
        assert_eq!(runtime.idle_timeout, Duration::from_secs(90));
        assert_eq!(runtime.leg_timeout, Duration::from_secs(7));
        assert_eq!(runtime.max_requests_per_session, 3);
    }

    #[test]
    fn the_defaults_are_valid() {
        assert_eq!(Config::default().validate(), Ok(()));
    }

    #[test]
    fn port_0_and_a_bracketed_ipv6_host_are_valid_listen_addresses() {
        for listen in ["127.0.0.1:0", "[::1]:8080", "0.0.0.0:65535", "localhost:80"] {
            assert_eq!(validated(|c| c.listen = listen.into()), Ok(()), "{listen}");
        }
    }

    #[test]
    fn a_listen_address_without_a_host_and_u16_port_is_refused() {
        for listen in [
            "",
            "127.0.0.1",
            ":8080",
            "127.0.0.1:",
            "127.0.0.1:65536",
            "host:http",
        ] {
            assert_eq!(
                validated(|c| c.listen = listen.into()),
                Err(InvalidConfig::Listen(listen.into())),
                "{listen:?}"
            );
        }
    }

    #[test]
    fn zero_workers_is_refused_but_unset_means_one_per_cpu() {
        assert_eq!(
            validated(|c| c.workers = Some(0)),
            Err(InvalidConfig::Zero { key: "workers" })
        );
        assert_eq!(validated(|c| c.workers = None), Ok(()));
        assert_eq!(validated(|c| c.workers = Some(1)), Ok(()));
    }

    #[test]
    fn a_zero_sse_keepalive_is_refused() {
        assert_eq!(
            validated(|c| c.http.sse_keepalive_ms = 0),
            Err(InvalidConfig::Zero {
                key: "http.sse_keepalive_ms"
            })
        );
    }

    #[test]
    fn an_sse_keepalive_above_one_hour_is_refused() {
        assert_eq!(
            validated(|c| c.http.sse_keepalive_ms = MAX_SSE_KEEPALIVE_MS),
            Ok(())
        );
        assert_eq!(
            validated(|c| c.http.sse_keepalive_ms = MAX_SSE_KEEPALIVE_MS + 1),
            Err(InvalidConfig::AboveMax {
                key: "http.sse_keepalive_ms",
                value: MAX_SSE_KEEPALIVE_MS + 1,
                max: MAX_SSE_KEEPALIVE_MS
            })
        );
    }

    #[test]
    fn a_zero_body_limit_is_refused() {
        assert_eq!(
            validated(|c| c.http.max_body_bytes = 0),
            Err(InvalidConfig::Zero {
                key: "http.max_body_bytes"
            })
        );
    }

    #[test]
    fn a_zero_body_timeout_is_refused() {
        assert_eq!(
            validated(|c| c.http.body_timeout_ms = 0),
            Err(InvalidConfig::Zero {
                key: "http.body_timeout_ms"
            })
        );
    }

    #[test]
    fn an_empty_or_blank_host_allow_list_is_refused() {
        assert_eq!(
            validated(|c| c.http.allowed_hosts.clear()),
            Err(InvalidConfig::NoAllowedHosts)
        );
        assert_eq!(
            validated(|c| c.http.allowed_hosts = vec![String::new()]),
            Err(InvalidConfig::NoAllowedHosts)
        );
        assert_eq!(
            validated(|c| c.http.allowed_hosts = vec!["*".into()]),
            Ok(())
        );
    }

    #[test]
    fn a_zero_request_timeout_is_refused() {
        assert_eq!(
            validated(|c| c.mcp.request_timeout_ms = 0),
            Err(InvalidConfig::Zero {
                key: "mcp.request_timeout_ms"
            })
        );
    }

    #[test]
    fn max_rounds_must_be_between_1_and_64() {
        assert_eq!(
            validated(|c| c.mcp.max_rounds = 0),
            Err(InvalidConfig::Zero {
                key: "mcp.max_rounds"
            })
        );
        assert_eq!(validated(|c| c.mcp.max_rounds = 1), Ok(()));
        assert_eq!(validated(|c| c.mcp.max_rounds = 64), Ok(()));
        assert_eq!(
            validated(|c| c.mcp.max_rounds = 65),
            Err(InvalidConfig::AboveMax {
                key: "mcp.max_rounds",
                value: 65,
                max: 64
            })
        );
    }

    #[test]
    fn a_zero_state_ttl_is_refused() {
        assert_eq!(
            validated(|c| c.state.ttl_secs = 0),
            Err(InvalidConfig::Zero {
                key: "state.ttl_secs"
            })
        );
    }

    #[test]
    fn a_token_cap_below_1024_bytes_is_refused() {
        let tiny = |c: &mut Config| {
            c.state.max_token_bytes = 1023;
            c.state.max_state_bytes = 0;
        };
        assert_eq!(
            validated(tiny),
            Err(InvalidConfig::BelowMin {
                key: "state.max_token_bytes",
                value: 1023,
                min: 1024
            })
        );
        assert_eq!(
            validated(|c| {
                c.state.max_token_bytes = 1024;
                c.state.max_state_bytes = 0;
            }),
            Ok(())
        );
    }

    #[test]
    fn a_state_cap_above_the_token_cap_is_refused() {
        assert_eq!(
            validated(|c| {
                c.state.max_token_bytes = 4096;
                c.state.max_state_bytes = 4096;
            }),
            Err(InvalidConfig::StateLargerThanToken {
                state: 4096,
                token: 4096
            })
        );
        assert_eq!(
            validated(|c| {
                c.state.max_token_bytes = 4096;
                c.state.max_state_bytes = 2944;
            }),
            Ok(())
        );
    }

    #[test]
    fn every_refusal_message_names_its_key() {
        type Tune = fn(&mut Config);
        let cases: [(&str, Tune); 8] = [
            ("workers", |c| c.workers = Some(0)),
            ("listen", |c| c.listen = "nope".into()),
            ("http.max_body_bytes", |c| c.http.max_body_bytes = 0),
            ("http.sse_keepalive_ms", |c| {
                c.http.sse_keepalive_ms = u64::MAX
            }),
            ("http.allowed_hosts", |c| c.http.allowed_hosts.clear()),
            ("mcp.max_rounds", |c| c.mcp.max_rounds = 100),
            ("state.max_token_bytes", |c| c.state.max_token_bytes = 10),
            ("state.max_state_bytes", |c| {
                c.state.max_state_bytes = usize::MAX
            }),
        ];
        for (key, tune) in cases {
            let message = validated(tune).expect_err(key).to_string();
            assert!(message.contains(&format!("`{key}`")), "{message}");
        }
    }

    #[test]
    fn serve_flags_are_validated_too() {
        let args = ServeArgs {
            listen: None,
            workers: Some(0),
        };
        assert_eq!(
            Config::default().with_serve_args(&args).err(),
            Some(InvalidConfig::Zero { key: "workers" })
        );
    }

    #[test]
    fn a_command_line_flag_overrides_an_invalid_environment_value() {
        let env = config::Map::from([("ROUNDTRIP_WORKERS".to_owned(), "0".to_owned())]);
        let loaded = Config::load_from(None, Some(env)).expect("loads");
        let args = ServeArgs {
            listen: None,
            workers: Some(2),
        };
        assert_eq!(
            loaded
                .with_serve_args(&args)
                .expect("valid after the flag")
                .workers,
            Some(2)
        );
    }

    #[test]
    fn a_state_lifetime_above_a_day_is_refused() {
        assert!(validated(|c| c.state.ttl_secs = 86_401).is_err());
        assert!(validated(|c| c.state.ttl_secs = 86_400).is_ok());
    }

    #[test]
    fn an_invalid_value_from_the_environment_is_refused() {
        // An empty file stands in for roundtrip.toml, and a map for the environment, so the
        // test reads neither the working directory nor the process's variables.
        let file =
            std::env::temp_dir().join(format!("roundtrip-config-{}.toml", std::process::id()));
        std::fs::write(&file, "[mcp]\nmax_rounds = 4\n").expect("temp file");
        let env = |k: &str, v: &str| config::Map::from([(k.to_owned(), v.to_owned())]);

        let ok = Config::load_from(Some(&file), Some(env("ROUNDTRIP_STATE__TTL_SECS", "120")));
        let bad = Config::load_from(
            Some(&file),
            Some(env("ROUNDTRIP_HTTP__MAX_BODY_BYTES", "0")),
        );
        let _ = std::fs::remove_file(&file);

        let ok = ok.expect("valid settings load");
        assert_eq!((ok.mcp.max_rounds, ok.state.ttl_secs), (4, 120));
        let bad = bad.expect("it loads; validation comes once the flags are applied");
        let message = format!(
            "{:#}",
            bad.validate().expect_err("a zero body limit is refused")
        );
        assert!(message.contains("`http.max_body_bytes`"), "{message}");
    }

    #[test]
    fn legacy_limits_must_be_set_and_at_most_a_day() {
        assert_eq!(
            validated(|c| c.legacy.leg_timeout_secs = 0),
            Err(InvalidConfig::Zero {
                key: "legacy.leg_timeout_secs"
            })
        );
        assert!(validated(|c| c.legacy.idle_timeout_secs = 2 * 24 * 60 * 60).is_err());
        assert!(validated(|c| c.legacy.max_sessions = 0).is_err());
        assert!(validated(|c| c.legacy.max_sessions_per_caller = 0).is_err());
        assert!(validated(|c| c.legacy.max_fleet_sessions = 0).is_err());
        assert!(validated(|c| c.legacy.unused_timeout_secs = 0).is_err());
    }

    #[test]
    fn the_fleet_caps_are_the_fleet_total_and_the_per_caller_cap() {
        let mut c = Config::default();
        c.legacy.max_fleet_sessions = 7;
        c.legacy.max_sessions_per_caller = 3;
        let caps = c.legacy.fleet_caps();
        assert_eq!((caps.sessions, caps.per_caller), (7, 3));
    }

    #[test]
    fn a_zero_budget_or_stream_limit_is_refused_naming_its_key() {
        assert_eq!(
            validated(|c| c.budgets.caller_bytes = 0),
            Err(InvalidConfig::Zero {
                key: "budgets.caller_bytes"
            })
        );
        assert!(validated(|c| c.streams.max_listen = 0).is_err());
    }

    #[test]
    fn stdio_limits_must_be_set_and_bounded() {
        assert!(validated(|c| c.stdio.max_in_flight = 0).is_err());
        assert!(validated(|c| c.stdio.max_in_flight = 65_537).is_err());
        assert!(validated(|c| c.stdio.max_line_bytes = 0).is_err());
        assert!(validated(|c| c.stdio.drain_timeout_ms = 0).is_err());
        let limits = StdioSettings::default().limits();
        assert_eq!(limits.max_in_flight, 64);
        assert_eq!(limits.max_line_bytes, 1 << 20);
        assert_eq!(limits.drain_timeout, Duration::from_secs(60));
    }

    #[test]
    fn the_store_is_sqlite_under_the_data_dir_unless_a_database_is_named() {
        let config = Config {
            data_dir: "/var/lib/roundtrip/".into(),
            ..Config::default()
        };
        assert_eq!(
            config.store_url(),
            "sqlite:///var/lib/roundtrip/roundtrip.db"
        );
        let env = config::Map::from([(
            "ROUNDTRIP_DATABASE_URL".to_owned(),
            "postgres://db/roundtrip".to_owned(),
        )]);
        let loaded = Config::load_from(None, Some(env)).expect("loads");
        assert_eq!(loaded.store_url(), "postgres://db/roundtrip");
    }

    #[test]
    fn secrets_stay_out_of_debug() {
        let config = Config {
            admin_token: Some("op-s3cret".into()),
            database_url: Some("postgres://u:pw-s3cret@db/x".into()),
            ..Config::default()
        };
        let shown = format!("{config:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
    }

    #[test]
    fn audit_and_follow_settings_are_bounded() {
        assert!(validated(|c| c.tenants.follow_ms = 0).is_err());
        assert!(validated(|c| c.tenants.follow_ms = 60_001).is_err());
        assert!(validated(|c| c.audit.retention_days = 0).is_err());
        assert!(validated(|c| c.audit.queue = 0).is_err());
        assert!(validated(|c| c.tenants.follow_ms = 250).is_ok());
    }
}
