//! The `conformance` catalog (written by the conformance work).

use roundtrip_runtime::handler::Catalog;

pub fn catalog() -> Catalog {
    Catalog::builder().build()
}
