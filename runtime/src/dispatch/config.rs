//! Runtime settings that dispatch acts on.

use std::sync::Arc;
use std::time::Duration;

use crate::budget::BudgetLimits;
use crate::fleet::SessionFleet;
use crate::metrics::Metrics;
use crate::redis::RedisErrorCount;
use crate::sealing::{MemoryReplayCache, ReplayCache, SealPolicy};
use crate::tenancy::{AuditSink, Limiter};

/// How requests are run, on every transport: timeouts, the round cap, sealing, and the
/// limits of legacy sessions.
#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// A handler run longer than this is abandoned with an internal error.
    pub request_timeout: Duration,
    /// How long a cancelled handler may go on (after `Context::cancelled` resolves) to clean
    /// up before it is dropped.
    pub cancel_grace: Duration,
    /// Input-required rounds one flow may take before the runtime stops it.
    pub max_rounds: u32,
    /// `None`: `requestState` passes through exactly as the handler wrote it (library users
    /// who configure no security). The `roundtrip` binary always seals.
    pub sealing: Option<SealPolicy>,
    /// Legacy sessions and their shim.
    pub legacy: LegacyConfig,
    /// Bytes callers, tenants and the process may keep past the requests that brought them
    /// (legacy sessions and their flows, listen streams): `crate::budget`.
    pub budgets: BudgetLimits,
    /// Rate limits, checked for every request after authentication whose tenant has some
    /// (`TenantSettings::has_rate_limits`); `None`: no limits.
    pub limiter: Option<Arc<dyn Limiter>>,
    /// Where finished `tools/call`, `prompts/get` and `resources/read` calls are recorded;
    /// `None`: nowhere. With it, the per-request `request done` log line drops to debug.
    pub audit: Option<Arc<dyn AuditSink>>,
    /// The record of sealed states that completed a call of a single-use tool; shared by
    /// every worker. Default: this process's, 16 MiB.
    pub replay: Arc<dyn ReplayCache>,
    /// What requests count: every dispatched request's duration by tenant, method and
    /// outcome, and the rate limits' refusals.
    pub metrics: Metrics,
    /// The failed calls of the process's Redis handle, when it has one: read at each scrape
    /// of `/metrics` (`roundtrip_redis_errors_total`).
    pub redis_errors: Option<RedisErrorCount>,
    /// Legacy sessions shared with the other workers of a fleet: the directory that says which
    /// worker holds each session, the fleet's caps, this worker's URL and the key that
    /// vouches for a forward's client. `None`: sessions are this process's alone.
    pub sessions: Option<SessionFleet>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(1),
            max_rounds: 8,
            sealing: None,
            legacy: LegacyConfig::default(),
            budgets: BudgetLimits::BYTES,
            limiter: None,
            audit: None,
            replay: Arc::new(MemoryReplayCache::default()),
            metrics: Metrics::default(),
            redis_errors: None,
            sessions: None,
        }
    }
}

/// Limits of legacy sessions (`crate::legacy`) and of the shim.
#[derive(Debug, Clone)]
pub struct LegacyConfig {
    /// Live sessions one process holds; `initialize` beyond it is refused (HTTP 503).
    pub max_sessions: usize,
    /// Live sessions one caller holds on one tenant: one caller cannot take every slot. A
    /// caller is a principal; anonymous callers are told apart by client address.
    pub max_sessions_per_caller: usize,
    /// Requests one session runs at once, shim flows held open for an answer among them; one
    /// more is refused (-31429). Over h2c, where actix sets no limit on streams per
    /// connection, this and the session caps are what bound the flows a client can hold.
    pub max_requests_per_session: usize,
    /// A session with no request, flow or open stream for this long is ended.
    pub idle_timeout: Duration,
    /// The same for a session the client never used after `initialize` (most likely
    /// abandoned, or one of a flood of handshakes); the shorter of the two applies.
    pub unused_timeout: Duration,
    /// How long the shim waits for the client's answer to one server-to-client request.
    pub leg_timeout: Duration,
}

impl Default for LegacyConfig {
    fn default() -> Self {
        Self {
            max_sessions: 10_000,
            max_sessions_per_caller: 1_000,
            max_requests_per_session: 100,
            idle_timeout: Duration::from_secs(30 * 60),
            unused_timeout: Duration::from_secs(60),
            leg_timeout: Duration::from_secs(600),
        }
    }
}
