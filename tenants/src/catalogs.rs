//! The compiled-in catalogs a tenant may serve, as the binary that embeds them lists and
//! builds them ([`CatalogSource`]), and a tenant's catalog made from its spec.

use std::sync::Arc;

use roundtrip_runtime::handler::Catalog;
use roundtrip_runtime::tenancy::Allow;
use serde_json::Value;

use crate::error::TenantError;
use crate::model::{Names, TenantSpec};

/// The catalogs compiled into the binary: tool code is Rust, so a tenant picks among these
/// by name.
pub trait CatalogSource: Send + Sync + std::fmt::Debug + 'static {
    /// Every catalog's name.
    fn names(&self) -> Vec<String>;
    /// A new instance of the named catalog (per-catalog state, such as the example notes,
    /// belongs to the tenant that serves it), or `None` for an unknown name.
    fn build(&self, name: &str) -> Option<Catalog>;
}

/// One catalog made of the named ones, first name wins on a clash.
pub fn merged(source: &dyn CatalogSource, names: &[String]) -> Result<Catalog, TenantError> {
    let mut builder = Catalog::builder();
    for name in names {
        let catalog = source
            .build(name)
            .ok_or_else(|| TenantError::UnknownCatalog(name.clone()))?;
        builder = builder.merge(&catalog);
    }
    Ok(builder.build())
}

/// Checks that every name is a catalog of `source`.
pub fn check_names(source: &dyn CatalogSource, names: &[String]) -> Result<(), TenantError> {
    let known = source.names();
    match names.iter().find(|n| !known.contains(n)) {
        Some(unknown) => Err(TenantError::UnknownCatalog(unknown.clone())),
        None => Ok(()),
    }
}

/// Checks a tenant spec: its bounds, and that its catalogs are `source`'s.
pub fn check_spec(source: &dyn CatalogSource, spec: &TenantSpec) -> Result<(), TenantError> {
    spec.validate()?;
    check_names(source, &spec.catalogs)
}

/// `catalog` without what `disabled` names.
pub fn without(catalog: &Arc<Catalog>, disabled: &Names) -> Arc<Catalog> {
    if disabled.is_empty() {
        return catalog.clone();
    }
    Arc::new(catalog.excluding(&allow_of(disabled)))
}

/// The runtime's form of a list of names.
pub fn allow_of(names: &Names) -> Allow {
    Allow::default()
        .tools(names.tools.iter().cloned())
        .prompts(names.prompts.iter().cloned())
        .resources(names.resources.iter().cloned())
}

/// What a catalog holds, by name: its tools, prompts, resources and resource templates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CatalogContents {
    /// The catalog's name.
    pub name: String,
    /// Tool names.
    pub tools: Vec<String>,
    /// Prompt names.
    pub prompts: Vec<String>,
    /// Resource URIs and resource-template URI templates.
    pub resources: Vec<String>,
}

/// What each catalog of `source` holds.
pub fn contents(source: &dyn CatalogSource) -> Vec<CatalogContents> {
    source
        .names()
        .into_iter()
        .filter_map(|name| {
            let catalog = source.build(&name)?;
            let names = |list: &Value, field: &str| -> Vec<String> {
                list.as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|item| item.get(field)?.as_str().map(str::to_owned))
                    .collect()
            };
            let mut resources = names(catalog.resources_list(), "uri");
            resources.extend(names(catalog.templates_list(), "uriTemplate"));
            Some(CatalogContents {
                tools: names(catalog.tools_list(), "name"),
                prompts: names(catalog.prompts_list(), "name"),
                resources,
                name,
            })
        })
        .collect()
}
