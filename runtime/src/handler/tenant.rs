//! The tenant as handlers see it: its identity, settings, catalog and change feed, and the
//! principal a request runs as. Tenant stores build these; the runtime only reads them.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::Catalog;

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

impl ListChanged {
    /// The lists whose changes are announced: what a follower that missed changes announces
    /// again, since a spurious list-changed costs a re-list and a missed one a stale list.
    pub const LISTS: [ListChanged; 3] = [
        ListChanged::Tools,
        ListChanged::Prompts,
        ListChanged::Resources,
    ];

    /// The notification that announces this change, on either era.
    pub fn notification_method(&self) -> &'static str {
        match self {
            ListChanged::Tools => "notifications/tools/list_changed",
            ListChanged::Prompts => "notifications/prompts/list_changed",
            ListChanged::Resources => "notifications/resources/list_changed",
            ListChanged::ResourceUpdated(_) => "notifications/resources/updated",
        }
    }
}

/// Per-tenant settings the runtime acts on.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    /// Lifetime of a sealed `requestState`; `None` uses the runtime default.
    pub state_ttl: Option<Duration>,
    /// `ttlMs` on discover and list results.
    pub list_ttl: Duration,
    /// Whether input-required results on legacy sessions are relayed to the client as real
    /// server-to-client requests (the shim). Off: such a request fails with a refusal.
    pub legacy_shim: bool,
}

impl Default for TenantSettings {
    fn default() -> Self {
        Self {
            state_ttl: None,
            list_ttl: Duration::from_secs(60),
            legacy_shim: true,
        }
    }
}

/// A tenant: its identity, its catalog and its change feed.
#[derive(Debug)]
pub struct Tenant {
    slug: Arc<str>,
    /// Shared: every modern result carries it, and a typed result holds it by reference count.
    server_info: Arc<Value>,
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
            server_info: Arc::new(
                json!({ "name": format!("roundtrip/{slug}"), "version": env!("CARGO_PKG_VERSION") }),
            ),
            slug,
            instructions: None,
            settings: TenantSettings::default(),
            catalog: RwLock::new(Arc::new(catalog)),
            events,
        }
    }

    /// `serverInfo`: `{name, version, title?}`.
    pub fn with_server_info(mut self, info: Value) -> Self {
        self.server_info = Arc::new(info);
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

    /// `serverInfo` as a shared handle, for a result that holds it.
    pub fn shared_server_info(&self) -> Arc<Value> {
        self.server_info.clone()
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
