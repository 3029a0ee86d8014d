//! The tenant as handlers and the runtime see it: a stable [`Tenant`] handle whose
//! configuration (server info, instructions, settings, catalog) can be replaced while it
//! serves, and one change feed that outlives every replacement.
//!
//! Readers take a [`TenantView`], the configuration as it is at that moment (one atomic load,
//! no lock); a request reads one view from start to end. A change builds a new view and swaps
//! it in: requests already running finish on the view they took, Session actors and
//! `subscriptions/listen` streams hold the handle and so see the next view at once, and the
//! lists the change touched are announced on the feed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use arc_swap::ArcSwap;
use serde_json::{json, Value};
use tokio::sync::broadcast;

use super::principal::{Allow, Grants, Principal};
use super::Catalog;
use crate::protocol::result::ServerMeta;

/// Something in a tenant's catalog changed; delivered to `subscriptions/listen` streams and
/// legacy sessions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListChanged {
    /// The tools list.
    Tools,
    /// The prompts list.
    Prompts,
    /// The resources list (or the templates list).
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
#[derive(Debug, Clone, PartialEq)]
pub struct TenantSettings {
    /// Lifetime of a sealed `requestState`; `None` uses the runtime default.
    pub state_ttl: Option<Duration>,
    /// `ttlMs` on discover and list results.
    pub list_ttl: Duration,
    /// Whether input-required results on legacy sessions are relayed to the client as real
    /// server-to-client requests (the shim). Off: such a request fails with a refusal.
    pub legacy_shim: bool,
    /// What the tenant's callers may keep together, in bytes (`crate::budget`); `None`: the
    /// server's per-tenant budget. Applies to what is charged after it is set.
    pub memory_budget: Option<u64>,
    /// Whether the runtime's rate limiter is asked about this tenant's calls. A tenant that
    /// sets no limit says `false`, and its calls skip the limiter's own lookup of the tenant;
    /// a tenant store sets it from the same limits its limiter reads.
    pub has_rate_limits: bool,
}

impl Default for TenantSettings {
    fn default() -> Self {
        Self {
            state_ttl: None,
            list_ttl: Duration::from_secs(60),
            legacy_shim: true,
            memory_budget: None,
            has_rate_limits: true,
        }
    }
}

/// What a tenant serves and how: what a change replaces, as a whole.
#[derive(Debug, Clone)]
pub struct TenantConfig {
    /// `serverInfo`: `{name, version, title?}`.
    pub server_info: Value,
    /// The instructions `server/discover` and `initialize` give the client.
    pub instructions: Option<String>,
    /// The settings the runtime acts on.
    pub settings: TenantSettings,
    /// Every tool, prompt and resource the tenant serves.
    pub catalog: Arc<Catalog>,
}

/// Grant sets whose restricted catalog one view keeps; beyond it, a restricted catalog is
/// built for the request and not kept (the grant sets come from the operator's keys, so
/// this bounds memory, not a caller).
const MAX_RESTRICTED_CATALOGS: usize = 256;

/// A tenant's configuration at one moment, as requests read it.
pub struct TenantView {
    server_info: Value,
    /// `_meta` naming the server, written once: every modern result carries it.
    server_meta: ServerMeta,
    instructions: Option<String>,
    settings: TenantSettings,
    catalog: Arc<Catalog>,
    /// The catalog each grant set sees, built on first use.
    restricted: Mutex<HashMap<Arc<Allow>, Arc<Catalog>>>,
}

impl std::fmt::Debug for TenantView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantView")
            .field("server_info", &self.server_info)
            .field("settings", &self.settings)
            .field("catalog", &self.catalog)
            .finish_non_exhaustive()
    }
}

impl TenantView {
    fn new(config: TenantConfig) -> Self {
        Self {
            server_meta: ServerMeta::new(&config.server_info),
            server_info: config.server_info,
            instructions: config.instructions,
            settings: config.settings,
            catalog: config.catalog,
            restricted: Mutex::new(HashMap::new()),
        }
    }

    fn config(&self) -> TenantConfig {
        TenantConfig {
            server_info: self.server_info.clone(),
            instructions: self.instructions.clone(),
            settings: self.settings.clone(),
            catalog: self.catalog.clone(),
        }
    }

    /// `serverInfo`: `{name, version, title?}`.
    pub fn server_info(&self) -> &Value {
        &self.server_info
    }

    /// `_meta` naming the server, for a typed result to hold.
    pub fn server_meta(&self) -> ServerMeta {
        self.server_meta.clone()
    }

