//! The in-memory tenant registry: resolves slugs to runtime tenants and authenticates their
//! callers. Lookups are a hash-map read under a read lock. A presented key is hashed once and
//! looked up by that SHA-256 among the tenant's keys, so authentication costs the same for a
//! tenant with a hundred keys as with one (a linear scan cost 4.3 µs at 100 keys,
//! BENCHMARKS.md). The map compares digests, not secrets: a caller cannot steer the digest
//! of what it presents toward a stored one, so how long the lookup takes tells it nothing
//! about a stored key; the record found is still confirmed in constant time.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use roundtrip_runtime::tenancy::{AuthError, Authenticator, Principal, Tenant, TenantDirectory};

use crate::api_key::{ApiKeyRecord, PresentedKey};
use crate::error::TenantError;
use crate::model::{AuthMode, TenantSpec};

struct Entry {
    spec: TenantSpec,
    tenant: Arc<Tenant>,
    /// Each key with the principal it authenticates, built once, by the key's digest.
    keys: HashMap<[u8; 32], (ApiKeyRecord, Principal)>,
}

/// Every tenant of the process with its spec and keys: the runtime's `TenantDirectory` and
/// `Authenticator`.
#[derive(Default)]
pub struct TenantRegistry {
    entries: RwLock<HashMap<String, Entry>>,
}

impl std::fmt::Debug for TenantRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TenantRegistry")
            .field("tenants", &self.slugs())
            .finish()
    }
}

impl TenantRegistry {
    /// No tenants yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tenant served by `tenant` (built by the caller from the spec's catalogs).
    pub fn insert(&self, spec: TenantSpec, tenant: Tenant) -> Result<(), TenantError> {
        let mut entries = self.write();
        let slug = spec.slug.as_str().to_owned();
        if entries.contains_key(&slug) {
            return Err(TenantError::Exists(slug));
        }
        entries.insert(
            slug,
            Entry {
                spec,
                tenant: Arc::new(tenant),
                keys: HashMap::new(),
            },
        );
        Ok(())
    }

    /// Adds an API key (its stored form) to a tenant. Returns false for an unknown tenant.
    pub fn add_key(&self, slug: &str, key: ApiKeyRecord) -> bool {
        match self.write().get_mut(slug) {
            Some(entry) => {
                let principal =
                    Principal::with_grants(format!("key:{}", key.id), key.grants.clone());
                entry.keys.insert(*key.digest(), (key, principal));
                true
            }
            None => false,
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, HashMap<String, Entry>> {
        self.entries.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, HashMap<String, Entry>> {
        self.entries.write().unwrap_or_else(|p| p.into_inner())
    }
}

impl TenantDirectory for TenantRegistry {
    fn tenant(&self, slug: &str) -> Option<Arc<Tenant>> {
        self.read().get(slug).map(|e| e.tenant.clone())
    }

    fn slugs(&self) -> Vec<String> {
        let mut slugs: Vec<_> = self.read().keys().cloned().collect();
        slugs.sort();
        slugs
    }
}

impl Authenticator for TenantRegistry {
    fn authenticate(&self, tenant: &Tenant, bearer: Option<&str>) -> Result<Principal, AuthError> {
        let entries = self.read();
        let entry = entries.get(tenant.slug()).ok_or(AuthError::Invalid)?;
        match entry.spec.auth {
            AuthMode::Anonymous => Ok(Principal::anonymous()),
            AuthMode::ApiKey => {
                let presented = PresentedKey::new(bearer.ok_or(AuthError::Missing)?);
                entry
                    .keys
                    .get(presented.digest())
                    .filter(|(key, _)| key.matches(&presented))
                    .map(|(_, principal)| principal.clone())
                    .ok_or(AuthError::Invalid)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api_key::ApiKey;
    use crate::model::Slug;
    use roundtrip_runtime::handler::Catalog;
    use roundtrip_runtime::tenancy::{Allow, Grants};

    fn registry(auth: AuthMode) -> (TenantRegistry, Arc<Tenant>) {
        let r = TenantRegistry::new();
        let spec = TenantSpec {
            slug: Slug::parse("t").expect("slug"),
            name: "T".into(),
            auth,
            catalogs: vec![],
        };
        r.insert(spec, Tenant::new("t", Catalog::builder().build()))
            .expect("insert");
        let t = r.tenant("t").expect("tenant");
        (r, t)
    }

    #[test]
    fn an_api_key_tenant_needs_a_valid_key() {
        let (r, t) = registry(AuthMode::ApiKey);
        let key = ApiKey::generate("k1");
        r.add_key("t", key.record());
        assert_eq!(r.authenticate(&t, None), Err(AuthError::Missing));
        assert_eq!(r.authenticate(&t, Some("nope")), Err(AuthError::Invalid));
        assert_eq!(
            r.authenticate(&t, Some(&key.secret)).expect("ok").id(),
            "key:k1"
        );
    }

    #[test]
    fn each_of_many_keys_authenticates_as_its_own_principal() {
        let (r, t) = registry(AuthMode::ApiKey);
        let keys: Vec<ApiKey> = (0..50).map(|i| ApiKey::generate(format!("k{i}"))).collect();
        for key in &keys {
            r.add_key("t", key.record());
        }
        for (i, key) in keys.iter().enumerate() {
            let principal = r.authenticate(&t, Some(&key.secret)).expect("its key");
            assert_eq!(principal.id(), format!("key:k{i}"));
        }
        let stranger = ApiKey::generate("k0");
        assert_eq!(
            r.authenticate(&t, Some(&stranger.secret)),
            Err(AuthError::Invalid)
        );
    }

    #[test]
    fn a_limited_key_authenticates_as_a_principal_with_its_grants() {
        let (r, t) = registry(AuthMode::ApiKey);
        let key = ApiKey::generate("k1");
        let allow = Allow::default().tools(["echo"]);
        r.add_key("t", key.record().with_grants(Grants::only(allow.clone())));
        let principal = r.authenticate(&t, Some(&key.secret)).expect("its key");
        assert_eq!(principal.grants(), &Grants::only(allow));
    }

    #[test]
    fn an_anonymous_tenant_needs_nothing() {
        let (r, t) = registry(AuthMode::Anonymous);
        assert_eq!(
            r.authenticate(&t, None).expect("ok"),
            Principal::anonymous()
        );
    }

    #[test]
    fn a_slug_is_taken_once() {
        let (r, _) = registry(AuthMode::Anonymous);
        let spec = TenantSpec {
            slug: Slug::parse("t").expect("slug"),
            name: "T".into(),
            auth: AuthMode::Anonymous,
            catalogs: vec![],
        };
        assert!(r
            .insert(spec, Tenant::new("t", Catalog::builder().build()))
            .is_err());
    }
}
