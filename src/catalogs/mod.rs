//! The catalogs compiled into the reference binary. A tenant names the catalogs it serves;
//! each build gets its own instance, so per-catalog state (the example notes) is per tenant.

pub mod conformance;
pub mod examples;

use roundtrip_runtime::handler::Catalog;
use roundtrip_tenants::catalogs::{self, CatalogSource};

/// Names accepted in a tenant's `catalogs`.
pub const NAMES: &[&str] = &["examples", "conformance"];

/// The catalogs of this binary, as tenants name them.
#[derive(Debug, Clone, Copy, Default)]
pub struct Compiled;

impl CatalogSource for Compiled {
    fn names(&self) -> Vec<String> {
        NAMES.iter().map(|n| (*n).to_owned()).collect()
    }

    fn build(&self, name: &str) -> Option<Catalog> {
        match name {
            "examples" => Some(examples::catalog()),
            "conformance" => Some(conformance::catalog()),
            _ => None,
        }
    }
}

/// One catalog made of the named ones, first name wins on a clash.
pub fn build(names: &[String]) -> anyhow::Result<Catalog> {
    Ok(catalogs::merged(&Compiled, names)?)
}
