//! What the OpenAPI document says that no Rust type says by itself: the string schemas of a
//! catalog name, of a name in a list and of the page cursors, with the patterns the server
//! checks, and the catalog names this server has, filled in when the document is served.
//!
//! Every constraint here is one the handlers enforce (`model::bounds`, `Slug::parse`,
//! `TenantSpec::validate`, the cursor decoders in `super`): a value the document allows is
//! accepted, and one it forbids is refused with a 4xx.

use std::borrow::Cow;

use serde_json::Value;
use utoipa::openapi::schema::{ObjectBuilder, Schema, Type};
use utoipa::openapi::{OpenApi, RefOr};
use utoipa::{PartialSchema, ToSchema};

/// A tenant slug, as `Slug::parse` takes it.
pub const SLUG_PATTERN: &str = "^[a-z0-9][a-z0-9-]{1,62}$";

/// A tenant's name: no control character (`char::is_control`), and a character that is not
/// Unicode `White_Space` either (what `str::trim` removes): not blank. Classes spelled out,
/// since `\s` differs between regex dialects.
pub const NAME_PATTERN: &str = "^[^\\x00-\\x1F\\x7F-\\x9F]*[^\\x00-\\x20\\x7F-\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00-\\x1F\\x7F-\\x9F]*$";

/// A cursor of the tenant and key lists: the last item's key, as lowercase hex.
pub const PAGE_CURSOR_PATTERN: &str = "^([0-9a-f]{2})+$";

/// A cursor of the audit log: the last record's id, as 16 lowercase hex digits.
pub const AUDIT_CURSOR_PATTERN: &str = "^[0-9a-f]{16}$";

/// The name of a compiled-in catalog. The served document lists this server's catalogs as
/// its `enum` ([`with_catalogs`]).
#[derive(Debug)]
pub struct CatalogName;

impl PartialSchema for CatalogName {
    fn schema() -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .description(Some(
                "A compiled-in catalog, as `GET /admin/v1/catalogs` lists them.",
            ))
            .into()
    }
}

impl ToSchema for CatalogName {
    fn name() -> Cow<'static, str> {
        Cow::Borrowed("CatalogName")
    }
}

/// The document as served: `doc` with this server's catalogs ([`with_catalogs`]), as JSON,
/// its response links spelled as OpenAPI spells them.
///
/// utoipa 5.5 writes a link's fields in snake case (`operation_id`, `operation_ref`,
/// `request_body`), which no OpenAPI tool reads: they are renamed `operationId`,
/// `operationRef` and `requestBody` here.
pub fn served(doc: OpenApi, catalogs: Vec<String>) -> Value {
    let mut json = serde_json::to_value(with_catalogs(doc, catalogs)).unwrap_or_default();
    let operations = json
        .get_mut("paths")
        .and_then(Value::as_object_mut)
        .into_iter()
        .flat_map(|paths| paths.values_mut())
        .filter_map(Value::as_object_mut)
        .flat_map(|item| item.values_mut());
    for operation in operations {
        let links = operation
            .get_mut("responses")
            .and_then(Value::as_object_mut)
            .into_iter()
            .flat_map(|responses| responses.values_mut())
            .filter_map(|response| response.get_mut("links").and_then(Value::as_object_mut))
            .flat_map(|links| links.values_mut())
            .filter_map(Value::as_object_mut);
        for link in links {
            for (snake, camel) in [
                ("operation_id", "operationId"),
                ("operation_ref", "operationRef"),
                ("request_body", "requestBody"),
            ] {
                if let Some(value) = link.remove(snake) {
                    link.insert(camel.to_owned(), value);
                }
            }
        }
    }
    json
}

