//! How tenancy plugs into the runtime: the tenant as the runtime sees it, and the traits a
//! tenant store implements to resolve and authenticate (the `roundtrip-tenants` crate, or the
//! in-memory [`StaticTenants`] for tests and embedders).
//!
//! The runtime owns these traits so that it never depends on how tenants are stored.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use crate::handler::Catalog;

/// Who is calling, as established by authentication. Sealed state is bound to it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal(Arc<str>);

impl Principal {
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        Self(id.into())
    }

    pub fn anonymous() -> Self {
        Self(Arc::from("anonymous"))
    }

    pub fn id(&self) -> &str {
        &self.0
    }
}

/// Something in a tenant's catalog changed; delivered to `subscriptions/listen` streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListChanged {
    Tools,
    Prompts,
    Resources,
    /// One resource's content changed.
    ResourceUpdated(String),
}

/// Per-tenant settings the runtime acts on.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    /// Lifetime of a sealed `requestState`; `None` uses the runtime default.
    pub state_ttl: Option<Duration>,
    /// Whether legacy sessions get the input-required shim.
    pub legacy_shim: bool,
    /// `ttlMs` on discover and list results.
    pub list_ttl: Duration,
}

impl Default for TenantSettings {
    fn default() -> Self {
        Self {
            state_ttl: None,
            legacy_shim: true,
            list_ttl: Duration::from_secs(60),
        }
    }
}

/// A tenant: its identity, its catalog and its change feed.
#[derive(Debug)]
pub struct Tenant {
    slug: Arc<str>,
    server_info: Value,
    instructions: Option<String>,
    settings: TenantSettings,
    catalog: RwLock<Arc<Catalog>>,
    events: broadcast::Sender<ListChanged>,
}

impl Tenant {
    pub fn new(slug: impl Into<Arc<str>>, catalog: Catalog) -> Self {
        let slug = slug.into();
        let (events, _) = broadcast::channel(64);
        Self {
            server_info: json!({ "name": format!("roundtrip/{slug}"), "version": env!("CARGO_PKG_VERSION") }),
            slug,
            instructions: None,
            settings: TenantSettings::default(),
            catalog: RwLock::new(Arc::new(catalog)),
            events,
        }
    }

    /// `serverInfo`: `{name, version, title?}`.
    pub fn with_server_info(mut self, info: Value) -> Self {
        self.server_info = info;
        self
    }

    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    pub fn with_settings(mut self, settings: TenantSettings) -> Self {
        self.settings = settings;
        self
    }

    pub fn slug(&self) -> &str {
        &self.slug
    }

    pub fn server_info(&self) -> &Value {
        &self.server_info
    }

    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    pub fn settings(&self) -> &TenantSettings {
        &self.settings
    }

    /// The current catalog (a snapshot; cheap).
    pub fn catalog(&self) -> Arc<Catalog> {
        match self.catalog.read() {
            Ok(c) => c.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Replaces the catalog and tells listeners what changed.
    pub fn replace_catalog(&self, catalog: Catalog, changed: &[ListChanged]) {
        match self.catalog.write() {
            Ok(mut c) => *c = Arc::new(catalog),
            Err(poisoned) => *poisoned.into_inner() = Arc::new(catalog),
        }
        for event in changed {
            self.publish(event.clone());
        }
    }

    /// Publishes a change to every open `subscriptions/listen` stream of this tenant.
    pub fn publish(&self, event: ListChanged) {
        let _ = self.events.send(event);
    }

    pub fn subscribe(&self) -> broadcast::Receiver<ListChanged> {
        self.events.subscribe()
    }
}

/// Why a request was not authenticated. The client sees only 401; the reason is logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    #[error("no credentials")]
    Missing,
    #[error("credentials not recognised")]
    Invalid,
    #[error("tenant suspended")]
    Suspended,
}

/// Resolves a tenant by slug.
pub trait TenantDirectory: Send + Sync + 'static {
    fn tenant(&self, slug: &str) -> Option<Arc<Tenant>>;
    /// Every tenant, for start-up work such as creating key rings.
    fn slugs(&self) -> Vec<String>;
}

/// Establishes the principal of a request from its bearer token.
pub trait Authenticator: Send + Sync + 'static {
    fn authenticate(&self, tenant: &Tenant, bearer: Option<&str>) -> Result<Principal, AuthError>;
}

/// In-memory tenants, all anonymous: for tests and for embedders without a tenant store.
#[derive(Debug, Default)]
pub struct StaticTenants {
    tenants: HashMap<String, Arc<Tenant>>,
}

impl StaticTenants {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with(mut self, tenant: Tenant) -> Self {
        self.tenants
            .insert(tenant.slug().to_owned(), Arc::new(tenant));
        self
    }
}

impl TenantDirectory for StaticTenants {
    fn tenant(&self, slug: &str) -> Option<Arc<Tenant>> {
        self.tenants.get(slug).cloned()
    }

    fn slugs(&self) -> Vec<String> {
        self.tenants.keys().cloned().collect()
    }
}

impl Authenticator for StaticTenants {
    fn authenticate(
        &self,
        _tenant: &Tenant,
        _bearer: Option<&str>,
    ) -> Result<Principal, AuthError> {
        Ok(Principal::anonymous())
    }
}
