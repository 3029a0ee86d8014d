//! Builds the process-wide pieces once (the tenant store and the registry that follows it,
//! the KeyManager on its own arbiter, the audit log, the MCP service and the admin API) and
//! starts the HTTP server. Tests call [`start_with`] with port 0 and a store of their own.
//!
//! Key rings: [`start`] keeps them in Redis when `ROUNDTRIP_REDIS_URL` is set
//! ([`RedisKeyShare`], changes announced to every worker, single-use claims shared too), else
//! in the tenant store ([`StoreKeyShare`]); either way wrapped under the master key
//! ([`crate::master_key`]), so a restart keeps every state in flight openable. [`start_with`]
//! keeps them in memory, for tests; [`start_sharing`] takes any share.
//!
//! Rate limits: with `redis_url`, [`start`] keeps their buckets in Redis, shared by the fleet
//! ([`limiter_for`]); otherwise each process keeps its own.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use actix::{Actor, Arbiter};
use actix_web::{App, HttpServer};
use anyhow::Context as _;
use roundtrip_runtime::dispatch::{RuntimeConfig, StateKeys};
use roundtrip_runtime::fleet::{ForwardKey, SessionFleet};
use roundtrip_runtime::metrics::Metrics;
use roundtrip_runtime::redis::{
    follow_key_rings, Redis, RedisKeyShare, RedisReplayCache, RedisSessionDirectory,
};
use roundtrip_runtime::sealing::{
    EnsureTenant, KeyManager, KeyManagerConfig, KeyShare, LocalKeyShare, MasterKey,
    MemoryReplayCache, RingError, SealPolicy, Snapshot,
};
use roundtrip_runtime::tenancy::{Limiter, TenantDirectory};
use roundtrip_runtime::transport::http::{self, HostGuard, HttpConfig, McpService, RemoteParent};
use roundtrip_tenants::admin::{self, AdminApi};
use roundtrip_tenants::audit_log::{self, AuditLog};
use roundtrip_tenants::redis_limits::RedisLimiter;
use roundtrip_tenants::store::SqlStore;
use roundtrip_tenants::{
    ApiKey, ApiKeyRecord, AuthMode, Slug, Store, StoreError, StoreKeyShare, TenantRegistry,
    TenantSpec,
};
use tokio_util::sync::CancellationToken;

use crate::catalogs;
use crate::config::Config;

/// How often each KeyManager reloads every ring it holds from the share, whatever it was
/// told: the fallback for a lost announcement, and how a fleet on a shared SQL store (no
/// announcements) learns of another worker's rotation.
const KEY_REFRESH_EVERY: Duration = Duration::from_secs(30);

/// How long a rotated-in key is published before it seals, in a fleet sharing Redis.
const KEY_ACTIVATION_DELAY: Duration = Duration::from_secs(2);

/// A running server.
pub struct Running {
    pub addr: SocketAddr,
    pub server: actix_web::dev::ServerHandle,
    pub service: Arc<McpService>,
    pub registry: Arc<TenantRegistry>,
    /// The audit log's writer, when auditing is on.
    pub audit: Option<AuditLog>,
    /// The demo tenant's key when it was generated (not configured): shown once.
    pub generated_demo_key: Option<ApiKey>,
    key_arbiter: Arbiter,
    /// Stops the registry's follower and the audit writer.
    background: CancellationToken,
}

impl Running {
    /// Closes open streams gracefully, stops the server, the key manager and the background
    /// tasks (the audit writer writes what it holds first).
    pub async fn stop(self) {
        self.service.shutdown_token().cancel();
        self.server.stop(true).await;
        self.background.cancel();
        self.key_arbiter.stop();
    }
}

/// Opens the tenant store the settings name (creating and migrating it).
pub async fn open_store(config: &Config) -> anyhow::Result<Arc<dyn Store>> {
    Ok(Arc::new(open_sql_store(config).await?))
}

/// [`open_store`], as the [`SqlStore`] it is: what the key share needs.
pub async fn open_sql_store(config: &Config) -> anyhow::Result<SqlStore> {
    let url = config.store_url();
    SqlStore::open(&url)
        .await
        .with_context(|| format!("opening the tenant store ({})", scheme_of(&url)))
}

