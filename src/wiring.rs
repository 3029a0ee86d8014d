//! Builds the process-wide pieces once (tenants, the KeyManager on its own arbiter, the MCP
//! service) and starts the HTTP server. Tests call [`start`] with port 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Arbiter};
use actix_web::{App, HttpServer};
use anyhow::Context as _;
use roundtrip_runtime::dispatch::{RuntimeConfig, StateKeys};
use roundtrip_runtime::handler::TenantSettings;
use roundtrip_runtime::sealing::{
    EnsureTenant, KeyManager, KeyShare, LocalKeyShare, SealPolicy, SetTenantGrace, Snapshot,
};
use roundtrip_runtime::tenancy::{Tenant, TenantDirectory};
use roundtrip_runtime::transport::http::{self, HostGuard, HttpConfig, McpService};
use roundtrip_tenants::{ApiKey, ApiKeyRecord, AuthMode, Slug, TenantRegistry, TenantSpec};

use crate::catalogs;
use crate::config::Config;

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub server: actix_web::dev::ServerHandle,
    pub service: Arc<McpService>,
    pub registry: Arc<TenantRegistry>,
    /// The demo tenant's key when it was generated (not configured): shown once.
    pub generated_demo_key: Option<ApiKey>,
    key_arbiter: Arbiter,
}

impl Running {
    /// Closes open streams gracefully, stops the server and the key manager.
    pub async fn stop(self) {
        self.service.shutdown_token().cancel();
        self.server.stop(true).await;
        self.key_arbiter.stop();
    }
}

/// The default tenants of `roundtrip serve`: `demo` (API key, `examples`) and `conformance`
/// (anonymous, `conformance`).
pub fn default_tenants(config: &Config) -> anyhow::Result<(TenantRegistry, Option<ApiKey>)> {
    let registry = TenantRegistry::new();
    for (slug, name, auth, catalog) in [
        ("demo", "Demo", AuthMode::ApiKey, "examples"),
        (
            "conformance",
            "Conformance fixtures",
            AuthMode::Anonymous,
            "conformance",
        ),
    ] {
        let spec = TenantSpec {
            slug: Slug::parse(slug)?,
            name: name.into(),
            auth,
            catalogs: vec![catalog.into()],
        };
        let catalog = catalogs::build(&spec.catalogs)?;
        let settings = TenantSettings {
            legacy_shim: config.legacy.shim_enabled(slug),
            ..TenantSettings::default()
        };
        let tenant = Tenant::new(slug, catalog)
            .with_settings(settings)
            .with_server_info(serde_json::json!({ "name": format!("roundtrip-{slug}"), "title": name, "version": env!("CARGO_PKG_VERSION") }));
        registry.insert(spec, tenant)?;
    }
    let generated = match &config.demo_api_key {
        Some(secret) => {
            registry.add_key("demo", ApiKeyRecord::from_secret("demo".into(), secret));
            None
        }
        None => {
            let key = ApiKey::generate("demo");
            registry.add_key("demo", key.record());
            Some(key)
        }
    };
    Ok((registry, generated))
}

/// The runtime settings and the state keys every transport dispatches with: the KeyManager
/// on its own thread, with a ring for each tenant of `registry`.
pub struct Dispatching {
    pub runtime: RuntimeConfig,
    pub keys: StateKeys,
    key_arbiter: Arbiter,
}

impl Dispatching {
    pub fn stop(&self) {
        self.key_arbiter.stop();
    }
}

