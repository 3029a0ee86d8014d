//! How tenancy plugs into the runtime: the traits a tenant store implements to resolve and
//! authenticate (the `roundtrip-tenants` crate, or the in-memory [`StaticTenants`] for tests
//! and embedders). The tenant handle and the principal, as handlers see them, live in
//! `handler`; they are re-exported here for stores.
//!
//! The runtime owns these traits so that it never depends on how tenants are stored.

use std::collections::HashMap;
use std::sync::Arc;

pub use crate::handler::{
    Allow, Grants, ListChanged, Principal, Tenant, TenantConfig, TenantSettings, TenantView,
};

/// Why a request was not authenticated. The client sees only 401; the reason is logged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AuthError {
    /// The tenant needs a key and the request sent none.
    #[error("no credentials")]
    Missing,
    /// The key is not one of the tenant's (or no longer is).
    #[error("credentials not recognised")]
    Invalid,
    /// The tenant is suspended: nobody may call it.
    #[error("tenant suspended")]
    Suspended,
}

/// Resolves a tenant by slug.
pub trait TenantDirectory: Send + Sync + 'static {
    /// The tenant served at `/t/{slug}/mcp`, if there is one. The same handle every time:
    /// a change to the tenant is made through it, not by replacing it.
    fn tenant(&self, slug: &str) -> Option<Arc<Tenant>>;
    /// Every tenant, for start-up work such as creating key rings.
    fn slugs(&self) -> Vec<String>;
}

/// Establishes the principal of a request from its bearer token.
pub trait Authenticator: Send + Sync + 'static {
    /// Who presents `bearer` (the token of `Authorization: Bearer`) to `tenant`, with what
    /// they may see; or why nobody does. Called on every request: no I/O.
    fn authenticate(&self, tenant: &Tenant, bearer: Option<&str>) -> Result<Principal, AuthError>;
}

/// In-memory tenants, all anonymous: for tests and for embedders without a tenant store.
#[derive(Debug, Default)]
pub struct StaticTenants {
    tenants: HashMap<String, Arc<Tenant>>,
}

impl StaticTenants {
    /// No tenants yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `tenant`, served at its slug.
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
