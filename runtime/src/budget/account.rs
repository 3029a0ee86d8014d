//! Who a charge is made to: a tenant, and one caller of it.

use std::borrow::Cow;
use std::net::IpAddr;
use std::sync::Arc;

use crate::handler::{Principal, Tenant, ANONYMOUS};

/// Who a caller is, for what is counted per caller (budgets, session caps, rate limits): the
/// principal's id, or `anonymous@<ip>` for an anonymous caller whose address is known.
pub fn caller_key(principal: &str, client: Option<IpAddr>) -> Cow<'_, str> {
    match client {
        Some(ip) if principal == ANONYMOUS => Cow::Owned(format!("{principal}@{ip}")),
        _ => Cow::Borrowed(principal),
    }
}

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
    /// The caller's address, when known.
    client: Option<IpAddr>,
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
        let caller: Arc<str> = match caller_key(&principal, client) {
            Cow::Owned(key) => key.into(),
            Cow::Borrowed(_) => principal,
        };
        Self {
            tenant: tenant.into(),
            caller,
            tenant_bytes: None,
            client,
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

    /// The caller's address, when known.
    pub fn client(&self) -> Option<IpAddr> {
        self.client
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
