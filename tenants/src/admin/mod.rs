//! The tenant admin HTTP API under `/admin/v1`: tenants, their keys, the compiled-in catalogs,
//! state-key rotation and the audit log, with its OpenAPI 3.1 document generated from these
//! handlers' types at `/admin/v1/openapi.json`.
//!
//! Every route but the document sits behind [`auth::authenticate`]: the operator token
//! (`ROUNDTRIP_ADMIN_TOKEN`) sees everything, a `tenant-admin` key only its own tenant, an `mcp`
//! key nothing (403). Errors are `application/problem+json` ([`problem`]). A change is
//! written to the store, then the registry is synced before the answer, so the MCP endpoint
//! serves it by the time the client reads the response; successful changes are audited.

pub mod auth;
pub mod bodies;
mod handlers;
pub mod problem;
pub mod schema;

use std::sync::Arc;

use actix::Recipient;
use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse};
use roundtrip_runtime::sealing::Rotate;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use self::auth::{Caller, OperatorToken};
use self::problem::Problem;
use crate::audit::AuditEvent;
use crate::catalogs;
use crate::model::{validate_names, Slug, TenantSpec};
use crate::registry::TenantRegistry;

/// Largest JSON body the admin API reads.
const MAX_BODY_BYTES: usize = 64 * 1024;

/// What the admin API works with.
#[derive(Debug)]
pub struct AdminApi {
    registry: Arc<TenantRegistry>,
    operator: Option<OperatorToken>,
    rotate: Option<Recipient<Rotate>>,
}

impl AdminApi {
    /// The API over `registry` (and its store). `operator`: the operator token, if one is
    /// set; without it only tenant-admin keys get in. `rotate`: the KeyManager, for
    /// state-key rotation.
    pub fn new(
        registry: Arc<TenantRegistry>,
        operator: Option<&str>,
        rotate: Option<Recipient<Rotate>>,
    ) -> AdminApi {
        AdminApi {
            registry,
            operator: operator.map(OperatorToken::new),
            rotate,
        }
    }

    fn store(&self) -> &dyn crate::store::Store {
        self.registry.store().as_ref()
    }

    /// Checks a spec the caller asks for: its bounds, and that its catalogs exist.
    fn check(&self, spec: &TenantSpec) -> Result<(), Problem> {
        Ok(catalogs::check_spec(
            self.registry.catalogs().as_ref(),
            spec,
        )?)
    }

    /// After a change: the registry applies it (so the MCP endpoint serves it before the
    /// caller hears back), and the action is audited.
    async fn changed(&self, caller: &Caller, tenant: &Slug, action: &str, target: Option<&str>) {
        if let Err(e) = self.registry.sync().await {
            // The registry's follower will apply it at its next tick.
            tracing::warn!(error = %e, "applying an admin change at once failed");
        }
        let event = AuditEvent::admin(tenant, caller.actor(), action, target);
        if let Err(e) = self.store().append_audit(&[event]).await {
            tracing::warn!(error = %e, action, "recording an admin action failed");
        }
    }
}

/// The admin routes, for `App::configure`.
pub fn configure(api: Arc<AdminApi>) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        let json = web::JsonConfig::default()
            .limit(MAX_BODY_BYTES)
            .error_handler(|e, _| {
                // actix-web answers a wrong content type with 400; it is a 415.
                let status = match e {
                    actix_web::error::JsonPayloadError::ContentType => {
                        actix_web::http::StatusCode::UNSUPPORTED_MEDIA_TYPE
                    }
                    _ => actix_web::ResponseError::status_code(&e),
                };
                problem::from_payload(e, status)
            });
        let query = web::QueryConfig::default().error_handler(|e, _| {
            problem::from_payload(e, actix_web::http::StatusCode::BAD_REQUEST)
        });
        let path = web::PathConfig::default()
            .error_handler(|e, _| problem::from_payload(e, actix_web::http::StatusCode::NOT_FOUND));
        cfg.service(
            web::resource("/admin/v1/openapi.json")
                .app_data(web::Data::from(api.clone()))
                .route(web::get().to(openapi_json)),
        )
        .service(
            web::scope("/admin/v1")
                .app_data(web::Data::from(api))
                .app_data(json)
                .app_data(query)
                .app_data(path)
                .wrap(from_fn(auth::authenticate))
                .configure(handlers::routes)
                .default_service(web::to(|| async {
                    Err::<HttpResponse, Problem>(Problem::not_found("No such admin endpoint"))
                })),
        );
    }
}

/// The document, with this server's catalogs as the names a tenant may serve.
async fn openapi_json(api: web::Data<AdminApi>) -> HttpResponse {
    let catalogs = api.registry.catalogs().names();
    HttpResponse::Ok().json(schema::served(ApiDoc::openapi(), catalogs))
}

