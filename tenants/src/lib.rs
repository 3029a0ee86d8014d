#![warn(missing_docs, missing_debug_implementations)]
//! Roundtrip tenancy: the tenant model, API keys, the audit log, the store that keeps them
//! (SQLite or PostgreSQL through sqlx), the in-memory registry the runtime serves from, rate
//! limits, and the tenant admin HTTP API.
//!
//! Layers, each using only those after it: [`admin`] (HTTP) → [`registry`] (what a process
//! serves; follows the store), [`audit_log`] (the audit writer) → [`store`] → the model
//! ([`model`], [`api_key`], [`audit`]); [`catalogs`] and [`limits`] beside the registry;
//! [`redis_limits`] (a fleet's rate limits, in Redis) over the registry.

pub mod admin;
pub mod api_key;
pub mod audit;
pub mod audit_log;
pub mod catalogs;
mod error;
mod key_share;
pub mod limits;
pub mod model;
pub mod redis_limits;
pub mod registry;
pub mod store;
pub mod wire;

pub use api_key::{ApiKey, ApiKeyRecord, PresentedKey, Scope};
pub use error::TenantError;
pub use key_share::StoreKeyShare;
pub use model::{
    AuthMode, Millis, Names, RateLimit, RateLimits, Slug, Status, TenantRecord, TenantSpec,
};
pub use registry::TenantRegistry;
pub use store::{Change, SqlStore, Store, StoreError};
