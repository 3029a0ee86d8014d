//! Budgets: what a caller, a tenant and the whole process may keep past the request that
//! brought it, counted in bytes (legacy sessions, their subscriptions, GET streams and held
//! shim flows; listen streams) or in items (open listen streams).
//!
//! - [`account`]: who is charged: a tenant and one caller of it;
//! - [`ledger`]: the tallies and their limits, per caller, per tenant and for the process;
//! - [`charge`]: one charge, an RAII guard that gives its amount back when dropped (the
//!   session ends, the flow ends, the stream closes);
//! - [`refusal`]: which limit refused a charge, and the JSON-RPC error that says so;
//! - [`figures`]: how many bytes each kept item is charged;
//! - [`machine`]: the memory the machine has, to check the process ceiling against at start.
//!
//! A refused charge changes nothing: what is already held stays held.

pub mod account;
pub mod charge;
pub mod figures;
pub mod ledger;
pub mod machine;
pub mod refusal;

pub use account::{caller_key, Account};
pub use charge::Charge;
pub use ledger::{BudgetLimits, Ledger};
pub use refusal::Refusal;
