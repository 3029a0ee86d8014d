//! Errors of the tenant crate.

/// Why a tenant or a key could not be created or changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TenantError {
    /// The slug breaks the slug rules.
    #[error("invalid tenant slug {0:?}: 2 to 63 lowercase letters, digits and '-', starting with a letter or digit")]
    InvalidSlug(String),
    /// Another tenant has the slug.
    #[error("tenant {0:?} already exists")]
    Exists(String),
    /// The catalog named is not compiled into the binary.
    #[error("unknown catalog {0:?}")]
    UnknownCatalog(String),
    /// A field is out of its bounds; the message names it.
    #[error("{0}")]
    Invalid(String),
}