    /// The instructions for clients, if any.
    pub fn instructions(&self) -> Option<&str> {
        self.instructions.as_deref()
    }

    /// The settings the runtime acts on.
    pub fn settings(&self) -> &TenantSettings {
        &self.settings
    }

    /// The whole catalog, as the operator configured it.
    pub fn catalog(&self) -> &Arc<Catalog> {
        &self.catalog
    }

    /// The catalog `principal` sees and may call: the whole one, or the part its grants
    /// allow, built once per grant set and view. Every list and call path reads this one.
    pub fn catalog_for(&self, principal: &Principal) -> Arc<Catalog> {
        let allow = match principal.grants() {
            Grants::All => return self.catalog.clone(),
            Grants::Only(allow) => allow,
        };
        if let Some(catalog) = self.restricted().get(allow) {
            return catalog.clone();
        }
        // Built outside the lock: two first requests may both build it; one is kept.
        let catalog = Arc::new(self.catalog.restricted_to(allow));
        let mut restricted = self.restricted();
        if restricted.len() < MAX_RESTRICTED_CATALOGS {
            restricted.insert(allow.clone(), catalog.clone());
        }
        catalog
    }

    fn restricted(&self) -> MutexGuard<'_, HashMap<Arc<Allow>, Arc<Catalog>>> {
        self.restricted.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// A tenant: its slug, its current [`TenantView`] and its change feed. Hold it as
/// `Arc<Tenant>`; it stays the same handle across every change.
pub struct Tenant {
    slug: Arc<str>,
    view: ArcSwap<TenantView>,
    /// Serialises changes, so that two at once cannot lose one.
    changing: Mutex<()>,
    events: broadcast::Sender<ListChanged>,
}

impl std::fmt::Debug for Tenant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenant")
            .field("slug", &self.slug)
            .field("view", &self.view.load())
            .finish_non_exhaustive()
    }
}

impl Tenant {
    /// A tenant serving `catalog` with default settings and a `roundtrip/{slug}` server name.
    pub fn new(slug: impl Into<Arc<str>>, catalog: Catalog) -> Self {
        let slug = slug.into();
        let config = TenantConfig {
            server_info: json!({ "name": format!("roundtrip/{slug}"), "version": env!("CARGO_PKG_VERSION") }),
            instructions: None,
            settings: TenantSettings::default(),
            catalog: Arc::new(catalog),
        };
        Self::from_config(slug, config)
    }

    /// A tenant serving `config`.
    pub fn from_config(slug: impl Into<Arc<str>>, config: TenantConfig) -> Self {
        let (events, _) = broadcast::channel(64);
        Self {
            slug: slug.into(),
            view: ArcSwap::from_pointee(TenantView::new(config)),
            changing: Mutex::new(()),
            events,
        }
    }

    /// Sets `serverInfo` before the tenant is shared.
    pub fn with_server_info(self, info: Value) -> Self {
        self.built_with(|c| c.server_info = info)
    }

    /// Sets the instructions before the tenant is shared.
    pub fn with_instructions(self, instructions: impl Into<String>) -> Self {
        let instructions = instructions.into();
        self.built_with(|c| c.instructions = Some(instructions))
    }

    /// Sets the settings before the tenant is shared.
    pub fn with_settings(self, settings: TenantSettings) -> Self {
        self.built_with(|c| c.settings = settings)
    }

    fn built_with(self, f: impl FnOnce(&mut TenantConfig)) -> Self {
        let mut config = self.view.load().config();
        f(&mut config);
        self.view.store(Arc::new(TenantView::new(config)));
        self
    }

    /// The slug: what appears in `/t/{slug}/mcp`.
    pub fn slug(&self) -> &str {
        &self.slug
    }

    /// The slug, shared.
    pub fn slug_arc(&self) -> Arc<str> {
        self.slug.clone()
    }

    /// The slug, shared, borrowed: for a caller that clones it only when it must.
    pub(crate) fn slug_shared(&self) -> &Arc<str> {
        &self.slug
    }

    /// The configuration now: one atomic load. Take it once per request.
    pub fn view(&self) -> Arc<TenantView> {
        self.view.load_full()
    }

    /// The catalog `principal` sees now (see [`TenantView::catalog_for`]).
    pub fn catalog_for(&self, principal: &Principal) -> Arc<Catalog> {
        self.view.load().catalog_for(principal)
    }

    /// The configuration now, to change and hand to [`Tenant::update`].
    pub fn config(&self) -> TenantConfig {
        self.view.load().config()
    }

