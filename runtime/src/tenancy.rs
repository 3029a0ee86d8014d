//! How tenancy plugs into the runtime: the traits a tenant store implements to resolve and
//! authenticate (the `roundtrip-tenants` crate, or the in-memory [`StaticTenants`] for tests
//! and embedders). The tenant itself, as handlers see it, lives in `handler`; it is re-exported
//! here for stores.
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
