//! Streamable HTTP on actix-web: `/t/{tenant}/mcp`, health and metrics.
//!
//! Build one [`McpService`] outside `HttpServer::new` (it is shared by every worker) and call
//! [`configure`] inside the factory. `configure` starts the app's Dispatcher actor, which
//! owns the policy view the app's requests read; the app holds its address, so the actor
//! stops with the app (with its worker, when the server stops).
//!
//! Inside this folder edges go one way: `endpoint` → `legacy` → `reply` (how a reply becomes
//! a response) → `sse` → `response`, with `headers` (every header read) and `error` (every
//! error's body and status) below them all.

mod client;
mod descriptors;
mod endpoint;
mod error;
mod forward;
mod guard;
mod headers;
mod health;
mod inflight;
mod legacy;
mod reply;
mod response;
mod sse;
mod streams;

use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use actix_service::apply;
use actix_web::web;
use tokio_util::sync::CancellationToken;

use prometheus_client::registry::Registry;

use crate::budget::Ledger;
use crate::dispatch::{Dispatcher, Reply, ReplyKind, RuntimeConfig, StateKeys, WorkerState};
use crate::legacy::Legacy;
use crate::metrics::{Gathered, Metrics};
use crate::tenancy::{Authenticator, TenantDirectory};

pub use client::ClientsConfig;
pub use guard::HostGuard;
pub use streams::StreamsConfig;

/// HTTP-specific limits and policies.
#[derive(Debug, Clone)]
pub struct HttpConfig {
    /// Largest request body accepted (413 beyond).
    pub max_body_bytes: usize,
    /// Time allowed for the whole body to arrive (408 beyond).
    pub body_timeout: Duration,
    /// Comment lines sent on idle SSE streams, so proxies keep them and closed clients are
    /// noticed.
    pub sse_keepalive: Duration,
    /// The `Host`/`Origin` allow-list (DNS-rebinding protection); loopback names only by
    /// default.
    pub guard: HostGuard,
    /// Where a client's address is read (anonymous callers are told apart by it).
    pub clients: ClientsConfig,
    /// Limits of long-lived streams.
    pub streams: StreamsConfig,
    /// Makes the span under which a request that names its caller's trace (a W3C
    /// `traceparent`, with its `tracestate`) runs, so that the request's spans join that
    /// trace. `None` (no trace exporter): the headers are not read.
    pub remote_parent: Option<RemoteParent>,
}

/// A function from a request's `traceparent` and `tracestate` to the span it runs under
/// (`None`: the headers name no trace).
pub type RemoteParent = fn(traceparent: &str, tracestate: Option<&str>) -> Option<tracing::Span>;

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            body_timeout: Duration::from_secs(10),
            sse_keepalive: Duration::from_secs(15),
            guard: HostGuard::localhost(),
            clients: ClientsConfig::default(),
            streams: StreamsConfig::default(),
            remote_parent: None,
        }
    }
}

/// Everything the MCP endpoint needs, shared by all workers.
pub struct McpService {
    pub(crate) directory: Arc<dyn TenantDirectory>,
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) runtime: Arc<RuntimeConfig>,
    pub(crate) http: HttpConfig,
    keys: Option<StateKeys>,
    pub(crate) legacy: Legacy,
    /// Open listen streams, per caller, tenant and process (`http.streams.listen`).
    pub(crate) listens: Arc<Ledger>,
    pub(crate) descriptors: descriptors::Descriptors,
    pub(crate) shutdown: CancellationToken,
    /// The runtime's metrics (`runtime.metrics`, shared handles).
    pub(crate) metrics: Metrics,
    /// What `/metrics` serves: the metrics, and what is read at each scrape.
    registry: Registry,
}

impl std::fmt::Debug for McpService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpService")
            .field("tenants", &self.directory.slugs())
            .field("runtime", &self.runtime)
            .field("http", &self.http)
            .field("sealed", &self.keys.is_some())
            .finish_non_exhaustive()
    }
}

