//! The serving process's view of the store: every tenant as a runtime [`Tenant`] handle, each
//! key by the SHA-256 of its secret, and each tenant's rate-limit buckets. The runtime's
//! `TenantDirectory`, `Authenticator` and `Limiter`.
//!
//! Requests read it under a read lock and never reach the database. It follows the store:
//! [`TenantRegistry::load`] reads everything once, then [`TenantRegistry::sync`] applies the
//! store's change log (what this process's admin API changed, and what another process or the
//! CLI did), about every half second ([`TenantRegistry::follow`]). A changed tenant keeps its
//! handle: its new configuration is swapped in, so open streams and legacy sessions go on and
//! hear the list changes.
//!
//! A presented key is hashed once and looked up by that digest, so authentication costs the
//! same for a hundred thousand keys as for one; the map compares digests, not secrets, and the
//! record found is still confirmed in constant time.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, OnceLock, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use actix::Recipient;
use foldhash::{HashMap, HashMapExt};
use roundtrip_runtime::handler::Catalog;
use roundtrip_runtime::sealing::SetTenantGrace;
use roundtrip_runtime::tenancy::{
    Admission, AuthError, Authenticator, Limiter, Principal, Refusal, Tenant, TenantConfig,
    TenantDirectory, TenantSettings,
};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use crate::api_key::{ApiKeyRecord, PresentedKey, Scope};
use crate::catalogs::{self, CatalogSource};
use crate::error::TenantError;
use crate::limits::TenantLimits;
use crate::model::{AuthMode, Millis, Status, TenantRecord};
use crate::store::{Store, StoreError};

/// Page size when the registry reads the store whole.
const PAGE: u32 = 500;
/// Changes applied per read of the change log.
const CHANGES_PER_READ: u32 = 1000;

/// One tenant as the process serves it.
struct Entry {
    record: TenantRecord,
    tenant: Arc<Tenant>,
    /// Its catalogs merged, before its disabled items are taken out: rebuilt only when the
    /// catalog names change, so a catalog's state (the example notes) survives other changes.
    merged: Arc<Catalog>,
    /// Its keys by digest, each with the principal it authenticates.
    keys: HashMap<[u8; 32], (ApiKeyRecord, Principal)>,
    /// Key id to digest, to replace one key.
    ids: HashMap<String, [u8; 32]>,
    limits: Arc<TenantLimits>,
}

#[derive(Default)]
struct State {
    tenants: HashMap<String, Entry>,
    /// Every key's digest to its tenant: the admin API finds a tenant-admin key's tenant.
    key_tenants: HashMap<[u8; 32], String>,
}

/// Every tenant of the store, as this process serves them.
pub struct TenantRegistry {
    catalogs: Arc<dyn CatalogSource>,
    store: Arc<dyn Store>,
    state: RwLock<State>,
    /// The last change applied.
    seen: AtomicI64,
    /// One sync at a time: two would apply the same changes twice, out of order.
    syncing: tokio::sync::Mutex<()>,
    /// Told each tenant's requestState lifetime (plus the clock skew), so that its rotated
    /// state keys keep opening for as long as its states live.
    grace: OnceLock<(Recipient<SetTenantGrace>, Duration)>,
}

