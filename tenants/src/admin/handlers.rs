//! The admin API's handlers, one per endpoint, each with the OpenAPI description the document
//! is generated from.

use actix_web::{web, HttpResponse, ResponseError};

use super::auth::Caller;
use super::bodies::{
    page_size, parse_rfc3339, AuditBody, AuditPage, AuditQuery, CatalogBody, CatalogList,
    CreateKey, CreateTenant, KeyBody, KeyCreated, KeyPage, PageQuery, PatchTenant, Rotated,
    TenantBody, TenantPage, TenantPath,
};
use super::problem::{Problem, ProblemBody};
use super::{audit_cursor, audit_cursor_of, check_allow, cursor_key, cursor_of, slug_of, AdminApi};
use crate::api_key::ApiKey;
use crate::audit::AuditFilter;
use crate::catalogs;
use crate::model::{Millis, Slug, Status, TenantRecord};

type Api = web::Data<AdminApi>;

pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.service(
        resource("/tenants", "GET, POST")
            .route(web::post().to(create_tenant))
            .route(web::get().to(list_tenants)),
    )
    .service(
        resource("/tenants/{slug}", "GET, PATCH, DELETE")
            .route(web::get().to(get_tenant))
            .route(web::patch().to(patch_tenant))
            .route(web::delete().to(delete_tenant)),
    )
    .service(resource("/tenants/{slug}/suspend", "POST").route(web::post().to(suspend_tenant)))
    .service(resource("/tenants/{slug}/resume", "POST").route(web::post().to(resume_tenant)))
    .service(
        resource("/tenants/{slug}/keys", "GET, POST")
            .route(web::post().to(create_key))
            .route(web::get().to(list_keys)),
    )
    .service(resource("/tenants/{slug}/keys/{id}", "DELETE").route(web::delete().to(revoke_key)))
    .service(
        resource("/tenants/{slug}/state-keys/rotate", "POST")
            .route(web::post().to(rotate_state_key)),
    )
    .service(resource("/tenants/{slug}/audit", "GET").route(web::get().to(audit)))
    .service(resource("/catalogs", "GET").route(web::get().to(list_catalogs)));
}

/// A resource at `path` whose other methods get 405 with `Allow: {allow}`.
fn resource(path: &str, allow: &'static str) -> actix_web::Resource {
    web::resource(path).default_service(web::to(move || async move {
        Problem::method_not_allowed(allow).error_response()
    }))
}

/// 400: the body or a parameter is malformed, or a field is out of bounds.
#[derive(utoipa::IntoResponses)]
#[response(status = 400, content_type = "application/problem+json")]
#[allow(dead_code)]
struct BadRequest(ProblemBody);

/// 401: no valid operator token or tenant-admin key.
#[derive(utoipa::IntoResponses)]
#[response(
    status = 401,
    content_type = "application/problem+json",
    headers(("WWW-Authenticate" = String, description = "`Bearer`"))
)]
#[allow(dead_code)]
struct Unauthorized(ProblemBody);

/// 403: the caller may not do this (an `mcp` key; a tenant-admin key on another tenant or
/// on an operator's action).
#[derive(utoipa::IntoResponses)]
#[response(status = 403, content_type = "application/problem+json")]
#[allow(dead_code)]
struct Forbidden(ProblemBody);

/// 404: no such tenant (or key).
#[derive(utoipa::IntoResponses)]
#[response(status = 404, content_type = "application/problem+json")]
#[allow(dead_code)]
struct NotFound(ProblemBody);

/// 413: the body is larger than 64 KiB.
#[derive(utoipa::IntoResponses)]
#[response(status = 413, content_type = "application/problem+json")]
#[allow(dead_code)]
struct TooLarge(ProblemBody);

/// 415: the body is not `application/json`.
#[derive(utoipa::IntoResponses)]
#[response(status = 415, content_type = "application/problem+json")]
#[allow(dead_code)]
struct NotJson(ProblemBody);

/// 503: the tenant store is unavailable; try again.
#[derive(utoipa::IntoResponses)]
#[response(status = 503, content_type = "application/problem+json")]
#[allow(dead_code)]
struct Unavailable(ProblemBody);

