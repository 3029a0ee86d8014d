#![warn(missing_docs, missing_debug_implementations)]
//! Roundtrip tenancy: tenants, their API keys, and the registry that resolves and
//! authenticates them for the runtime (through `roundtrip_runtime::tenancy`'s traits).
//!
//! This registry is in memory; a persistent store (SQLite, Postgres) and the admin
//! API come with the tenancy work.

mod api_key;
mod error;
mod model;
mod registry;

pub use api_key::{ApiKey, ApiKeyRecord, PresentedKey};
pub use error::TenantError;
pub use model::{AuthMode, Slug, TenantSpec};
pub use registry::TenantRegistry;
