#![warn(missing_docs, missing_debug_implementations)]
//! Roundtrip tenancy: the tenant model, API keys, the audit log, and the store that keeps
//! them (SQLite or PostgreSQL through sqlx).

mod api_key;
pub mod audit;
mod error;
pub mod model;
pub mod store;

pub use api_key::{ApiKey, ApiKeyRecord, PresentedKey, Scope};
pub use error::TenantError;
pub use model::{
    AuthMode, Millis, Names, RateLimit, RateLimits, Slug, Status, TenantRecord, TenantSpec,
};
pub use store::{Change, SqlStore, Store, StoreError};