/// The tenant at `slug`, after checking the caller may manage it.
async fn managed(api: &AdminApi, caller: &Caller, slug: &str) -> Result<TenantRecord, Problem> {
    let slug = slug_of(slug)?;
    caller.may_manage(slug.as_str())?;
    api.store()
        .tenant(slug.as_str())
        .await?
        .ok_or_else(|| Problem::not_found(format!("No tenant {:?}", slug.as_str())))
}

/// Create a tenant (operator only).
#[utoipa::path(
    post, path = "/admin/v1/tenants", tag = "tenants", operation_id = "create_tenant",
    request_body = CreateTenant,
    responses(
        (status = 201, description = "Created", body = TenantBody, links(
            ("GetTenant" = (operation_id = "get_tenant", parameters(("slug" = "$response.body#/slug")))),
            ("PatchTenant" = (operation_id = "patch_tenant", parameters(("slug" = "$response.body#/slug")))),
            ("DeleteTenant" = (operation_id = "delete_tenant", parameters(("slug" = "$response.body#/slug")))),
            ("SuspendTenant" = (operation_id = "suspend_tenant", parameters(("slug" = "$response.body#/slug")))),
            ("ResumeTenant" = (operation_id = "resume_tenant", parameters(("slug" = "$response.body#/slug")))),
            ("CreateKey" = (operation_id = "create_key", parameters(("slug" = "$response.body#/slug")))),
            ("ListKeys" = (operation_id = "list_keys", parameters(("slug" = "$response.body#/slug")))),
            ("RotateStateKey" = (operation_id = "rotate_state_key", parameters(("slug" = "$response.body#/slug")))),
            ("Audit" = (operation_id = "audit", parameters(("slug" = "$response.body#/slug"))))
        )),
        BadRequest, Unauthorized, Forbidden,
        (status = 409, description = "The slug is taken", body = ProblemBody, content_type = "application/problem+json"),
        TooLarge, NotJson, Unavailable
    )
)]
pub(super) async fn create_tenant(
    api: Api,
    caller: Caller,
    body: web::Json<CreateTenant>,
) -> Result<HttpResponse, Problem> {
    caller.must_be_operator("create tenants")?;
    let slug = Slug::parse(&body.slug)?;
    let spec = body.spec();
    api.check(&spec)?;
    let record = api.store().create_tenant(&slug, &spec).await?;
    api.changed(&caller, &slug, "tenant.create", None).await;
    Ok(HttpResponse::Created().json(TenantBody::from(&record)))
}