/// Builds [`Dispatching`] inside the current actix System, its key rings kept in `share`:
/// this process's own ([`LocalKeyShare`]), or one other processes share.
pub async fn dispatching(
    config: &Config,
    registry: &TenantRegistry,
    share: Box<dyn KeyShare>,
) -> anyhow::Result<Dispatching> {
    let policy = SealPolicy {
        ttl: Duration::from_secs(config.state.ttl_secs),
        clock_skew: Duration::from_secs(config.state.clock_skew_secs),
        max_token_bytes: config.state.max_token_bytes,
        max_state_bytes: config.state.max_state_bytes,
    };
    // The KeyManager gets its own thread: it is never on a request's path (workers hold
    // snapshots it pushes), and rotation must not stall a worker.
    let key_arbiter = Arbiter::new();
    let km_policy = policy.clone();
    let key_manager = KeyManager::start_in_arbiter(&key_arbiter.handle(), move |_| {
        KeyManager::new(km_policy, share)
    });
    for slug in registry.slugs() {
        // A tenant that keeps states longer keeps a rotated key verifiable as long.
        if let Some(ttl) = registry
            .tenant(&slug)
            .and_then(|t| t.view().settings().state_ttl)
        {
            let grace = ttl + policy.clock_skew;
            key_manager
                .send(SetTenantGrace {
                    tenant: slug.clone(),
                    grace,
                })
                .await
                .context("setting key grace")?;
        }
        key_manager
            .send(EnsureTenant { tenant: slug })
            .await
            .context("creating key rings")?;
    }
    let rings = key_manager
        .send(Snapshot)
        .await
        .context("reading key rings")?;

    let runtime = RuntimeConfig {
        request_timeout: config.request_timeout(),
        cancel_grace: Duration::from_millis(config.mcp.cancel_grace_ms),
        max_rounds: config.mcp.max_rounds,
        sealing: Some(policy),
        legacy: config.legacy.runtime(),
    };
    Ok(Dispatching {
        runtime,
        keys: StateKeys { key_manager, rings },
        key_arbiter,
    })
}

/// Starts the server on `config.listen` inside the current actix System.
pub async fn start(config: &Config) -> anyhow::Result<Running> {
    let (registry, generated_demo_key) = default_tenants(config)?;
    let registry = Arc::new(registry);
    start_with(config, registry, generated_demo_key).await
}

/// Starts the server for the tenants of `registry`, with key rings of its own.
pub async fn start_with(
    config: &Config,
    registry: Arc<TenantRegistry>,
    generated_demo_key: Option<ApiKey>,
) -> anyhow::Result<Running> {
    let own_keys = Box::new(LocalKeyShare::new());
    start_sharing(config, registry, generated_demo_key, own_keys).await
}

/// Starts the server for the tenants of `registry`, its key rings kept in `share`: servers
/// that share one open each other's `requestState`.
pub async fn start_sharing(
    config: &Config,
    registry: Arc<TenantRegistry>,
    generated_demo_key: Option<ApiKey>,
    share: Box<dyn KeyShare>,
) -> anyhow::Result<Running> {
    config.validate()?;
    let Dispatching {
        runtime,
        keys,
        key_arbiter,
    } = dispatching(config, &registry, share).await?;
    let http_config = HttpConfig {
        max_body_bytes: config.http.max_body_bytes,
        body_timeout: Duration::from_millis(config.http.body_timeout_ms),
        sse_keepalive: Duration::from_millis(config.http.sse_keepalive_ms),
        guard: HostGuard::new(
            config.http.allowed_hosts.clone(),
            config.http.allowed_origins.clone(),
        ),
    };
    let directory: Arc<dyn TenantDirectory> = registry.clone();
    let service = McpService::new(
        directory,
        registry.clone(),
        runtime,
        http_config,
        Some(keys),
    );

    let factory_service = service.clone();
    let mut server =
        HttpServer::new(move || App::new().configure(http::configure(factory_service.clone())))
            .tcp_nodelay(true)
            // Notice a closed client at once: its request's future (or stream) is dropped, which
            // cancels the handler.
            .h1_allow_half_closed(false)
            .disable_signals()
            .shutdown_timeout(5);
    if let Some(workers) = config.workers {
        server = server.workers(workers);
    }
    // HTTP/1.1 and HTTP/2 cleartext with prior knowledge on the one listener: an h2c client
    // multiplexes many held legacy shim streams over one connection, where HTTP/1.1 needs a
    // connection (and its buffers) per open stream. The protocol is told from the first bytes.
    let server = server
        .bind_auto_h2c(&config.listen)
        .with_context(|| format!("binding {}", config.listen))?;
    let addr = *server.addrs().first().context("no listening address")?;
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok(Running {
        addr,
        server: handle,
        service,
        registry,
        generated_demo_key,
        key_arbiter,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_tenants_take_the_shim_switch_from_the_config() {
        let mut config = Config::default();
        config.legacy.shim_disabled_for = vec!["demo".into()];
        let (registry, _) = default_tenants(&config).expect("tenants");
        let shim = |slug: &str| {
            registry
                .tenant(slug)
                .map(|t| t.view().settings().legacy_shim)
                .expect("tenant")
        };
        assert!(!shim("demo"));
        assert!(shim("conformance"));
    }
}