/// A page cursor of the tenant and key lists: the last item's key, as lowercase hex
/// ([`schema::PAGE_CURSOR_PATTERN`]). Opaque to the client; any cursor of that form is
/// accepted, and names the place in the list after that key.
fn cursor_of(key: &str) -> String {
    hex::encode(key.as_bytes())
}

/// The key a page cursor carries.
fn cursor_key(cursor: Option<&str>) -> Result<Option<String>, Problem> {
    cursor
        .map(|c| {
            unhex(c)
                .filter(|bytes| !bytes.is_empty())
                .map(|bytes| {
                    // No key holds U+0000 (PostgreSQL cannot keep it), so "after `k\0…`" is
                    // "after `k`": the cursor is cut there, and every cursor of the form
                    // names a place in the list.
                    let key = String::from_utf8_lossy(&bytes);
                    key.split('\0').next().unwrap_or_default().to_owned()
                })
                .ok_or_else(bad_cursor)
        })
        .transpose()
}

/// An audit page cursor: the last record's id, as 16 lowercase hex digits
/// ([`schema::AUDIT_CURSOR_PATTERN`]).
fn audit_cursor_of(id: i64) -> String {
    hex::encode(id.to_be_bytes())
}

/// The record id an audit page cursor carries: the next page has the older records.
fn audit_cursor(cursor: Option<&str>) -> Result<Option<i64>, Problem> {
    cursor
        .map(|c| {
            unhex(c)
                .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
                .map(i64::from_be_bytes)
                .ok_or_else(bad_cursor)
        })
        .transpose()
}

fn bad_cursor() -> Problem {
    Problem::bad_request("cursor: not a cursor this API gave")
}

/// Lowercase hex only, an even number of digits.
fn unhex(s: &str) -> Option<Vec<u8>> {
    fn digit(d: u8) -> Option<u8> {
        match d {
            b'0'..=b'9' => Some(d - b'0'),
            b'a'..=b'f' => Some(d - b'a' + 10),
            _ => None,
        }
    }
    s.as_bytes()
        .chunks(2)
        .map(|pair| match pair {
            [hi, lo] => Some(digit(*hi)? << 4 | digit(*lo)?),
            _ => None,
        })
        .collect()
}

/// The tenant in a path, 404 when it is not a slug (no tenant can have it).
fn slug_of(path: &str) -> Result<Slug, Problem> {
    Slug::parse(path).map_err(|_| Problem::not_found(format!("No tenant {path:?}")))
}

/// Checks a key's allow-list.
fn check_allow(names: &crate::model::Names) -> Result<(), Problem> {
    Ok(validate_names("allow", names)?)
}

/// The generated OpenAPI 3.1 document.
#[derive(OpenApi)]
#[openapi(
    info(
        title = "Roundtrip admin API",
        description = "Tenants, their API keys, catalogs, state-key rotation and audit of a Roundtrip MCP platform."
    ),
    paths(
        handlers::create_tenant,
        handlers::list_tenants,
        handlers::get_tenant,
        handlers::patch_tenant,
        handlers::delete_tenant,
        handlers::suspend_tenant,
        handlers::resume_tenant,
        handlers::create_key,
        handlers::list_keys,
        handlers::revoke_key,
        handlers::list_catalogs,
        handlers::rotate_state_key,
        handlers::audit,
    ),
    modifiers(&BearerAuth),
    security(("bearer" = [])),
    tags(
        (name = "tenants", description = "Tenants and their settings"),
        (name = "keys", description = "API keys of a tenant"),
        (name = "catalogs", description = "The compiled-in catalogs"),
        (name = "audit", description = "What happened")
    )
)]
#[derive(Debug)]
pub struct ApiDoc;

struct BearerAuth;

impl Modify for BearerAuth {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_cursor_carries_its_key_back() {
        let cursor = cursor_of("acme-2");
        assert_eq!(cursor_key(Some(&cursor)), Ok(Some("acme-2".to_owned())));
    }

    #[test]
    fn any_hex_is_a_page_cursor_and_nothing_else_is() {
        assert!(cursor_key(Some("ff00")).is_ok());
        for bad in ["", "f", "FF", "zz", "%%", "ab\n"] {
            assert!(cursor_key(Some(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_page_cursor_stops_at_a_nul() {
        assert_eq!(cursor_key(Some("61006263")), Ok(Some("a".to_owned())));
        assert_eq!(cursor_key(Some("00")), Ok(Some(String::new())));
    }

    #[test]
    fn an_audit_cursor_carries_its_record_id_back() {
        for id in [0, 1, 4242, i64::MAX, -1] {
            assert_eq!(audit_cursor(Some(&audit_cursor_of(id))), Ok(Some(id)));
        }
        assert!(audit_cursor(Some("00")).is_err());
        assert!(audit_cursor(Some("0000000000000001ab")).is_err());
    }
}