impl McpService {
    /// `keys` is needed when `runtime.sealing` is set.
    pub fn new(
        directory: Arc<dyn TenantDirectory>,
        authenticator: Arc<dyn Authenticator>,
        runtime: RuntimeConfig,
        http: HttpConfig,
        keys: Option<StateKeys>,
    ) -> Arc<Self> {
        if runtime.sealing.is_none() {
            tracing::warn!("requestState is not sealed: handler state reaches clients as written");
        }
        let runtime = Arc::new(runtime);
        let legacy = Legacy::start(runtime.clone());
        let shutdown = CancellationToken::new();
        legacy.keep_registered(shutdown.clone());
        let mut registry = Registry::default();
        runtime.metrics.register(&mut registry);
        registry.register_collector(Box::new(Gathered {
            legacy_sessions: legacy.sessions.clone(),
            audit: runtime.audit.clone(),
            key_share: keys.as_ref().map(|k| k.share_health.clone()),
            redis_errors: runtime.redis_errors.clone(),
        }));
        Arc::new(Self {
            directory,
            authenticator,
            legacy,
            listens: Ledger::new("listen streams", http.streams.listen),
            descriptors: descriptors::Descriptors::of_this_process(http.streams.fd_headroom),
            http,
            keys,
            shutdown,
            metrics: runtime.metrics.clone(),
            registry,
            runtime,
        })
    }

    /// Cancelled at shutdown: open streams close gracefully instead of holding the server.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    /// What `/metrics` serves, as OpenMetrics text.
    pub fn metrics_text(&self) -> String {
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!(error = %e, "writing the metrics failed");
        }
        text
    }

    /// Counts a reply that reached its client; listen replies count as streams.
    pub(crate) fn count_reply(&self, reply: &Reply) {
        match reply.kind() {
            ReplyKind::Listen | ReplyKind::Cancelled => {}
            kind => self.metrics.record_reply(kind.as_str()),
        }
    }

    /// The process's legacy sessions and bridge.
    pub fn legacy(&self) -> &Legacy {
        &self.legacy
    }

    /// A Dispatcher for one app, on the current worker, with the view its requests read.
    fn worker_dispatcher(&self) -> WorkerDispatcher {
        let (actor, state) = Dispatcher::start_with(self.runtime.clone(), self.keys.clone());
        WorkerDispatcher {
            _actor: actor,
            state,
            forwarder: self
                .runtime
                .sessions
                .is_some()
                .then(forward::Forwarder::new),
        }
    }
}

/// The app's Dispatcher, as app data: the state its requests run with
/// ([`WorkerState::run`]), and the actor's address, which keeps the actor (the state's owner)
/// alive as long as the app.
pub(crate) struct WorkerDispatcher {
    _actor: Addr<Dispatcher>,
    pub(crate) state: WorkerState,
    /// In a fleet sharing legacy sessions: this worker's client for forwarding a session's
    /// requests to the worker that holds it.
    pub(crate) forwarder: Option<forward::Forwarder>,
}

/// Registers the MCP endpoint, `/healthz`, `/readyz`, `/metrics` and JSON 404s.
///
/// actix-web runs the server's factory once per worker and listener, so a server with two
/// listeners has two Dispatchers per worker, each with its own copy of the view: correct, at
/// the cost of one more snapshot held. `roundtrip serve` binds one listener.
pub fn configure(service: Arc<McpService>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let dispatcher = service.worker_dispatcher();
        cfg.app_data(web::Data::from(service))
            .app_data(web::Data::new(dispatcher))
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .route("/metrics", web::get().to(health::metrics))
            // Every other path: `/t/{tenant}/mcp` (read by hand in `endpoint::route`, why:
            // there) and JSON 404s, behind the host guard.
            .default_service(apply(guard::GuardMiddleware, web::to(endpoint::route)));
    }
}