/// `doc` with `CatalogName` narrowed to the catalogs `names` (the server's own): what a tenant
/// may serve. With no catalogs at all it stays a plain string.
pub fn with_catalogs(mut doc: OpenApi, names: Vec<String>) -> OpenApi {
    if names.is_empty() {
        return doc;
    }
    let narrowed = ObjectBuilder::new()
        .schema_type(Type::String)
        .description(Some("A catalog compiled into this server."))
        .enum_values(Some(names.into_iter().map(Value::String)))
        .into();
    if let Some(components) = doc.components.as_mut() {
        components
            .schemas
            .insert(CatalogName::name().into_owned(), narrowed);
    }
    doc
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use utoipa::OpenApi as _;

    use super::*;
    use crate::admin::ApiDoc;

    fn document() -> Value {
        served(ApiDoc::openapi(), vec!["examples".into(), "lab".into()])
    }

    /// The schema of query or path parameter `name` of `method` `path`.
    fn parameter(doc: &Value, path: &str, method: &str, name: &str) -> Value {
        doc["paths"][path][method]["parameters"]
            .as_array()
            .and_then(|ps| ps.iter().find(|p| p["name"] == name))
            .map(|p| p["schema"].clone())
            .unwrap_or_else(|| panic!("{method} {path} has no parameter {name}"))
    }

    #[test]
    fn a_catalog_name_is_one_of_the_servers_catalogs() {
        let doc = document();
        assert_eq!(
            doc["components"]["schemas"]["CatalogName"]["enum"],
            json!(["examples", "lab"])
        );
    }

    #[test]
    fn a_link_names_its_operation_as_openapi_spells_it() {
        let doc = document();
        let link = &doc["paths"]["/admin/v1/tenants/{slug}/keys"]["post"]["responses"]["201"]
            ["links"]["RevokeKey"];
        assert_eq!(link["operationId"], "revoke_key", "{link}");
        assert!(link.get("operation_id").is_none(), "{link}");
        assert_eq!(link["parameters"]["id"], "$response.body#/id");
    }

    #[test]
    fn every_link_leads_to_an_operation_of_the_document() {
        let doc = document();
        let ids: Vec<&Value> = doc["paths"]
            .as_object()
            .into_iter()
            .flat_map(|paths| paths.values())
            .filter_map(Value::as_object)
            .flat_map(|item| item.values())
            .map(|operation| &operation["operationId"])
            .collect();
        let mut links = 0;
        for item in doc["paths"]
            .as_object()
            .into_iter()
            .flat_map(|p| p.values())
        {
            for operation in item.as_object().into_iter().flat_map(|i| i.values()) {
                for response in operation["responses"]
                    .as_object()
                    .into_iter()
                    .flat_map(|r| r.values())
                {
                    for link in response["links"]
                        .as_object()
                        .into_iter()
                        .flat_map(|l| l.values())
                    {
                        assert!(ids.contains(&&link["operationId"]), "{link}");
                        links += 1;
                    }
                }
            }
        }
        assert!(links >= 10, "only {links} links");
    }

    #[test]
    fn the_document_has_the_patterns_the_server_checks() {
        let doc = document();
        let schemas = &doc["components"]["schemas"];
        assert_eq!(
            schemas["CreateTenant"]["properties"]["slug"]["pattern"],
            SLUG_PATTERN
        );
        for body in ["CreateTenant", "PatchTenant"] {
            assert_eq!(schemas[body]["properties"]["name"]["pattern"], NAME_PATTERN);
        }
        let slug = parameter(&doc, "/admin/v1/tenants/{slug}", "get", "slug");
        assert_eq!(slug["pattern"], SLUG_PATTERN);
        let cursor = parameter(&doc, "/admin/v1/tenants", "get", "cursor");
        assert_eq!(cursor["pattern"], PAGE_CURSOR_PATTERN);
        let cursor = parameter(&doc, "/admin/v1/tenants/{slug}/keys", "get", "cursor");
        assert_eq!(cursor["pattern"], PAGE_CURSOR_PATTERN);
        let cursor = parameter(&doc, "/admin/v1/tenants/{slug}/audit", "get", "cursor");
        assert_eq!(cursor["pattern"], AUDIT_CURSOR_PATTERN);
    }

    /// A class of the characters `keep` accepts, as [`NAME_PATTERN`] spells them: `\xHH` or
    /// `\uHHHH`, runs of three or more as ranges.
    fn class_of(keep: impl Fn(char) -> bool) -> String {
        let spell = |c: char| match u32::from(c) {
            n @ 0..=0xFF => format!("\\x{n:02X}"),
            n => format!("\\u{n:04X}"),
        };
        let chars: Vec<char> = ('\0'..=char::MAX).filter(|c| keep(*c)).collect();
        let mut class = String::new();
        let mut i = 0;
        while i < chars.len() {
            let mut j = i;
            while j + 1 < chars.len() && u32::from(chars[j + 1]) == u32::from(chars[j]) + 1 {
                j += 1;
            }
            if j >= i + 2 {
                class.push_str(&format!("{}-{}", spell(chars[i]), spell(chars[j])));
            } else {
                chars[i..=j].iter().for_each(|c| class.push_str(&spell(*c)));
            }
            i = j + 1;
        }
        class
    }

    /// No control character, and one that is neither a control nor `White_Space`: what
    /// `TenantSpec::validate` asks of a name.
    #[test]
    fn the_name_pattern_means_what_the_server_checks() {
        let controls = class_of(char::is_control);
        let blank = class_of(|c| c.is_control() || c.is_whitespace());
        assert_eq!(
            NAME_PATTERN,
            format!("^[^{controls}]*[^{blank}][^{controls}]*$")
        );
    }
}
