//! The harness: a real server in-process on port 0, with the test tenants, and the `awc`
//! client the request builder sends with (see `requests`).
//!
//! Tenants of every test server:
//! - `demo`: API keys [`ALICE`] and [`BOB`] (every tool) and [`CAROL`] (only `echo`), the
//!   `examples` catalog (no prompts);
//! - `lab`, `lab2`: anonymous, the test catalog of [`lab`](super::lab);
//! - `empty`: anonymous, an empty catalog.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use roundtrip::config::Config;
use roundtrip::wiring::{self, Running};
use roundtrip_runtime::handler::Catalog;
use roundtrip_runtime::redis::Redis;
use roundtrip_runtime::sealing::{KeyShare, LocalKeyShare, MasterKey};
use roundtrip_runtime::tenancy::{Tenant, TenantDirectory};
use roundtrip_tenants::catalogs::CatalogSource;
use roundtrip_tenants::store::SqlStore;
use roundtrip_tenants::{ApiKeyRecord, AuthMode, Names, Slug, Store, TenantRegistry, TenantSpec};

use super::lab::{self, Probe};

pub(crate) const DEMO: &str = "demo";
pub(crate) const LAB: &str = "lab";
pub(crate) const LAB2: &str = "lab2";
pub(crate) const EMPTY: &str = "empty";
/// API keys of the `demo` tenant (principals `key:alice` and `key:bob`).
pub(crate) const ALICE: &str = "rt_test_alice_0123456789";
pub(crate) const BOB: &str = "rt_test_bob_0123456789";
/// An API key of the `demo` tenant limited to the `echo` tool (principal `key:carol`).
pub(crate) const CAROL: &str = "rt_test_carol_0123456789";

/// A running server with the test tenants; stopped by [`Server::stop`] (or, if a test panics,
/// by `Drop`).
pub(crate) struct Server {
    pub(super) running: Option<Running>,
    pub(crate) addr: SocketAddr,
    /// What the `lab` tenant's `wait_cancel` tool saw.
    pub(crate) lab_probe: Probe,
    pub(super) client: awc::Client,
    catalogs: Arc<TestCatalogs>,
    /// The server's own SQLite store, removed when it stops.
    dir: PathBuf,
}

/// The catalogs a test server's tenants may name: the binary's, the lab's, and any a test
/// adds for a tenant of its own.
#[derive(Debug, Default)]
pub(crate) struct TestCatalogs {
    lab_probe: Probe,
    added: Mutex<HashMap<String, Catalog>>,
}

impl CatalogSource for TestCatalogs {
    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = ["examples", "conformance", "lab", "lab2", "empty"]
            .map(String::from)
            .to_vec();
        names.extend(self.added.lock().expect("catalogs").keys().cloned());
        names
    }

    fn build(&self, name: &str) -> Option<Catalog> {
        match name {
            "examples" | "conformance" => roundtrip::catalogs::build(&[name.to_owned()]).ok(),
            "lab" => Some(lab::catalog(&self.lab_probe)),
            "lab2" => Some(lab::catalog(&Probe::default())),
            "empty" => Some(Catalog::builder().build()),
            other => self
                .added
                .lock()
                .expect("catalogs")
                .get(other)
                .map(|c| c.to_builder().build()),
        }
    }
}