impl std::fmt::Debug for TenantRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantRegistry")
            .field("tenants", &self.slugs())
            .field("seen", &self.seen.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

/// A key presented to the admin API.
#[derive(Debug, Clone)]
pub enum AdminLookup {
    /// No live key of any tenant.
    Unknown,
    /// A live key without the `tenant-admin` scope.
    NotAdmin,
    /// A live tenant-admin key.
    Admin(AdminKey),
}

/// A tenant-admin key, as the admin API resolved it.
#[derive(Debug, Clone)]
pub struct AdminKey {
    /// Its tenant.
    pub tenant: String,
    /// Its principal id (`key:{id}`), for the audit log.
    pub principal: String,
}

impl TenantRegistry {
    /// An empty registry over `store`, building catalogs from `catalogs`; call
    /// [`TenantRegistry::load`] before serving.
    pub fn new(store: Arc<dyn Store>, catalogs: Arc<dyn CatalogSource>) -> TenantRegistry {
        TenantRegistry {
            catalogs,
            store,
            state: RwLock::new(State::default()),
            seen: AtomicI64::new(0),
            syncing: tokio::sync::Mutex::new(()),
            grace: OnceLock::new(),
        }
    }

    /// Tells `key_manager` every tenant's state lifetime plus `clock_skew` from now on, and at
    /// once those of the tenants already read (a tenant whose states live longer than the
    /// default keeps its rotated keys as long).
    pub fn tell_state_ttls(&self, key_manager: Recipient<SetTenantGrace>, clock_skew: Duration) {
        for entry in self.read().tenants.values() {
            if let Some(ttl) = entry.record.spec.state_ttl_secs {
                key_manager.do_send(grace_of(entry.record.slug.as_str(), ttl, clock_skew));
            }
        }
        let _ = self.grace.set((key_manager, clock_skew));
    }

    /// The store it follows.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// The catalogs tenants may serve.
    pub fn catalogs(&self) -> &Arc<dyn CatalogSource> {
        &self.catalogs
    }

    /// Reads every tenant and key of the store. Changes made while it reads are applied by
    /// the next [`TenantRegistry::sync`].
    pub async fn load(&self) -> Result<(), StoreError> {
        let _one = self.syncing.lock().await;
        let seen = self.store.last_change().await?;
        let mut after: Option<String> = None;
        loop {
            let page = self.store.tenants(after.as_deref(), PAGE).await?;
            for record in &page {
                self.reload_tenant_from(record.clone()).await?;
            }
            match page.last() {
                Some(last) if page.len() == PAGE as usize => {
                    after = Some(last.slug.as_str().to_owned())
                }
                _ => break,
            }
        }
        self.seen.store(seen, Ordering::Release);
        Ok(())
    }

    /// Applies the store's changes since the last one seen; how many were applied.
    pub async fn sync(&self) -> Result<usize, StoreError> {
        let _one = self.syncing.lock().await;
        let mut applied = 0;
        loop {
            let seen = self.seen.load(Ordering::Acquire);
            let changes = self.store.changes_since(seen, CHANGES_PER_READ).await?;
            let Some(last) = changes.last().map(|c| c.seq) else {
                return Ok(applied);
            };
            // A tenant changed several times is read once; a key likewise.
            let mut tenants = BTreeSet::new();
            let mut keys = BTreeSet::new();
            for change in &changes {
                match &change.key {
                    None => {
                        tenants.insert(change.tenant.clone());
                    }
                    Some(key) => {
                        keys.insert((change.tenant.clone(), key.clone()));
                    }
                }
            }
            for slug in &tenants {
                self.reload_tenant(slug).await?;
            }
            for (slug, id) in keys.iter().filter(|(slug, _)| !tenants.contains(slug)) {
                let key = self.store.key(slug, id).await?;
                self.apply_key(slug, id, key);
            }
            applied += changes.len();
            self.seen.store(last, Ordering::Release);
            if changes.len() < CHANGES_PER_READ as usize {
                return Ok(applied);
            }
        }
    }

    /// Follows the store until `stop`: a [`TenantRegistry::sync`] every `every`. A failed
    /// sync is logged and tried again at the next tick; the registry serves what it has.
    pub fn follow(self: &Arc<Self>, every: Duration, stop: CancellationToken) {
        let registry = self.clone();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = tick.tick() => {
                        if let Err(e) = registry.sync().await {
                            tracing::warn!(error = %e, "following the tenant store failed; serving what was read");
                        }
                    }
                }
            }
        });
    }

    /// Reads one tenant and its keys anew (its handle kept), or forgets it if it is gone.
    async fn reload_tenant(&self, slug: &str) -> Result<(), StoreError> {
        match self.store.tenant(slug).await? {
            Some(record) => self.reload_tenant_from(record).await,
            None => {
                self.forget(slug);
                Ok(())
            }
        }
    }

    async fn reload_tenant_from(&self, record: TenantRecord) -> Result<(), StoreError> {
        let slug = record.slug.as_str().to_owned();
        let mut keys = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self.store.keys(&slug, after.as_deref(), PAGE).await?;
            let full = page.len() == PAGE as usize;
            after = page.last().map(|k| k.id.clone());
            keys.extend(page);
            if !full {
                break;
            }
        }
        if let Err(e) = self.apply_tenant(record, keys) {
            // A tenant the binary cannot serve (a catalog it was not built with) is left as
            // it was, and said so; the others serve on.
            tracing::error!(tenant = %slug, error = %e, "cannot serve the tenant as stored");
        }
        Ok(())
    }

    /// Puts `record` with `keys` in the registry: a new tenant, or a change to one.
    fn apply_tenant(
        &self,
        record: TenantRecord,
        keys: Vec<ApiKeyRecord>,
    ) -> Result<(), TenantError> {
        let slug = record.slug.as_str().to_owned();
        let previous = self.read().tenants.get(&slug).map(|e| {
            (
                e.tenant.clone(),
                e.merged.clone(),
                e.record.spec.catalogs.clone(),
            )
        });
        let merged = match &previous {
            Some((_, merged, names)) if *names == record.spec.catalogs => merged.clone(),
            _ => Arc::new(catalogs::merged(
                self.catalogs.as_ref(),
                &record.spec.catalogs,
            )?),
        };
        let config = tenant_config(&record, &merged);
        if let (Some((key_manager, skew)), Some(ttl)) =
            (self.grace.get(), record.spec.state_ttl_secs)
        {
            key_manager.do_send(grace_of(&slug, ttl, *skew));
        }
        let tenant = match previous {
            Some((tenant, _, _)) => {
                tenant.update(|c| *c = config);
                tenant
            }
            None => Arc::new(Tenant::from_config(slug.clone(), config)),
        };
        let limits = Arc::new(TenantLimits::new(&record.spec.rate_limits));
        let mut entry = Entry {
            record,
            tenant,
            merged,
            keys: HashMap::new(),
            ids: HashMap::new(),
            limits,
        };
        let mut state = self.write();
        if let Some(old) = state.tenants.remove(&slug) {
            for digest in old.keys.keys() {
                state.key_tenants.remove(digest);
            }
        }
        for key in keys {
            state.key_tenants.insert(*key.digest(), slug.clone());
            insert_key(&mut entry, key);
        }
        state.tenants.insert(slug, entry);
        Ok(())
    }

    /// Puts one key of `slug` in the registry (`None`: it is gone).
    fn apply_key(&self, slug: &str, id: &str, key: Option<ApiKeyRecord>) {
        let mut state = self.write();
        let State {
            tenants,
            key_tenants,
        } = &mut *state;
        let Some(entry) = tenants.get_mut(slug) else {
            return;
        };
        if let Some(digest) = entry.ids.remove(id) {
            entry.keys.remove(&digest);
            key_tenants.remove(&digest);
        }
        if let Some(key) = key {
            key_tenants.insert(*key.digest(), slug.to_owned());
            insert_key(entry, key);
        }
    }

    fn forget(&self, slug: &str) {
        let mut state = self.write();
        if let Some(entry) = state.tenants.remove(slug) {
            for digest in entry.keys.keys() {
                state.key_tenants.remove(digest);
            }
        }
    }

    /// The tenant's record as the registry serves it.
    pub fn record(&self, slug: &str) -> Option<TenantRecord> {
        self.read().tenants.get(slug).map(|e| e.record.clone())
    }

    /// What the live key `bearer` is to the admin API.
    pub fn admin_key(&self, bearer: &str) -> AdminLookup {
        let presented = PresentedKey::new(bearer);
        let state = self.read();
        let found = state.key_tenants.get(presented.digest()).and_then(|slug| {
            let (key, principal) = state.tenants.get(slug)?.keys.get(presented.digest())?;
            (key.matches(&presented) && key.is_live(Millis::now)).then_some((slug, key, principal))
        });
        match found {
            None => AdminLookup::Unknown,
            Some((_, key, _)) if !key.scopes.contains(&Scope::TenantAdmin) => AdminLookup::NotAdmin,
            Some((slug, _, principal)) => AdminLookup::Admin(AdminKey {
                tenant: slug.clone(),
                principal: principal.id().to_owned(),
            }),
        }
    }

    fn read(&self) -> RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }
}

