//! Where tenants, their keys and the audit log are kept: the [`Store`] trait, and its sqlx
//! implementation for SQLite (the embedded default) and PostgreSQL ([`sql`]).
//!
//! Every change to a tenant or a key also appends a [`Change`] in the same transaction, so a
//! serving process (this one or another on the same database) can follow the store with
//! [`Store::changes_since`] and reload just what changed. The audit log is not a change.
//! Nothing here is on a request's path: requests read the in-memory registry.
//!
//! The store also keeps each tenant's wrapped requestState key ring ([`key_rings`]), for the
//! runtime's KeyManager through [`StoreKeyShare`](crate::StoreKeyShare).

mod audit_batches;
pub mod key_rings;
mod rows;
pub mod sql;

use async_trait::async_trait;
use roundtrip_runtime::tenancy::CallRecord;

use crate::api_key::ApiKeyRecord;
use crate::audit::{AuditEvent, AuditFilter};
use crate::model::{Millis, Slug, Status, TenantRecord, TenantSpec};

pub use key_rings::{RingRow, RingWrite};
pub use sql::SqlStore;

/// Why a store operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// A tenant with this slug, or a key with this id, exists already.
    #[error("{0} already exists")]
    Conflict(String),
    /// What the operation needs does not exist: the tenant a key is added to.
    #[error("{0} does not exist")]
    NotFound(String),
    /// A row the store read does not make a valid record (a hand-edited database, or one
    /// written by a newer version).
    #[error("the store holds an invalid record: {0}")]
    Corrupt(String),
    /// What it was asked to write is not valid: an audit record whose tenant is no slug.
    #[error("invalid: {0}")]
    Invalid(String),
    /// The database failed, or could not be reached.
    #[error("database: {0}")]
    Database(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// One change to a tenant (its record, `key` `None`) or to one of its keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// Its place in the store's change log: increasing, never reused.
    pub seq: i64,
    /// The tenant changed (created, updated or deleted), or whose key changed.
    pub tenant: String,
    /// The key created, changed or revoked, if the change was to a key.
    pub key: Option<String>,
}

/// Tenants, keys and the audit log, persistent.
#[async_trait]
pub trait Store: Send + Sync + std::fmt::Debug + 'static {
    /// Creates a tenant, active. [`StoreError::Conflict`] if the slug is taken.
    async fn create_tenant(
        &self,
        slug: &Slug,
        spec: &TenantSpec,
    ) -> Result<TenantRecord, StoreError>;
    /// The tenant at `slug`, if there is one.
    async fn tenant(&self, slug: &str) -> Result<Option<TenantRecord>, StoreError>;
    /// Up to `limit` tenants in slug order, those after `after` when given.
    async fn tenants(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<TenantRecord>, StoreError>;
    /// Replaces a tenant's spec and status; `None` if there is no such tenant.
    async fn update_tenant(
        &self,
        slug: &str,
        spec: &TenantSpec,
        status: Status,
    ) -> Result<Option<TenantRecord>, StoreError>;
    /// Deletes a tenant and its keys; false if there was none.
    async fn delete_tenant(&self, slug: &str) -> Result<bool, StoreError>;

    /// Adds a key to a tenant. [`StoreError::Conflict`] if the tenant has a key of that id,
    /// [`StoreError::NotFound`] if there is no such tenant.
    async fn create_key(&self, tenant: &str, key: &ApiKeyRecord) -> Result<(), StoreError>;
    /// Adds a key, or replaces the tenant's key of the same id (live again unless `key` says
    /// it is revoked). [`StoreError::NotFound`] if there is no such tenant.
    async fn put_key(&self, tenant: &str, key: &ApiKeyRecord) -> Result<(), StoreError>;
    /// One key of a tenant.
    async fn key(&self, tenant: &str, id: &str) -> Result<Option<ApiKeyRecord>, StoreError>;
    /// Up to `limit` keys of a tenant in id order, those after `after` when given; revoked
    /// ones included.
    async fn keys(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ApiKeyRecord>, StoreError>;
    /// Marks a key revoked at `at`; false if the tenant has no such key or it was revoked.
    async fn revoke_key(&self, tenant: &str, id: &str, at: Millis) -> Result<bool, StoreError>;

    /// The newest change's `seq` (0 for none).
    async fn last_change(&self) -> Result<i64, StoreError>;
    /// Up to `limit` changes after `seq`, oldest first.
    async fn changes_since(&self, seq: i64, limit: u32) -> Result<Vec<Change>, StoreError>;
    /// Drops changes older than `before` (followers that fell that far behind reload all),
    /// except the newest, so that [`Store::last_change`] never goes back; how many went.
    async fn prune_changes(&self, before: Millis) -> Result<u64, StoreError>;

    /// Appends audit events, in one transaction.
    async fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError>;
    /// Appends calls' records to the audit log, in one transaction: written as the events
    /// they are ([`AuditKind::Call`]) without being made into events first (an audited server
    /// writes one per call). A record whose tenant is no slug refuses the whole batch
    /// ([`StoreError::Invalid`]): the registry's slugs were checked when stored.
    ///
    /// [`AuditKind::Call`]: crate::audit::AuditKind::Call
    async fn append_calls(&self, records: &[CallRecord]) -> Result<(), StoreError>;
    /// A tenant's audit events, newest first, as `filter` says.
    async fn audit(
        &self,
        tenant: &str,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditEvent>, StoreError>;
    /// Deletes audit events older than `before`; how many went.
    async fn purge_audit(&self, before: Millis) -> Result<u64, StoreError>;
}
