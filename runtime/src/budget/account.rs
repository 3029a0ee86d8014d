//! Who a charge is made to: a tenant, and one caller of it.

use std::net::IpAddr;
use std::sync::Arc;

use crate::handler::{Principal, Tenant};

/// The id of [`Principal::anonymous`].
const ANONYMOUS: &str = "anonymous";

/// A tenant and one of its callers. An authenticated caller is its principal; an anonymous
/// one is told apart by its client address (`anonymous@<ip>`), so that one anonymous client
/// cannot use up what every other anonymous client of the tenant may hold. Two accounts are
/// the same when their tenant and caller are.
#[derive(Debug, Clone)]
pub struct Account {
    tenant: Arc<str>,
    caller: Arc<str>,
    /// The tenant's own byte budget, when its settings set one (`memory_budget_bytes`).
    tenant_bytes: Option<u64>,
}

impl PartialEq for Account {
    fn eq(&self, other: &Self) -> bool {
        self.tenant == other.tenant && self.caller == other.caller
    }
}

impl Eq for Account {}

impl std::hash::Hash for Account {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.tenant.hash(state);
        self.caller.hash(state);
    }
}

impl Account {
    /// The account of `principal` on `tenant`, calling from `client` (when known).
    pub fn new(tenant: &str, principal: &Principal, client: Option<IpAddr>) -> Self {
        Self::of_id(tenant, principal.id_arc(), client)
    }

    /// [`Account::new`] for the principal whose id is `principal`.
    pub fn of_id(tenant: &str, principal: Arc<str>, client: Option<IpAddr>) -> Self {
        let caller: Arc<str> = match client {
            Some(ip) if &*principal == ANONYMOUS => format!("{principal}@{ip}").into(),
            _ => principal,
        };
        Self {
            tenant: tenant.into(),
            caller,
            tenant_bytes: None,
        }
    }

    /// The account of the principal whose id is `principal` on `tenant`, calling from
    /// `client`, held to the tenant's own byte budget if its settings set one.
    pub fn of(tenant: &Tenant, principal: Arc<str>, client: Option<IpAddr>) -> Self {
        let own = tenant.view().settings().memory_budget;
        Self::of_id(tenant.slug(), principal, client).with_tenant_bytes(own)
    }

    /// The same account, its tenant's byte budget being `bytes` rather than the server's
    /// (`None`: the server's).
    pub fn with_tenant_bytes(mut self, bytes: Option<u64>) -> Self {
        self.tenant_bytes = bytes;
        self
    }

    /// The tenant's own byte budget, if it has one.
    pub fn tenant_bytes(&self) -> Option<u64> {
        self.tenant_bytes
    }

    /// The tenant's slug.
    pub fn tenant(&self) -> &Arc<str> {
        &self.tenant
    }

    /// The caller, unique within its tenant: a principal id, or `anonymous@<ip>`.
    pub fn caller(&self) -> &Arc<str> {
        &self.caller
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_callers_are_told_apart_by_address_and_keyed_ones_are_not() {
        let a = "127.0.0.1".parse().ok();
        let b = "127.0.0.2".parse().ok();
        let anon = Principal::anonymous();
        assert_eq!(
            &**Account::new("t", &anon, a).caller(),
            "anonymous@127.0.0.1"
        );
        assert_ne!(Account::new("t", &anon, a), Account::new("t", &anon, b));
        let key = Principal::new("key:alice");
        assert_eq!(Account::new("t", &key, a), Account::new("t", &key, b));
        assert_eq!(&**Account::new("t", &anon, None).caller(), "anonymous");
    }
}