/// Where a process keeps its key rings, and what else its fleet shares.
pub struct KeySharing {
    /// Where the rings are kept, wrapped under `master`.
    pub share: Arc<dyn KeyShare>,
    pub master: MasterKey,
    /// Redis, when configured: it keeps the rings (`share` is over it), announces their
    /// changes, and holds the single-use record.
    pub redis: Option<Redis>,
}

impl KeySharing {
    /// Rings in `share` under `master`, nothing else shared.
    pub fn unshared(share: Arc<dyn KeyShare>, master: MasterKey) -> KeySharing {
        KeySharing {
            share,
            master,
            redis: None,
        }
    }
}

/// Where `serve` and `stdio` keep key rings, wrapped under the master key: in Redis when
/// `redis_url` is set (connected now, on the current runtime: the process's main one), else
/// in the tenant store, its queries run on the current runtime.
pub async fn key_sharing(config: &Config, store: &SqlStore) -> anyhow::Result<KeySharing> {
    let master = crate::master_key::resolve(config)?;
    let Some(url) = &config.redis_url else {
        let share = StoreKeyShare::new(store.clone(), tokio::runtime::Handle::current());
        return Ok(KeySharing::unshared(Arc::new(share), master));
    };
    let redis = Redis::connect(url)
        .await
        .context("connecting to Redis (ROUNDTRIP_REDIS_URL)")?
        .with_prefix(&config.redis_prefix);
    Ok(KeySharing {
        share: Arc::new(RedisKeyShare::new(redis.clone())),
        master,
        redis: Some(redis),
    })
}

/// The URL's scheme only: the rest may hold a password.
fn scheme_of(url: &str) -> &str {
    url.split_once(':').map_or("?", |(scheme, _)| scheme)
}

