//! The tenant model: a validated slug, how the tenant authenticates, and what it serves.

use std::fmt;

use crate::error::TenantError;

/// A tenant slug: what appears in `/t/{slug}/mcp`. Parsed once, at the edge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Slug(String);

impl Slug {
    /// `s` as a slug: 1 to 63 lowercase letters, digits and `-`, not starting with `-`.
    pub fn parse(s: &str) -> Result<Self, TenantError> {
        let ok = (1..=63).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !s.starts_with('-');
        if ok {
            Ok(Self(s.to_owned()))
        } else {
            Err(TenantError::InvalidSlug(s.to_owned()))
        }
    }

    /// The slug as it appears in `/t/{slug}/mcp`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// How a tenant's MCP endpoint authenticates callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Anyone may call; the principal is `anonymous`.
    Anonymous,
    /// A bearer API key of the tenant is required.
    ApiKey,
}

/// What a tenant is: its slug, display name, auth mode and catalogs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantSpec {
    /// Where it is served: `/t/{slug}/mcp`.
    pub slug: Slug,
    /// The operator's name for it.
    pub name: String,
    /// How its callers authenticate.
    pub auth: AuthMode,
    /// The compiled-in catalogs it serves, by name, merged in this order (first name wins).
    pub catalogs: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_lowercase_dns_labels() {
        assert!(Slug::parse("demo-1").is_ok());
        for bad in ["", "Demo", "-x", "a/b", "a b", &"x".repeat(64)] {
            assert!(Slug::parse(bad).is_err(), "{bad:?}");
        }
    }
}