/// A directory of its own for each test server's store (or a `roundtrip` child's data dir).
pub(crate) fn scratch_dir() -> PathBuf {
    static SERVERS: AtomicUsize = AtomicUsize::new(0);
    let n = SERVERS.fetch_add(1, Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("roundtrip-it-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a store directory");
    dir
}

/// A test tenant's spec: named for its slug, with instructions that say so.
fn spec(slug: &str, auth: AuthMode, catalog: &str) -> TenantSpec {
    let mut spec = TenantSpec::new(slug, vec![catalog.to_owned()], auth);
    spec.instructions = Some(format!("The {slug} test tenant."));
    spec
}

impl Server {
    /// A server with the test defaults.
    pub(crate) async fn start() -> Server {
        Server::start_with(|_| {}).await
    }

    /// A server with the test defaults, then `tune` applied to its configuration.
    pub(crate) async fn start_with(tune: impl FnOnce(&mut Config)) -> Server {
        Server::start_sharing(Arc::new(LocalKeyShare::new()), MasterKey::generate(), tune).await
    }

    /// A server whose key rings are kept in `share`, wrapped under `master`, as a worker
    /// process of a fleet keeps them in the store the fleet shares.
    pub(crate) async fn start_sharing(
        share: Arc<dyn KeyShare>,
        master: MasterKey,
        tune: impl FnOnce(&mut Config),
    ) -> Server {
        Server::start_fleet_worker(share, master, None, tune).await
    }

    /// A server whose rate limits are kept in `redis`, as a worker process of a fleet keeps
    /// them.
    pub(crate) async fn start_limiting_in(redis: Redis, tune: impl FnOnce(&mut Config)) -> Server {
        let share = Arc::new(LocalKeyShare::new());
        Server::start_fleet_worker(share, MasterKey::generate(), Some(redis), tune).await
    }

    /// A server with what a worker process of a fleet shares with the others: its key rings
    /// in `share`, wrapped under `master`, and its rate limits in `redis` when given.
    async fn start_fleet_worker(
        share: Arc<dyn KeyShare>,
        master: MasterKey,
        redis: Option<Redis>,
        tune: impl FnOnce(&mut Config),
    ) -> Server {
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            workers: Some(1),
            ..Config::default()
        };
        config.mcp.request_timeout_ms = 10_000;
        config.admin_token = Some(super::admin::OPERATOR.to_owned());
        // The store is followed often, so a change made behind the server's back shows soon.
        config.tenants.follow_ms = 100;
        config.http.sse_keepalive_ms = 100;
        tune(&mut config);

        let catalogs = Arc::new(TestCatalogs::default());
        let lab_probe = catalogs.lab_probe.clone();
        let dir = scratch_dir();
        let store = SqlStore::open(&format!("sqlite://{}/store.db", dir.display()))
            .await
            .expect("the test store opens");
        for (slug, auth, catalog) in [
            (DEMO, AuthMode::ApiKey, "examples"),
            (LAB, AuthMode::Anonymous, "lab"),
            (LAB2, AuthMode::Anonymous, "lab2"),
            (EMPTY, AuthMode::Anonymous, "empty"),
        ] {
            let slug_ = Slug::parse(slug).expect("a valid slug");
            store
                .create_tenant(&slug_, &spec(slug, auth, catalog))
                .await
                .expect("a test tenant");
        }
        let only_echo = Names {
            tools: ["echo".to_owned()].into(),
            ..Names::default()
        };
        for key in [
            ApiKeyRecord::from_secret("alice".into(), ALICE),
            ApiKeyRecord::from_secret("bob".into(), BOB),
            ApiKeyRecord::from_secret("carol".into(), CAROL).with_allow(only_echo),
        ] {
            store.create_key(DEMO, &key).await.expect("a test key");
        }
        let registry = Arc::new(TenantRegistry::new(Arc::new(store), catalogs.clone()));
        registry.load().await.expect("the test tenants load");

        let running = wiring::start_sharing(&config, registry, None, share, master, redis)
            .await
            .expect("the server starts");
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(20))
            .finish();
        Server {
            addr: running.addr,
            running: Some(running),
            lab_probe,
            client,
            catalogs,
            dir,
        }
    }

    pub(crate) fn url(&self, tenant: &str) -> String {
        format!("http://{}/t/{tenant}/mcp", self.addr)
    }

    /// Adds an anonymous tenant serving `catalog` to the running server, through its store
    /// (as the admin API does).
    pub(crate) async fn add_tenant(&self, slug: &str, catalog: Catalog) {
        self.add_tenant_with(slug, catalog, |_| {}).await;
    }

    /// [`Server::add_tenant`], with `tune` applied to the tenant's spec.
    pub(crate) async fn add_tenant_with(
        &self,
        slug: &str,
        catalog: Catalog,
        tune: impl FnOnce(&mut TenantSpec),
    ) {
        self.catalogs
            .added
            .lock()
            .expect("catalogs")
            .insert(slug.to_owned(), catalog);
        let mut spec = spec(slug, AuthMode::Anonymous, slug);
        tune(&mut spec);
        let registry = self.registry();
        registry
            .store()
            .create_tenant(&Slug::parse(slug).expect("a valid slug"), &spec)
            .await
            .expect("a new tenant");
        registry.sync().await.expect("the registry follows");
    }

    /// The running server's tenant registry (and, through it, its store).
    pub(crate) fn registry(&self) -> &Arc<TenantRegistry> {
        &self.running.as_ref().expect("a running server").registry
    }

    /// The tenant `slug` of the running server: the handle its requests read, to change it
    /// while it serves.
    pub(crate) fn tenant(&self, slug: &str) -> Arc<Tenant> {
        let running = self.running.as_ref().expect("a running server");
        running
            .registry
            .tenant(slug)
            .expect("a tenant of the server")
    }

    /// Starts a graceful shutdown (open listen streams close) without stopping the server.
    pub(crate) fn begin_shutdown(&self) {
        if let Some(running) = &self.running {
            running.service.shutdown_token().cancel();
        }
    }

    pub(crate) async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.stop().await;
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.service.shutdown_token().cancel();
            // The command is sent at once; nobody needs to wait for it.
            drop(running.server.stop(false));
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
