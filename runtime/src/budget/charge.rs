//! One charge to a ledger: an RAII guard that gives its amount back when dropped.

use std::sync::Arc;

use super::account::Account;
use super::ledger::Ledger;
use super::refusal::Refusal;

/// An amount charged to an account; dropped, it is given back. Keep it with what it pays
/// for (the session, the flow, the stream's body) so that both go together.
#[derive(Debug)]
pub struct Charge {
    ledger: Arc<Ledger>,
    account: Account,
    amount: u64,
}

impl Ledger {
    /// Charges `amount` to `account`, unless a limit would be passed: then nothing changes.
    pub fn charge(self: &Arc<Self>, account: &Account, amount: u64) -> Result<Charge, Refusal> {
        self.add(account, amount)?;
        Ok(Charge {
            ledger: self.clone(),
            account: account.clone(),
            amount,
        })
    }
}

impl Charge {
    /// Charges `more` on top, unless a limit would be passed: then nothing changes.
    pub fn grow(&mut self, more: u64) -> Result<(), Refusal> {
        self.ledger.add(&self.account, more)?;
        self.amount += more;
        Ok(())
    }

    /// Gives `less` back (at most what this charge holds).
    pub fn shrink(&mut self, less: u64) {
        let less = less.min(self.amount);
        self.ledger.release(&self.account, less);
        self.amount -= less;
    }

    /// What this charge holds now.
    pub fn amount(&self) -> u64 {
        self.amount
    }

    /// Who it is charged to.
    pub fn account(&self) -> &Account {
        &self.account
    }

    /// The ledger it is charged on.
    pub fn ledger(&self) -> &Arc<Ledger> {
        &self.ledger
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        self.ledger.release(&self.account, self.amount);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::budget::BudgetLimits;
    use crate::handler::Principal;

    #[test]
    fn a_charge_grows_within_its_limit_and_shrinks() {
        let ledger = Ledger::new(
            "bytes",
            BudgetLimits {
                per_caller: 10,
                per_tenant: 10,
                process: 10,
            },
        );
        let account = Account::new("t", &Principal::anonymous(), None);
        let mut c = ledger.charge(&account, 4).expect("within");
        c.grow(6).expect("within");
        assert!(c.grow(1).is_err());
        assert_eq!(c.amount(), 10);
        c.shrink(7);
        assert_eq!(ledger.held(), 3);
        drop(c);
        assert_eq!(ledger.held(), 0);
    }
}
