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

use std::sync::Arc;

use actix::Recipient;
use actix_web::middleware::from_fn;
use actix_web::{web, HttpResponse};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
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
                let status = actix_web::ResponseError::status_code(&e);
                problem::from_payload(e, status)
            });
        let query = web::QueryConfig::default().error_handler(|e, _| {
            problem::from_payload(e, actix_web::http::StatusCode::BAD_REQUEST)
        });
        let path = web::PathConfig::default()
            .error_handler(|e, _| problem::from_payload(e, actix_web::http::StatusCode::NOT_FOUND));
        cfg.route("/admin/v1/openapi.json", web::get().to(openapi_json))
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

async fn openapi_json() -> HttpResponse {
    HttpResponse::Ok().json(ApiDoc::openapi())
}

/// A page cursor: the last item's key, opaque to the client.
fn cursor_of(key: &str) -> String {
    URL_SAFE_NO_PAD.encode(key)
}

/// The key a cursor carries.
fn cursor_key(cursor: Option<&str>) -> Result<Option<String>, Problem> {
    cursor
        .map(|c| {
            URL_SAFE_NO_PAD
                .decode(c)
                .ok()
                .and_then(|bytes| String::from_utf8(bytes).ok())
                .ok_or_else(|| Problem::bad_request("cursor: not a cursor this API gave"))
        })
        .transpose()
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