    /// Changes the tenant while it serves: `change` edits the current configuration, the new
    /// view replaces the old at once, and every list whose content changed is announced on
    /// the change feed. Changes are serialised: none is lost to another made at the same time.
    pub fn update(&self, change: impl FnOnce(&mut TenantConfig)) {
        let _one_at_a_time = self.changing.lock().unwrap_or_else(|p| p.into_inner());
        let old = self.view.load_full();
        let mut config = old.config();
        change(&mut config);
        let new = TenantView::new(config);
        let changed = changed_lists(&old.catalog, &new.catalog);
        self.view.store(Arc::new(new));
        for event in changed {
            self.publish(event);
        }
    }

    /// Replaces the catalog (see [`Tenant::update`]).
    pub fn replace_catalog(&self, catalog: Catalog) {
        self.update(|c| c.catalog = Arc::new(catalog));
    }

    /// Publishes a change to every open `subscriptions/listen` stream and following legacy
    /// session of this tenant.
    pub fn publish(&self, event: ListChanged) {
        let _ = self.events.send(event);
    }

    /// The change feed: it outlives every configuration change.
    pub fn subscribe(&self) -> broadcast::Receiver<ListChanged> {
        self.events.subscribe()
    }
}

/// The lists whose content differs between two catalogs.
fn changed_lists(old: &Catalog, new: &Catalog) -> Vec<ListChanged> {
    let mut changed = Vec::new();
    if old.tools_list() != new.tools_list() {
        changed.push(ListChanged::Tools);
    }
    if old.prompts_list() != new.prompts_list() {
        changed.push(ListChanged::Prompts);
    }
    if old.resources_list() != new.resources_list() || old.templates_list() != new.templates_list()
    {
        changed.push(ListChanged::Resources);
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::{fn_tool, ToolDescriptor};
    use crate::protocol::result::CallToolResult;

    fn tool(name: &str) -> Arc<dyn crate::handler::Tool> {
        fn_tool(
            ToolDescriptor::no_args(name, "A tool."),
            |_ctx, _args| async { Ok(CallToolResult::text("ok").into()) },
        )
    }

    fn catalog(tools: &[&str]) -> Catalog {
        tools
            .iter()
            .fold(Catalog::builder(), |b, name| b.tool(tool(name)))
            .build()
    }

    #[test]
    fn an_update_is_seen_by_the_next_view_and_not_by_one_already_taken() {
        let tenant = Tenant::new("t", catalog(&["a"]));
        let before = tenant.view();
        tenant.update(|c| c.instructions = Some("new".into()));
        assert_eq!(before.instructions(), None);
        assert_eq!(tenant.view().instructions(), Some("new"));
    }

    #[test]
    fn a_catalog_change_announces_the_lists_it_changed_on_the_same_feed() {
        let tenant = Tenant::new("t", catalog(&["a"]));
        let mut feed = tenant.subscribe();
        tenant.replace_catalog(catalog(&["a", "b"]));
        assert_eq!(feed.try_recv().ok(), Some(ListChanged::Tools));
        assert!(feed.try_recv().is_err(), "only the tools list changed");
    }

    #[test]
    fn a_settings_change_announces_no_list() {
        let tenant = Tenant::new("t", catalog(&["a"]));
        let mut feed = tenant.subscribe();
        tenant.update(|c| c.settings.legacy_shim = false);
        assert!(!tenant.view().settings().legacy_shim);
        assert!(feed.try_recv().is_err());
    }

    #[test]
    fn a_limited_principal_sees_only_its_tools_and_the_same_catalog_each_time() {
        let tenant = Tenant::new("t", catalog(&["a", "b"]));
        let limited = Principal::with_grants("k", Grants::only(Allow::default().tools(["b"])));
        let first = tenant.catalog_for(&limited);
        assert!(first.tool("a").is_none() && first.tool("b").is_some());
        assert!(Arc::ptr_eq(&first, &tenant.catalog_for(&limited)), "cached");
        assert!(tenant
            .catalog_for(&Principal::anonymous())
            .tool("a")
            .is_some());
    }

    #[test]
    fn a_limited_principal_sees_a_catalog_change_too() {
        let tenant = Tenant::new("t", catalog(&["a"]));
        let limited = Principal::with_grants("k", Grants::only(Allow::default().tools(["b"])));
        assert!(!tenant.catalog_for(&limited).has_tools());
        tenant.replace_catalog(catalog(&["a", "b"]));
        assert!(tenant.catalog_for(&limited).tool("b").is_some());
    }
}
