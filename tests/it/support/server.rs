//! The harness: a real server in-process on port 0, with the test tenants, and the `awc`
//! client the request builder sends with (see `requests`).
//!
//! Tenants of every test server:
//! - `demo`: API keys [`ALICE`] and [`BOB`] (every tool) and [`CAROL`] (only `echo`), the
//!   `examples` catalog (no prompts);
//! - `lab`, `lab2`: anonymous, the test catalog of [`lab`](super::lab);
//! - `empty`: anonymous, an empty catalog.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use roundtrip::config::Config;
use roundtrip::wiring::{self, Running};
use roundtrip_runtime::handler::Catalog;
use roundtrip_runtime::sealing::{KeyShare, LocalKeyShare};
use roundtrip_runtime::tenancy::{Allow, Grants, Tenant, TenantDirectory};
use roundtrip_tenants::{ApiKeyRecord, AuthMode, Slug, TenantRegistry, TenantSpec};
use serde_json::json;

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
}

impl Server {
    /// A server with the test defaults.
    pub(crate) async fn start() -> Server {
        Server::start_with(|_| {}).await
    }

    /// A server with the test defaults, then `tune` applied to its configuration.
    pub(crate) async fn start_with(tune: impl FnOnce(&mut Config)) -> Server {
        Server::start_sharing(Box::new(LocalKeyShare::new()), tune).await
    }

    /// A server whose key rings are kept in `share`, as a worker process of a fleet keeps
    /// them in the store the fleet shares.
    pub(crate) async fn start_sharing(
        share: Box<dyn KeyShare>,
        tune: impl FnOnce(&mut Config),
    ) -> Server {
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            workers: Some(1),
            ..Config::default()
        };
        config.mcp.request_timeout_ms = 10_000;
        config.http.sse_keepalive_ms = 100;
        tune(&mut config);

        let lab_probe = Probe::default();
        let registry = TenantRegistry::new();
        let examples =
            roundtrip::catalogs::build(&["examples".into()]).expect("the examples catalog");
        add_tenant(&registry, DEMO, AuthMode::ApiKey, examples);
        add_tenant(
            &registry,
            LAB,
            AuthMode::Anonymous,
            lab::catalog(&lab_probe),
        );
        add_tenant(
            &registry,
            LAB2,
            AuthMode::Anonymous,
            lab::catalog(&Probe::default()),
        );
        add_tenant(
            &registry,
            EMPTY,
            AuthMode::Anonymous,
            Catalog::builder().build(),
        );
        assert!(registry.add_key(DEMO, ApiKeyRecord::from_secret("alice".into(), ALICE)));
        assert!(registry.add_key(DEMO, ApiKeyRecord::from_secret("bob".into(), BOB)));
        let only_echo = Grants::only(Allow::default().tools(["echo"]));
        let carol = ApiKeyRecord::from_secret("carol".into(), CAROL).with_grants(only_echo);
        assert!(registry.add_key(DEMO, carol));

        let running = wiring::start_sharing(&config, Arc::new(registry), None, share)
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
        }
    }

    pub(crate) fn url(&self, tenant: &str) -> String {
        format!("http://{}/t/{tenant}/mcp", self.addr)
    }

    /// Adds an anonymous tenant to the running server (as the admin API will).
    pub(crate) fn add_tenant(&self, slug: &str, catalog: Catalog) {
        let running = self.running.as_ref().expect("a running server");
        add_tenant(&running.registry, slug, AuthMode::Anonymous, catalog);
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
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.service.shutdown_token().cancel();
            // The command is sent at once; nobody needs to wait for it.
            drop(running.server.stop(false));
        }
    }
}

fn add_tenant(registry: &TenantRegistry, slug: &str, auth: AuthMode, catalog: Catalog) {
    let spec = TenantSpec {
        slug: Slug::parse(slug).expect("a valid slug"),
        name: slug.to_owned(),
        auth,
        catalogs: Vec::new(),
    };
    let tenant = Tenant::new(slug, catalog)
        .with_server_info(json!({"name": format!("roundtrip-{slug}"), "version": "0.0.0-test"}))
        .with_instructions(format!("The {slug} test tenant."));
    registry.insert(spec, tenant).expect("a new tenant");
}