/// List tenants (a tenant-admin key sees its own).
#[utoipa::path(
    get, path = "/admin/v1/tenants", tag = "tenants", operation_id = "list_tenants",
    params(PageQuery),
    responses(
        (status = 200, description = "A page of tenants", body = TenantPage, links(
            ("GetFirstTenant" = (operation_id = "get_tenant", parameters(("slug" = "$response.body#/items/0/slug"))))
        )),
        BadRequest, Unauthorized, Forbidden, Unavailable
    )
)]
pub(super) async fn list_tenants(
    api: Api,
    caller: Caller,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, Problem> {
    let limit = page_size(query.limit)?;
    let after = cursor_key(query.cursor.as_deref())?;
    let records = match &caller {
        Caller::Operator => api.store().tenants(after.as_deref(), limit).await?,
        Caller::TenantAdmin { tenant, .. } => match after {
            Some(_) => Vec::new(),
            None => api.store().tenant(tenant).await?.into_iter().collect(),
        },
    };
    let next_cursor = (records.len() == limit as usize)
        .then(|| records.last().map(|r| cursor_of(r.slug.as_str())))
        .flatten();
    Ok(HttpResponse::Ok().json(TenantPage {
        items: records.iter().map(TenantBody::from).collect(),
        next_cursor,
    }))
}

/// One tenant.
#[utoipa::path(
    get, path = "/admin/v1/tenants/{slug}", tag = "tenants", operation_id = "get_tenant",
    params(TenantPath),
    responses(
        (status = 200, description = "The tenant", body = TenantBody, links(
            ("PatchTenant" = (operation_id = "patch_tenant", parameters(("slug" = "$response.body#/slug")))),
            ("CreateKey" = (operation_id = "create_key", parameters(("slug" = "$response.body#/slug"))))
        )),
        Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn get_tenant(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    let record = managed(&api, &caller, &slug).await?;
    Ok(HttpResponse::Ok().json(TenantBody::from(&record)))
}

/// Change a tenant's settings; it serves them at once. Catalogs and rate limits are the
/// operator's to change.
#[utoipa::path(
    patch, path = "/admin/v1/tenants/{slug}", tag = "tenants", operation_id = "patch_tenant",
    request_body = PatchTenant, params(TenantPath),
    responses(
        (status = 200, description = "The tenant as changed", body = TenantBody, links(
            ("GetTenant" = (operation_id = "get_tenant", parameters(("slug" = "$response.body#/slug"))))
        )),
        BadRequest, Unauthorized, Forbidden, NotFound, TooLarge, NotJson, Unavailable
    )
)]
pub(super) async fn patch_tenant(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
    body: web::Json<PatchTenant>,
) -> Result<HttpResponse, Problem> {
    let record = managed(&api, &caller, &slug).await?;
    if let Some(what) = body.operator_field() {
        caller.must_be_operator(what)?;
    }
    let spec = body.into_inner().apply(record.spec.clone());
    api.check(&spec)?;
    let updated = api
        .store()
        .update_tenant(record.slug.as_str(), &spec, record.status)
        .await?
        .ok_or_else(|| Problem::not_found("The tenant was deleted meanwhile"))?;
    api.changed(&caller, &record.slug, "tenant.update", None)
        .await;
    Ok(HttpResponse::Ok().json(TenantBody::from(&updated)))
}

