//! The catalogs compiled into the reference binary. A tenant names the catalogs it serves;
//! each build gets its own instance, so per-catalog state (the example notes) is per tenant.

pub mod conformance;
pub mod examples;

use anyhow::bail;
use roundtrip_runtime::handler::Catalog;

/// Names accepted in a tenant's `catalogs`.
pub const NAMES: &[&str] = &["examples", "conformance"];

/// One catalog made of the named ones, first name wins on a clash.
pub fn build(names: &[String]) -> anyhow::Result<Catalog> {
    let mut builder = Catalog::builder();
    for name in names {
        let catalog = match name.as_str() {
            "examples" => examples::catalog(),
            "conformance" => conformance::catalog(),
            other => bail!("unknown catalog {other:?} (known: {})", NAMES.join(", ")),
        };
        builder = builder.merge(&catalog);
    }
    Ok(builder.build())
}