/// The tenants of a new store: `demo` (API key, `examples`) and `conformance` (anonymous,
/// `conformance`), created when the store has no tenant at all. The demo key is
/// `demo_api_key` when set (kept current at every start), otherwise generated once, when the
/// demo tenant is created, and returned to be shown.
pub async fn seed(store: &dyn Store, config: &Config) -> anyhow::Result<Option<ApiKey>> {
    let mut created_demo = false;
    if store.tenants(None, 1).await?.is_empty() {
        for (slug, name, auth, catalog) in [
            ("demo", "Demo", AuthMode::ApiKey, "examples"),
            (
                "conformance",
                "Conformance fixtures",
                AuthMode::Anonymous,
                "conformance",
            ),
        ] {
            let spec = TenantSpec::new(name, vec![catalog.into()], auth);
            match store.create_tenant(&Slug::parse(slug)?, &spec).await {
                Ok(_) => created_demo |= slug == "demo",
                // Another process seeded it first.
                Err(StoreError::Conflict(_)) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    if store.tenant("demo").await?.is_none() {
        return Ok(None);
    }
    match &config.demo_api_key {
        Some(secret) => {
            let record = ApiKeyRecord::from_secret("demo".into(), secret);
            let current = store.key("demo", "demo").await?;
            if current.is_none_or(|k| {
                k.digest() != record.digest() || !k.is_live(roundtrip_tenants::Millis::now)
            }) {
                store.put_key("demo", &record).await?;
            }
            Ok(None)
        }
        None if created_demo => {
            let key = ApiKey::generate("demo");
            store.put_key("demo", &key.record()).await?;
            Ok(Some(key))
        }
        None => Ok(None),
    }
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

/// Builds [`Dispatching`] inside the current actix System, its key rings kept as `keys` says:
/// this process's own ([`LocalKeyShare`]), or a share other processes use too. Refuses first
/// a process byte budget the machine cannot give (both `serve` and `stdio` come through
/// here), then a master key that does not open the stored rings.
pub async fn dispatching(
    config: &Config,
    registry: &TenantRegistry,
    keys: KeySharing,
) -> anyhow::Result<Dispatching> {
    let KeySharing {
        share,
        master,
        redis,
    } = keys;
    config.budgets.check_machine()?;
    let policy = SealPolicy {
        ttl: Duration::from_secs(config.state.ttl_secs),
        clock_skew: Duration::from_secs(config.state.clock_skew_secs),
        max_token_bytes: config.state.max_token_bytes,
        max_state_bytes: config.state.max_state_bytes,
    };
    // The KeyManager gets its own thread: it is never on a request's path (workers hold
    // snapshots it pushes), and rotation must not stall a worker.
    let key_arbiter = Arbiter::new();
    let rotation = KeyManagerConfig {
        refresh_every: Some(KEY_REFRESH_EVERY),
        // A fleet hears of a new key through Redis within milliseconds; a key that seals
        // only after that reaches every worker before any token under it does.
        activation_delay: if redis.is_some() {
            KEY_ACTIVATION_DELAY
        } else {
            Duration::ZERO
        },
        ..KeyManagerConfig::default()
    };
    let forward_key = ForwardKey::derived_from(&master);
    let manager = KeyManager::with_config(policy.clone(), rotation, share, master);
    let share_health = manager.share_health();
    let key_manager = KeyManager::start_in_arbiter(&key_arbiter.handle(), move |_| manager);
    if let Some(redis) = &redis {
        // On the KeyManager's thread: it stops with it.
        key_arbiter.spawn(follow_key_rings(
            redis.clone(),
            key_manager.clone().recipient(),
        ));
    }
    registry.tell_state_ttls(key_manager.clone().recipient(), policy.clock_skew);
    for slug in registry.slugs() {
        let ensured = key_manager
            .send(EnsureTenant { tenant: slug })
            .await
            .context("creating key rings")?;
        if let Err(e) = ensured {
            key_arbiter.stop();
            return Err(match e {
                RingError::Unwrap(_) => anyhow::Error::new(e).context(
                    "the stored requestState keys do not open under this master key: \
                     ROUNDTRIP_MASTER_KEY (or the data dir's master.key) is not the key they \
                     were stored under",
                ),
                e => anyhow::Error::new(e).context("loading the requestState key rings"),
            });
        }
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
        budgets: config.budgets.runtime(),
        // Set by the HTTP server, which has the registry and the audit log.
        limiter: None,
        audit: None,
        replay: match &redis {
            Some(redis) => Arc::new(RedisReplayCache::new(redis.clone())),
            None => Arc::new(MemoryReplayCache::new(config.replay.max_bytes)),
        },
        metrics: Metrics::default(),
        redis_errors: redis.as_ref().map(Redis::error_count),
        sessions: redis.as_ref().map(|redis| {
            SessionFleet::new(
                Arc::new(RedisSessionDirectory::new(redis.clone())),
                config.legacy.fleet_caps(),
                forward_key,
            )
        }),
    };
    Ok(Dispatching {
        runtime,
        keys: StateKeys {
            key_manager,
            rings,
            share_health,
        },
        key_arbiter,
    })
}

/// Starts the server on `config.listen` inside the current actix System: the store the
/// settings name, seeded on first start, which also keeps the key rings.
pub async fn start(config: &Config) -> anyhow::Result<Running> {
    config.validate()?;
    let sql = open_sql_store(config).await?;
    let keys = key_sharing(config, &sql).await?;
    let store: Arc<dyn Store> = Arc::new(sql);
    let generated_demo_key = seed(store.as_ref(), config).await?;
    let registry = Arc::new(TenantRegistry::new(store, Arc::new(catalogs::Compiled)));
    registry.load().await.context("reading the tenants")?;
    start_fleet(config, registry, generated_demo_key, keys).await
}

/// Starts the server for the tenants of `registry` (loaded), with key rings of its own, in
/// memory: gone when it stops.
pub async fn start_with(
    config: &Config,
    registry: Arc<TenantRegistry>,
    generated_demo_key: Option<ApiKey>,
) -> anyhow::Result<Running> {
    let own_keys = Arc::new(LocalKeyShare::new());
    let master = MasterKey::generate();
    start_sharing(config, registry, generated_demo_key, own_keys, master, None).await
}

/// The URL the other workers of a fleet reach this one at: `advertise_url` when set; else
/// the address it listens on, unless that is a wildcard (`0.0.0.0`, `::`), for which this
/// host's address on its route to Redis stands in.
fn advertised_url(config: &Config, listening: SocketAddr, redis: Option<&Redis>) -> String {
    if let Some(url) = &config.advertise_url {
        return url.trim_end_matches('/').to_owned();
    }
    let ip = match listening.ip() {
        ip if !ip.is_unspecified() => ip,
        _ => redis
            .and_then(Redis::local_ip_toward)
            .unwrap_or(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST)),
    };
    format!("http://{}", SocketAddr::new(ip, listening.port()))
}

/// The limiter requests are admitted by: the limits of `registry`'s tenants, their buckets in
/// `redis` when the process has one (shared by the fleet, `limits.redis_fallback` when it
/// fails), in this process otherwise.
pub fn limiter_for(
    config: &Config,
    registry: Arc<TenantRegistry>,
    redis: Option<Redis>,
) -> Arc<dyn Limiter> {
    match redis {
        Some(redis) => Arc::new(RedisLimiter::new(
            registry,
            redis,
            config.limits.redis_fallback,
        )),
        None => registry,
    }
}

/// Starts the server for the tenants of `registry`, its key rings kept in `share` wrapped
/// under `master`: servers that share both open each other's `requestState`. With `redis`,
/// rate limits are kept there ([`limiter_for`]).
pub async fn start_sharing(
    config: &Config,
    registry: Arc<TenantRegistry>,
    generated_demo_key: Option<ApiKey>,
    share: Arc<dyn KeyShare>,
    master: MasterKey,
    redis: Option<Redis>,
) -> anyhow::Result<Running> {
    let keys = KeySharing {
        share,
        master,
        redis,
    };
    start_fleet(config, registry, generated_demo_key, keys).await
}

/// Starts the server for the tenants of `registry`, its key rings and what else the fleet
/// shares as `keys` says.
pub async fn start_fleet(
    config: &Config,
    registry: Arc<TenantRegistry>,
    generated_demo_key: Option<ApiKey>,
    keys: KeySharing,
) -> anyhow::Result<Running> {
    config.validate()?;
    let redis = keys.redis.clone();
    let Dispatching {
        mut runtime,
        keys,
        key_arbiter,
    } = dispatching(config, &registry, keys).await?;
    let background = CancellationToken::new();
    registry.follow(
        Duration::from_millis(config.tenants.follow_ms),
        background.clone(),
    );
    let audit = config.audit.enabled.then(|| {
        let settings = audit_log::AuditSettings {
            queue: config.audit.queue,
            retention: Duration::from_secs(config.audit.retention_days * 86_400),
            ..audit_log::AuditSettings::default()
        };
        AuditLog::start(registry.store().clone(), settings, background.clone())
    });
    runtime.audit = audit
        .clone()
        .map(|log| Arc::new(log) as Arc<dyn roundtrip_runtime::tenancy::AuditSink>);
    let redis_for_address = redis.clone();
    runtime.limiter = Some(limiter_for(config, registry.clone(), redis));
    let admin_api = Arc::new(AdminApi::new(
        registry.clone(),
        config.admin_token.as_deref(),
        Some(keys.key_manager.clone().recipient()),
    ));
    let http_config = HttpConfig {
        max_body_bytes: config.http.max_body_bytes,
        body_timeout: Duration::from_millis(config.http.body_timeout_ms),
        sse_keepalive: Duration::from_millis(config.http.sse_keepalive_ms),
        guard: HostGuard::new(
            config.http.allowed_hosts.clone(),
            config.http.allowed_origins.clone(),
        ),
        clients: config.clients.runtime(),
        streams: config.streams.runtime(),
        remote_parent: config
            .otlp_endpoint
            .is_some()
            .then_some(crate::telemetry::remote_parent as RemoteParent),
    };
    let directory: Arc<dyn TenantDirectory> = registry.clone();
    let fleet = runtime.sessions.clone();
    let service = McpService::new(
        directory,
        registry.clone(),
        runtime,
        http_config,
        Some(keys),
    );

    let factory_service = service.clone();
    let mut server = HttpServer::new(move || {
        App::new()
            .configure(admin::configure(admin_api.clone()))
            .configure(http::configure(factory_service.clone()))
    })
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
    if let Some(fleet) = &fleet {
        let url = advertised_url(config, addr, redis_for_address.as_ref());
        tracing::info!(url = %url, "other workers forward this one's legacy sessions to it here");
        fleet.set_owner(url);
    }
    let server = server.run();
    let handle = server.handle();
    actix_rt::spawn(server);
    Ok(Running {
        addr,
        server: handle,
        service,
        registry,
        audit,
        generated_demo_key,
        key_arbiter,
        background,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_url_is_named_by_its_scheme_only() {
        assert_eq!(scheme_of("postgres://u:secret@db/x"), "postgres");
        assert_eq!(scheme_of("sqlite://./.roundtrip/roundtrip.db"), "sqlite");
    }
}
