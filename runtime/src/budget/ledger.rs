//! The tallies of one kind of budget (bytes kept, or streams open) and their limits: per
//! caller, per tenant, and for the process. A charge to it is a `Charge` (`charge.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use super::account::Account;
use super::refusal::{Limit, Refusal};

/// The limits of one ledger. A tenant may have its own (`tenant_override`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BudgetLimits {
    /// What one caller of one tenant may hold.
    pub per_caller: u64,
    /// What all callers of one tenant may hold together.
    pub per_tenant: u64,
    /// What the whole process may hold.
    pub process: u64,
}

impl BudgetLimits {
    /// The byte budgets' defaults: 16 MiB per caller, 256 MiB per tenant, 1 GiB per process.
    pub const BYTES: BudgetLimits = BudgetLimits {
        per_caller: 16 << 20,
        per_tenant: 256 << 20,
        process: 1 << 30,
    };

    /// No limit at all (a library user who configures none).
    pub const UNLIMITED: BudgetLimits = BudgetLimits {
        per_caller: u64::MAX,
        per_tenant: u64::MAX,
        process: u64::MAX,
    };
}

#[derive(Debug, Default)]
struct Tallies {
    per_caller: HashMap<(Arc<str>, Arc<str>), u64>,
    per_tenant: HashMap<Arc<str>, u64>,
    process: u64,
}

/// One kind of budget for the whole process: what each caller and tenant holds now.
#[derive(Debug)]
pub struct Ledger {
    /// What is counted, for messages: "bytes", "listen streams".
    unit: &'static str,
    limits: BudgetLimits,
    /// Whether a tenant's own budget ([`Account::tenant_bytes`]) replaces `per_tenant`.
    tenant_budgets: bool,
    tallies: Mutex<Tallies>,
}

impl Ledger {
    /// An empty ledger counting `unit` within `limits`.
    pub fn new(unit: &'static str, limits: BudgetLimits) -> Arc<Self> {
        Arc::new(Self {
            unit,
            limits,
            tenant_budgets: false,
            tallies: Mutex::new(Tallies::default()),
        })
    }

    /// An empty ledger of bytes within `limits`, where a tenant with a byte budget of its own
    /// is held to that instead of `per_tenant`.
    pub fn bytes(limits: BudgetLimits) -> Arc<Self> {
        Arc::new(Self {
            unit: "bytes",
            limits,
            tenant_budgets: true,
            tallies: Mutex::new(Tallies::default()),
        })
    }

    /// The limits this ledger enforces.
    pub fn limits(&self) -> BudgetLimits {
        self.limits
    }

    /// What is counted.
    pub fn unit(&self) -> &'static str {
        self.unit
    }

    fn tallies(&self) -> MutexGuard<'_, Tallies> {
        self.tallies.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Adds `amount` to every tally of `account`, or to none.
    pub(crate) fn add(&self, account: &Account, amount: u64) -> Result<(), Refusal> {
        let mut t = self.tallies();
        let key = (account.tenant().clone(), account.caller().clone());
        let caller = t.per_caller.get(&key).copied().unwrap_or(0);
        let tenant = t.per_tenant.get(account.tenant()).copied().unwrap_or(0);
        let refuse = |limit, held: u64, max: u64| {
            (held.saturating_add(amount) > max).then_some(Refusal {
                limit,
                max,
                unit: self.unit,
            })
        };
        if let Some(r) = refuse(Limit::Process, t.process, self.limits.process)
            .or_else(|| refuse(Limit::Tenant, tenant, self.tenant_limit(account)))
            .or_else(|| refuse(Limit::Caller, caller, self.limits.per_caller))
        {
            return Err(r);
        }
        t.process += amount;
        *t.per_tenant.entry(account.tenant().clone()).or_default() += amount;
        *t.per_caller.entry(key).or_default() += amount;
        Ok(())
    }

    /// The tenant limit `account` is held to.
    fn tenant_limit(&self, account: &Account) -> u64 {
        match account.tenant_bytes() {
            Some(own) if self.tenant_budgets => own,
            _ => self.limits.per_tenant,
        }
    }

    /// Takes `amount` back from every tally of `account`.
    pub(crate) fn release(&self, account: &Account, amount: u64) {
        let mut t = self.tallies();
        t.process = t.process.saturating_sub(amount);
        let tenant = account.tenant();
        if let Some(n) = t.per_tenant.get_mut(tenant) {
            *n = n.saturating_sub(amount);
            if *n == 0 {
                t.per_tenant.remove(tenant);
            }
        }
        let key = (tenant.clone(), account.caller().clone());
        if let Some(n) = t.per_caller.get_mut(&key) {
            *n = n.saturating_sub(amount);
            if *n == 0 {
                t.per_caller.remove(&key);
            }
        }
    }

    /// What the whole process holds now.
    pub fn held(&self) -> u64 {
        self.tallies().process
    }

    /// What `account`'s caller holds now.
    pub fn held_by(&self, account: &Account) -> u64 {
        let key = (account.tenant().clone(), account.caller().clone());
        self.tallies().per_caller.get(&key).copied().unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handler::Principal;

    fn account(tenant: &str, who: &str) -> Account {
        Account::new(tenant, &Principal::new(who), None)
    }

    fn ledger() -> Arc<Ledger> {
        Ledger::new(
            "bytes",
            BudgetLimits {
                per_caller: 10,
                per_tenant: 15,
                process: 20,
            },
        )
    }

    #[test]
    fn a_charge_past_the_callers_limit_is_refused_and_changes_nothing() {
        let l = ledger();
        let a = account("t", "a");
        let _held = l.charge(&a, 8).expect("within");
        let refused = l.charge(&a, 3).expect_err("over the caller's 10");
        assert_eq!(refused.limit, Limit::Caller);
        assert_eq!(l.held_by(&a), 8);
        assert_eq!(l.held(), 8);
    }

    #[test]
    fn the_tenant_and_process_limits_apply_across_callers() {
        let l = ledger();
        let _a = l.charge(&account("t", "a"), 10).expect("within");
        let tenant = l.charge(&account("t", "b"), 6).expect_err("over 15");
        assert_eq!(tenant.limit, Limit::Tenant);
        let _c = l.charge(&account("u", "c"), 10).expect("another tenant");
        let process = l.charge(&account("v", "d"), 1).expect_err("over 20");
        assert_eq!(process.limit, Limit::Process);
    }

    #[test]
    fn a_tenants_own_byte_budget_replaces_the_servers() {
        let limits = BudgetLimits {
            per_caller: 100,
            per_tenant: 15,
            process: 100,
        };
        let own = |who| account("t", who).with_tenant_bytes(Some(30));
        let bytes = Ledger::bytes(limits);
        let _a = bytes
            .charge(&own("a"), 20)
            .expect("within the tenant's own 30");
        assert_eq!(
            bytes.charge(&own("b"), 11).expect_err("over 30").limit,
            Limit::Tenant
        );
        let streams = Ledger::new("streams", limits);
        assert!(
            streams.charge(&own("a"), 20).is_err(),
            "only a byte ledger honours it"
        );
    }

    #[test]
    fn dropping_a_charge_gives_it_back() {
        let l = ledger();
        let a = account("t", "a");
        let held = l.charge(&a, 10).expect("within");
        drop(held);
        assert_eq!(l.held(), 0);
        assert_eq!(l.held_by(&a), 0);
        assert!(l.charge(&a, 10).is_ok());
    }
}
