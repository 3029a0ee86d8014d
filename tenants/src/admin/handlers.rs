//! The admin API's handlers, one per endpoint, each with the OpenAPI description the document
//! is generated from.

use actix_web::{web, HttpResponse};

use super::auth::Caller;
use super::bodies::{
    page_size, parse_rfc3339, AuditBody, AuditPage, AuditQuery, CatalogBody, CatalogList,
    CreateKey, CreateTenant, KeyBody, KeyCreated, KeyPage, PageQuery, PatchTenant, Rotated,
    TenantBody, TenantPage,
};
use super::problem::{Problem, ProblemBody};
use super::{check_allow, cursor_key, cursor_of, slug_of, AdminApi};
use crate::api_key::ApiKey;
use crate::audit::AuditFilter;
use crate::catalogs;
use crate::model::{Millis, Slug, Status, TenantRecord};

type Api = web::Data<AdminApi>;

pub(super) fn routes(cfg: &mut web::ServiceConfig) {
    cfg.route("/tenants", web::post().to(create_tenant))
        .route("/tenants", web::get().to(list_tenants))
        .route("/tenants/{slug}", web::get().to(get_tenant))
        .route("/tenants/{slug}", web::patch().to(patch_tenant))
        .route("/tenants/{slug}", web::delete().to(delete_tenant))
        .route("/tenants/{slug}/suspend", web::post().to(suspend_tenant))
        .route("/tenants/{slug}/resume", web::post().to(resume_tenant))
        .route("/tenants/{slug}/keys", web::post().to(create_key))
        .route("/tenants/{slug}/keys", web::get().to(list_keys))
        .route("/tenants/{slug}/keys/{id}", web::delete().to(revoke_key))
        .route(
            "/tenants/{slug}/state-keys/rotate",
            web::post().to(rotate_state_key),
        )
        .route("/tenants/{slug}/audit", web::get().to(audit))
        .route("/catalogs", web::get().to(list_catalogs));
}

/// The problems every authenticated endpoint may answer.
#[derive(utoipa::IntoResponses)]
#[allow(dead_code)]
enum Problems {
    /// The request is malformed, or a field is out of bounds.
    #[response(status = 400, content_type = "application/problem+json")]
    BadRequest(ProblemBody),
    /// No valid operator token or tenant-admin key.
    #[response(status = 401, content_type = "application/problem+json")]
    Unauthorized(ProblemBody),
    /// The caller may not do this.
    #[response(status = 403, content_type = "application/problem+json")]
    Forbidden(ProblemBody),
    /// No such tenant (or key).
    #[response(status = 404, content_type = "application/problem+json")]
    NotFound(ProblemBody),
    /// The tenant store is unavailable.
    #[response(status = 503, content_type = "application/problem+json")]
    Unavailable(ProblemBody),
}

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
    post, path = "/admin/v1/tenants", tag = "tenants", request_body = CreateTenant,
    responses(
        (status = 201, description = "Created", body = TenantBody),
        (status = 409, description = "The slug is taken", body = ProblemBody, content_type = "application/problem+json"),
        Problems
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
    get, path = "/admin/v1/tenants", tag = "tenants", params(PageQuery),
    responses((status = 200, description = "A page of tenants", body = TenantPage), Problems)
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
    get, path = "/admin/v1/tenants/{slug}", tag = "tenants",
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 200, description = "The tenant", body = TenantBody), Problems)
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
    patch, path = "/admin/v1/tenants/{slug}", tag = "tenants", request_body = PatchTenant,
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 200, description = "The tenant as changed", body = TenantBody), Problems)
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
    delete, path = "/admin/v1/tenants/{slug}", tag = "tenants",
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 204, description = "Deleted"), Problems)
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
    post, path = "/admin/v1/tenants/{slug}/suspend", tag = "tenants",
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 200, description = "The tenant, suspended", body = TenantBody), Problems)
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
    post, path = "/admin/v1/tenants/{slug}/resume", tag = "tenants",
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 200, description = "The tenant, active", body = TenantBody), Problems)
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
    post, path = "/admin/v1/tenants/{slug}/keys", tag = "keys", request_body = CreateKey,
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 201, description = "The key, with its secret", body = KeyCreated), Problems)
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
    get, path = "/admin/v1/tenants/{slug}/keys", tag = "keys",
    params(("slug" = String, Path, description = "The tenant"), PageQuery),
    responses((status = 200, description = "A page of keys", body = KeyPage), Problems)
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
    delete, path = "/admin/v1/tenants/{slug}/keys/{id}", tag = "keys",
    params(("slug" = String, Path, description = "The tenant"), ("id" = String, Path, description = "The key")),
    responses((status = 204, description = "Revoked"), Problems)
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
    get, path = "/admin/v1/catalogs", tag = "catalogs",
    responses((status = 200, description = "The catalogs", body = CatalogList), Problems)
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
    params(("slug" = String, Path, description = "The tenant")),
    responses((status = 200, description = "The new key id", body = Rotated), Problems)
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
        })?;
    api.changed(&caller, &record.slug, "state_key.rotate", Some(&kid))
        .await;
    Ok(HttpResponse::Ok().json(Rotated {
        tenant: record.slug.as_str().to_owned(),
        kid,
    }))
}

/// The tenant's audit log, newest first.
#[utoipa::path(
    get, path = "/admin/v1/tenants/{slug}/audit", tag = "audit",
    params(("slug" = String, Path, description = "The tenant"), AuditQuery),
    responses((status = 200, description = "A page of records", body = AuditPage), Problems)
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
    let before_id = cursor_key(query.cursor.as_deref())?
        .map(|c| {
            c.parse::<i64>()
                .map_err(|_| Problem::bad_request("cursor: not a cursor this API gave"))
        })
        .transpose()?;
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
    let events = api.store().audit(record.slug.as_str(), &filter).await?;
    let next_cursor = (events.len() == limit as usize)
        .then(|| events.last().map(|e| cursor_of(&e.id.to_string())))
        .flatten();
    Ok(HttpResponse::Ok().json(AuditPage {
        items: events.into_iter().map(AuditBody::from).collect(),
        next_cursor,
    }))
}
