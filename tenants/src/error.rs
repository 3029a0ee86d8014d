//! Errors of the tenant crate.

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TenantError {
    #[error("invalid tenant slug {0:?}: use 1-63 lowercase letters, digits and '-', starting with a letter or digit")]
    InvalidSlug(String),
    #[error("tenant {0:?} already exists")]
    Exists(String),
    #[error("unknown catalog {0:?}")]
    UnknownCatalog(String),
}