/// Delete a tenant and its keys (operator only).
#[utoipa::path(
    delete, path = "/admin/v1/tenants/{slug}", tag = "tenants", operation_id = "delete_tenant",
    params(TenantPath),
    responses(
        (status = 204, description = "Deleted", links(
            ("GetDeletedTenant" = (operation_id = "get_tenant", parameters(("slug" = "$request.path.slug"))))
        )),
        Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn delete_tenant(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    caller.must_be_operator("delete tenants")?;
    let slug = slug_of(&slug)?;
    if !api.store().delete_tenant(slug.as_str()).await? {
        return Err(Problem::not_found(format!("No tenant {:?}", slug.as_str())));
    }
    api.changed(&caller, &slug, "tenant.delete", None).await;
    Ok(HttpResponse::NoContent().finish())
}

/// Suspend a tenant: its MCP endpoint answers 403 until it is resumed (operator only).
#[utoipa::path(
    post, path = "/admin/v1/tenants/{slug}/suspend", tag = "tenants", operation_id = "suspend_tenant",
    params(TenantPath),
    responses(
        (status = 200, description = "The tenant, suspended", body = TenantBody, links(
            ("ResumeTenant" = (operation_id = "resume_tenant", parameters(("slug" = "$response.body#/slug"))))
        )),
        Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn suspend_tenant(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    set_status(api, caller, &slug, Status::Suspended, "tenant.suspend").await
}

/// Resume a suspended tenant (operator only).
#[utoipa::path(
    post, path = "/admin/v1/tenants/{slug}/resume", tag = "tenants", operation_id = "resume_tenant",
    params(TenantPath),
    responses(
        (status = 200, description = "The tenant, active", body = TenantBody, links(
            ("SuspendTenant" = (operation_id = "suspend_tenant", parameters(("slug" = "$response.body#/slug"))))
        )),
        Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn resume_tenant(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    set_status(api, caller, &slug, Status::Active, "tenant.resume").await
}

async fn set_status(
    api: Api,
    caller: Caller,
    slug: &str,
    status: Status,
    action: &str,
) -> Result<HttpResponse, Problem> {
    caller.must_be_operator("suspend or resume tenants")?;
    let record = managed(&api, &caller, slug).await?;
    let updated = api
        .store()
        .update_tenant(record.slug.as_str(), &record.spec, status)
        .await?
        .ok_or_else(|| Problem::not_found("The tenant was deleted meanwhile"))?;
    api.changed(&caller, &record.slug, action, None).await;
    Ok(HttpResponse::Ok().json(TenantBody::from(&updated)))
}

/// Issue an API key; its secret is in this answer only.
#[utoipa::path(
    post, path = "/admin/v1/tenants/{slug}/keys", tag = "keys", operation_id = "create_key",
    request_body = CreateKey, params(TenantPath),
    responses(
        (status = 201, description = "The key, with its secret", body = KeyCreated, links(
            ("RevokeKey" = (operation_id = "revoke_key", parameters(("slug" = "$response.body#/tenant"), ("id" = "$response.body#/id")))),
            ("ListKeys" = (operation_id = "list_keys", parameters(("slug" = "$response.body#/tenant"))))
        )),
        BadRequest, Unauthorized, Forbidden, NotFound, TooLarge, NotJson, Unavailable
    )
)]
pub(super) async fn create_key(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
    body: web::Json<CreateKey>,
) -> Result<HttpResponse, Problem> {
    let record = managed(&api, &caller, &slug).await?;
    let body = body.into_inner();
    if body.scopes.is_empty() {
        return Err(Problem::bad_request(
            "scopes: at least one of mcp, tenant-admin",
        ));
    }
    if let Some(allow) = &body.allow {
        check_allow(allow)?;
    }
    let now = Millis::now();
    let expires_at = body
        .expires_at
        .as_deref()
        .map(|at| parse_rfc3339("expires_at", at))
        .transpose()?;
    if expires_at.is_some_and(|at| at <= now) {
        return Err(Problem::bad_request("expires_at: must be in the future"));
    }
    let key = ApiKey::new_random();
    let mut stored = key.record().with_scopes(body.scopes);
    stored.allow = body.allow;
    stored.expires_at = expires_at;
    api.store()
        .create_key(record.slug.as_str(), &stored)
        .await?;
    api.changed(&caller, &record.slug, "key.create", Some(&stored.id))
        .await;
    Ok(HttpResponse::Created().json(KeyCreated {
        key: KeyBody::of(record.slug.as_str(), &stored, now),
        secret: key.secret,
    }))
}

/// A tenant's keys (never their secrets), revoked ones included.
#[utoipa::path(
    get, path = "/admin/v1/tenants/{slug}/keys", tag = "keys", operation_id = "list_keys",
    params(TenantPath, PageQuery),
    responses(
        (status = 200, description = "A page of keys", body = KeyPage, links(
            ("RevokeFirstKey" = (operation_id = "revoke_key", parameters(("slug" = "$request.path.slug"), ("id" = "$response.body#/items/0/id"))))
        )),
        BadRequest, Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn list_keys(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
    query: web::Query<PageQuery>,
) -> Result<HttpResponse, Problem> {
    let record = managed(&api, &caller, &slug).await?;
    let limit = page_size(query.limit)?;
    let after = cursor_key(query.cursor.as_deref())?;
    let keys = api
        .store()
        .keys(record.slug.as_str(), after.as_deref(), limit)
        .await?;
    let now = Millis::now();
    let next_cursor = (keys.len() == limit as usize)
        .then(|| keys.last().map(|k| cursor_of(&k.id)))
        .flatten();
    Ok(HttpResponse::Ok().json(KeyPage {
        items: keys
            .iter()
            .map(|k| KeyBody::of(record.slug.as_str(), k, now))
            .collect(),
        next_cursor,
    }))
}

/// Revoke a key: it stops working at once.
#[utoipa::path(
    delete, path = "/admin/v1/tenants/{slug}/keys/{id}", tag = "keys", operation_id = "revoke_key",
    params(TenantPath, ("id" = String, Path, description = "The key")),
    responses(
        (status = 204, description = "Revoked", links(
            ("ListKeys" = (operation_id = "list_keys", parameters(("slug" = "$request.path.slug"))))
        )),
        Unauthorized, Forbidden,
        (status = 404, description = "No such tenant, or no live key with this id (unknown, or revoked already)", body = ProblemBody, content_type = "application/problem+json"),
        Unavailable
    )
)]
pub(super) async fn revoke_key(
    api: Api,
    caller: Caller,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, Problem> {
    let (slug, id) = path.into_inner();
    let record = managed(&api, &caller, &slug).await?;
    if !api
        .store()
        .revoke_key(record.slug.as_str(), &id, Millis::now())
        .await?
    {
        return Err(Problem::not_found(format!("No live key {id:?}")));
    }
    api.changed(&caller, &record.slug, "key.revoke", Some(&id))
        .await;
    Ok(HttpResponse::NoContent().finish())
}

/// The catalogs compiled into this server, with their tools, prompts and resources.
#[utoipa::path(
    get, path = "/admin/v1/catalogs", tag = "catalogs", operation_id = "list_catalogs",
    responses(
        (status = 200, description = "The catalogs", body = CatalogList),
        Unauthorized, Forbidden
    )
)]
pub(super) async fn list_catalogs(api: Api, _caller: Caller) -> HttpResponse {
    let items = catalogs::contents(api.registry.catalogs().as_ref())
        .into_iter()
        .map(CatalogBody::from)
        .collect();
    HttpResponse::Ok().json(CatalogList { items })
}

