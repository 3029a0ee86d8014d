//! Streamable HTTP on actix-web: `POST /t/{tenant}/mcp`, health and metrics.
//!
//! Build one [`McpService`] outside `HttpServer::new` (it is shared by every worker) and call
//! [`configure`] inside the factory. `configure` starts the worker's Dispatcher the first time
//! it runs on a worker thread; that per-worker actor is the one deliberate per-worker thing.

mod endpoint;
mod guard;
mod health;
mod inflight;
mod legacy;
mod response;
mod sse;

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Addr};
use actix_web::web;
use tokio_util::sync::CancellationToken;

use crate::dispatch::{Call, Dispatch, Dispatcher, Reply, RuntimeConfig, StateKeys, WorkerState};
use crate::legacy::Legacy;
use crate::tenancy::{Authenticator, TenantDirectory};

pub use guard::HostGuard;
pub use health::Metrics;

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
    pub guard: HostGuard,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            body_timeout: Duration::from_secs(10),
            sse_keepalive: Duration::from_secs(15),
            guard: HostGuard::localhost(),
        }
    }
}

/// Everything the MCP endpoint needs, shared by all workers.
pub struct McpService {
    id: u64,
    pub(crate) directory: Arc<dyn TenantDirectory>,
    pub(crate) authenticator: Arc<dyn Authenticator>,
    pub(crate) runtime: Arc<RuntimeConfig>,
    pub(crate) http: HttpConfig,
    keys: Option<StateKeys>,
    pub(crate) legacy: Legacy,
    pub(crate) shutdown: CancellationToken,
    pub(crate) metrics: Metrics,
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
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let runtime = Arc::new(runtime);
        Arc::new(Self {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            directory,
            authenticator,
            legacy: Legacy::start(runtime.clone()),
            runtime,
            http,
            keys,
            shutdown: CancellationToken::new(),
            metrics: Metrics::default(),
        })
    }

    /// Cancelled at shutdown: open streams close gracefully instead of holding the server.
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// The process's legacy sessions and bridge.
    pub fn legacy(&self) -> &Legacy {
        &self.legacy
    }

    /// This worker's Dispatcher and the state it shares with the endpoint, started on first
    /// use on this thread.
    fn worker_dispatcher(&self) -> WorkerDispatcher {
        thread_local! {
            static DISPATCHERS: RefCell<HashMap<u64, WorkerDispatcher>> = RefCell::new(HashMap::new());
        }
        DISPATCHERS.with(|d| {
            d.borrow_mut()
                .entry(self.id)
                .or_insert_with(|| {
                    let state = WorkerState::new(self.runtime.clone(), self.keys.clone());
                    WorkerDispatcher {
                        actor: Dispatcher::with_state(state.clone()).start(),
                        state,
                    }
                })
                .clone()
        })
    }
}

/// The worker's Dispatcher, as app data: its actor, and the state requests run with on their
/// own task (`WorkerState::run`).
#[derive(Clone)]
pub(crate) struct WorkerDispatcher {
    pub(crate) actor: Addr<Dispatcher>,
    pub(crate) state: WorkerState,
}

impl WorkerDispatcher {
    /// The reply to `call`, for a request answered with one JSON body: run on this task when
    /// the worker's state has what it needs, else through the actor, which first fetches the
    /// tenant's key ring.
    pub(crate) async fn reply(&self, call: Call) -> Reply {
        match self.state.run(call) {
            Ok(run) => run.await,
            Err(call) => self
                .actor
                .send(Dispatch(*call))
                .await
                .unwrap_or_else(|_| Reply::unavailable()),
        }
    }
}

/// Registers the MCP endpoint, `/healthz`, `/readyz`, `/metrics` and JSON 404s.
pub fn configure(service: Arc<McpService>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let dispatcher = service.worker_dispatcher();
        cfg.app_data(web::Data::from(service))
            .app_data(web::Data::new(dispatcher))
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .route("/metrics", web::get().to(health::metrics))
            // `/t/{tenant}/mcp` (matched by hand, see `endpoint::route`), and JSON 404s.
            .default_service(web::to(endpoint::route));
    }
}