fn grace_of(tenant: &str, ttl_secs: u64, clock_skew: Duration) -> SetTenantGrace {
    SetTenantGrace {
        tenant: tenant.to_owned(),
        grace: Duration::from_secs(ttl_secs) + clock_skew,
    }
}

fn insert_key(entry: &mut Entry, key: ApiKeyRecord) {
    let principal = Principal::with_grants(format!("key:{}", key.id), key.grants());
    entry.ids.insert(key.id.clone(), *key.digest());
    entry.keys.insert(*key.digest(), (key, principal));
}

/// What the runtime serves for `record`: its catalogs without what it disabled, its name and
/// instructions, its settings.
fn tenant_config(record: &TenantRecord, merged: &Arc<Catalog>) -> TenantConfig {
    let spec = &record.spec;
    TenantConfig {
        server_info: json!({
            "name": format!("roundtrip-{}", record.slug),
            "title": spec.name,
            "version": env!("CARGO_PKG_VERSION"),
        }),
        instructions: spec.instructions.clone(),
        settings: TenantSettings {
            state_ttl: spec.state_ttl_secs.map(Duration::from_secs),
            legacy_shim: spec.legacy_shim,
            memory_budget: spec.memory_budget_bytes,
            has_rate_limits: !spec.rate_limits.is_empty(),
            ..TenantSettings::default()
        },
        catalog: catalogs::without(merged, &spec.disabled),
    }
}