/// Rotate the tenant's requestState key: new states are sealed with a new key; the previous
/// one keeps opening the states it sealed until they expire.
#[utoipa::path(
    post, path = "/admin/v1/tenants/{slug}/state-keys/rotate", tag = "tenants",
    operation_id = "rotate_state_key", params(TenantPath),
    responses(
        (status = 200, description = "The new key id", body = Rotated, links(
            ("Audit" = (operation_id = "audit", parameters(("slug" = "$response.body#/tenant"))))
        )),
        Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn rotate_state_key(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
) -> Result<HttpResponse, Problem> {
    let record = managed(&api, &caller, &slug).await?;
    let rotate = api.rotate.as_ref().ok_or_else(Problem::unavailable)?;
    let kid = rotate
        .send(roundtrip_runtime::sealing::Rotate {
            tenant: record.slug.as_str().to_owned(),
            if_kid: None,
            grace: None,
        })
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "the key manager did not answer");
            Problem::unavailable()
        })?
        // The KeyManager logged why; nothing changed, and the old key keeps sealing.
        .map_err(|_| Problem::unavailable())?;
    api.changed(&caller, &record.slug, "state_key.rotate", Some(&kid))
        .await;
    Ok(HttpResponse::Ok().json(Rotated {
        tenant: record.slug.as_str().to_owned(),
        kid,
    }))
}

/// The tenant's audit log, newest first.
#[utoipa::path(
    get, path = "/admin/v1/tenants/{slug}/audit", tag = "audit", operation_id = "audit",
    params(TenantPath, AuditQuery),
    responses(
        (status = 200, description = "A page of records", body = AuditPage),
        BadRequest, Unauthorized, Forbidden, NotFound, Unavailable
    )
)]
pub(super) async fn audit(
    api: Api,
    caller: Caller,
    slug: web::Path<String>,
    query: web::Query<AuditQuery>,
) -> Result<HttpResponse, Problem> {
    let record = managed(&api, &caller, &slug).await?;
    let query = query.into_inner();
    let limit = page_size(query.limit)?;
    let before_id = audit_cursor(query.cursor.as_deref())?;
    let filter = AuditFilter {
        since: query
            .since
            .as_deref()
            .map(|s| parse_rfc3339("since", s))
            .transpose()?,
        target: query.target,
        outcome: query.outcome,
        before_id,
        limit,
    };
    // No record's target holds U+0000 (PostgreSQL cannot keep it, nor compare with it).
    let events = if filter.target.as_deref().is_some_and(|t| t.contains('\0')) {
        Vec::new()
    } else {
        api.store().audit(record.slug.as_str(), &filter).await?
    };
    let next_cursor = (events.len() == limit as usize)
        .then(|| events.last().map(|e| audit_cursor_of(e.id)))
        .flatten();
    Ok(HttpResponse::Ok().json(AuditPage {
        items: events.into_iter().map(AuditBody::from).collect(),
        next_cursor,
    }))
}
