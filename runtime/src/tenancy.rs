//! How tenancy plugs into the runtime: the traits a tenant store implements to resolve and
//! authenticate (the `roundtrip-tenants` crate, or the in-memory [`StaticTenants`] for tests
//! and embedders). The tenant handle and the principal, as handlers see them, live in
//! `handler`; they are re-exported here for stores.
//!
//! The runtime owns these traits so that it never depends on how tenants are stored.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use foldhash::HashMap;
use futures_util::future::BoxFuture;

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
    /// The tenant is suspended: nobody may call it (HTTP 403).
    #[error("tenant suspended")]
    Suspended,
    /// The key is valid but not for this endpoint (a `tenant-admin` key on the MCP
    /// endpoint: HTTP 403).
    #[error("the key has no scope for this endpoint")]
    OutOfScope,
}

impl AuthError {
    /// Whether the caller is known but refused (403) rather than unknown (401).
    pub fn is_forbidden(&self) -> bool {
        matches!(self, AuthError::Suspended | AuthError::OutOfScope)
    }
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

/// Admits requests by rate: a tenant store's limits per tenant, per caller and per tool.
///
/// Synchronous, with a way out: a limiter that keeps its buckets in this process decides on
/// the spot, and one that shares them with other processes (in Redis) hands back the
/// [`Admission::Pending`] question it must ask them. A request that no limit applies to is
/// decided on the spot either way, so it pays no allocation, no await and no round trip (an
/// `async fn` here would box a future for every request, limited or not).
pub trait Limiter: Send + Sync + std::fmt::Debug + 'static {
    /// Whether `principal` may make a request to `tenant` now; `tool` names the tool of a
    /// `tools/call`, and is `None` for any other method; `client` is the caller's address when known, which tells
    /// anonymous callers apart (`crate::budget::caller_key`). Called on every request after
    /// authentication, unless the tenant's settings say it has no limits
    /// (`TenantSettings::has_rate_limits`): no I/O here, only in what a [`Admission::Pending`]
    /// carries.
    fn admit(
        &self,
        tenant: &str,
        principal: &Principal,
        client: Option<std::net::IpAddr>,
        tool: Option<&str>,
    ) -> Admission;
}

/// A [`Limiter`]'s answer to one request.
pub enum Admission {
    /// Let it through.
    Admitted,
    /// Refuse it.
    Refused(Refusal),
    /// The answer needs a round trip (to a store the fleet shares): await it.
    Pending(BoxFuture<'static, Result<(), Refusal>>),
}

impl std::fmt::Debug for Admission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Admission::Admitted => f.write_str("Admitted"),
            Admission::Refused(refusal) => f.debug_tuple("Refused").field(refusal).finish(),
            Admission::Pending(_) => f.write_str("Pending"),
        }
    }
}

impl From<Result<(), Refusal>> for Admission {
    fn from(verdict: Result<(), Refusal>) -> Self {
        match verdict {
            Ok(()) => Admission::Admitted,
            Err(refusal) => Admission::Refused(refusal),
        }
    }
}

/// Why a [`Limiter`] refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Over a limit, with how long until the request would pass (-31429, HTTP 429).
    OverLimit(Duration),
    /// The limits could not be checked (their shared store did not answer) and the limiter
    /// fails closed: try again after this (-31503, HTTP 503). The caller did nothing wrong,
    /// so this is not counted as a rate-limit refusal.
    Unavailable(Duration),
}

/// How a call that may ask for input ended, for the audit log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallOutcome {
    /// A complete result.
    Complete,
    /// An input-required result.
    InputRequired,
    /// A JSON-RPC error with this code.
    Error(i64),
    /// The client went away before the answer.
    Cancelled,
}

/// One finished `tools/call`, `prompts/get` or `resources/read`: what the audit log keeps.
/// Never the arguments.
#[derive(Debug, Clone)]
pub struct CallRecord {
    /// The tenant's slug.
    pub tenant: Arc<str>,
    /// Who called (the principal's id).
    pub principal: Arc<str>,
    /// The method.
    pub method: &'static str,
    /// The tool or prompt name, or the resource URI, when the request named one: the
    /// catalog's own copy when it has that target ([`Catalog::target_name`]), so that a
    /// record costs no allocation on the request's path and no free on the writer's thread.
    ///
    /// [`Catalog::target_name`]: crate::handler::Catalog::target_name
    pub target: Option<Arc<str>>,
    /// How it ended.
    pub outcome: CallOutcome,
    /// Its round as the handler saw it (`Context::round`: 0 for a first call, n after n
    /// input-required results); on a legacy shim flow, the rounds it took.
    pub round: u32,
    /// When it arrived.
    pub at: SystemTime,
    /// How long it took.
    pub latency: Duration,
}

/// Receives call records. Called on the request's path once the reply is known: it must not
/// block (queue the record, or drop it and count).
pub trait AuditSink: Send + Sync + std::fmt::Debug + 'static {
    /// Takes one record.
    fn record(&self, record: CallRecord);

    /// What became of the records so far, for `/metrics`.
    fn tally(&self) -> AuditTally {
        AuditTally::default()
    }
}

/// Counts of an [`AuditSink`]'s records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AuditTally {
    /// Written to the audit log.
    pub written: u64,
    /// Dropped because the queue was full.
    pub dropped: u64,
    /// Lost because writing them failed.
    pub failed: u64,
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