impl TenantDirectory for TenantRegistry {
    fn tenant(&self, slug: &str) -> Option<Arc<Tenant>> {
        self.read().tenants.get(slug).map(|e| e.tenant.clone())
    }

    fn slugs(&self) -> Vec<String> {
        let mut slugs: Vec<_> = self.read().tenants.keys().cloned().collect();
        slugs.sort();
        slugs
    }
}

impl Authenticator for TenantRegistry {
    fn authenticate(&self, tenant: &Tenant, bearer: Option<&str>) -> Result<Principal, AuthError> {
        let state = self.read();
        let entry = state.tenants.get(tenant.slug()).ok_or(AuthError::Invalid)?;
        if entry.record.status == Status::Suspended {
            return Err(AuthError::Suspended);
        }
        match entry.record.spec.auth {
            AuthMode::Anonymous => Ok(Principal::anonymous()),
            AuthMode::ApiKey => {
                let presented = PresentedKey::new(bearer.ok_or(AuthError::Missing)?);
                let (key, principal) = entry
                    .keys
                    .get(presented.digest())
                    .filter(|(key, _)| key.matches(&presented) && key.is_live(Millis::now))
                    .ok_or(AuthError::Invalid)?;
                if !key.scopes.contains(&Scope::Mcp) {
                    return Err(AuthError::OutOfScope);
                }
                Ok(principal.clone())
            }
        }
    }
}

impl TenantRegistry {
    /// The rate limits of `tenant`: `None` when it sets none (or there is no such tenant).
    pub fn rate_limits(&self, tenant: &str) -> Option<Arc<TenantLimits>> {
        match self.read().tenants.get(tenant) {
            Some(entry) if !entry.limits.is_empty() => Some(entry.limits.clone()),
            _ => None,
        }
    }
}

/// The buckets in this process: decided on the spot. (`crate::redis_limits` keeps them in
/// Redis, for a fleet.)
impl Limiter for TenantRegistry {
    fn admit(
        &self,
        tenant: &str,
        principal: &Principal,
        client: Option<IpAddr>,
        tool: Option<&str>,
    ) -> Admission {
        let Some(limits) = self.rate_limits(tenant) else {
            return Admission::Admitted;
        };
        limits
            .admit(&limits.caller(principal, client), tool)
            .map_err(Refusal::OverLimit)
            .into()
    }
}
