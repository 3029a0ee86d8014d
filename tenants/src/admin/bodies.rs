//! What the admin API reads and writes: request bodies (unknown fields refused) and responses,
//! with the conversions from and to the model. Times are RFC 3339 strings on the wire.

use std::collections::BTreeSet;

use serde::{Deserialize, Deserializer, Serialize};
use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;
use utoipa::{IntoParams, ToSchema};

use super::problem::Problem;
use super::schema::CatalogName;
use crate::api_key::{ApiKeyRecord, Scope};
use crate::audit::{AuditEvent, AuditKind, AuditOutcome};
use crate::catalogs::CatalogContents;
use crate::model::{AuthMode, Millis, Names, RateLimits, Status, TenantRecord, TenantSpec};
use crate::wire::{object_only, whole_opt};

/// `Millis` as RFC 3339 (UTC).
pub fn rfc3339(at: Millis) -> String {
    OffsetDateTime::from_unix_timestamp_nanos(i128::from(at.0) * 1_000_000)
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_default()
}

/// An RFC 3339 time, as `Millis`; `field` names it in the error.
pub fn parse_rfc3339(field: &str, s: &str) -> Result<Millis, Problem> {
    let t = OffsetDateTime::parse(s, &Rfc3339).map_err(|_| {
        Problem::bad_request(format!(
            "{field}: an RFC 3339 time, e.g. 2027-01-31T12:00:00Z"
        ))
    })?;
    i64::try_from(t.unix_timestamp_nanos() / 1_000_000)
        .map(Millis)
        .map_err(|_| Problem::bad_request(format!("{field}: out of range")))
}

/// A field that may be absent (unchanged) or `null` (cleared).
fn nullable<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// A whole number field that may be absent (unchanged) or `null` (cleared).
fn nullable_whole<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<Option<u64>>, D::Error> {
    whole_opt(deserializer).map(Some)
}

object_only!(CreateTenant, PatchTenant, CreateKey);

/// `POST /admin/v1/tenants`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CreateTenant {
    /// Where it is served, `/t/{slug}/mcp`: `^[a-z0-9][a-z0-9-]{1,62}$`.
    #[schema(
        pattern = "^[a-z0-9][a-z0-9-]{1,62}$",
        min_length = 2,
        max_length = 63,
        example = "acme"
    )]
    pub slug: String,
    /// A name for people; also the MCP server's title. 1 to 200 characters, not blank, no control characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1F\\x7F-\\x9F]*[^\\x00-\\x20\\x7F-\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00-\\x1F\\x7F-\\x9F]*$",
        example = "Acme Corp"
    )]
    pub name: String,
    /// The compiled-in catalogs it serves (`GET /admin/v1/catalogs`), 1 to 16.
    #[schema(value_type = Vec<CatalogName>, min_items = 1, max_items = 16, example = json!(["examples"]))]
    pub catalogs: Vec<String>,
    /// How MCP callers authenticate.
    pub auth: AuthMode,
    /// What clients are told about the server, at most 16384 characters.
    #[serde(default)]
    #[schema(max_length = 16384)]
    pub instructions: Option<String>,
    /// Tools, prompts and resources of its catalogs it does not serve.
    #[serde(default)]
    pub disabled: Option<Names>,
    /// Lifetime of a sealed requestState, seconds; absent: the server's default.
    #[serde(default, deserialize_with = "whole_opt")]
    #[schema(minimum = 1, maximum = 86400)]
    pub state_ttl_secs: Option<u64>,
    /// Whether legacy sessions get the shim (default true).
    #[serde(default)]
    pub legacy_shim: Option<bool>,
    /// What its callers may keep together past their requests, bytes; absent: the server's
    /// per-tenant budget.
    #[serde(default, deserialize_with = "whole_opt")]
    #[schema(minimum = 1, maximum = 1125899906842624_u64)]
    pub memory_budget_bytes: Option<u64>,
    /// Rate limits (default none).
    #[serde(default)]
    pub rate_limits: Option<RateLimits>,
}

impl CreateTenant {
    /// The spec it asks for.
    pub fn spec(&self) -> TenantSpec {
        let mut spec = TenantSpec::new(self.name.clone(), self.catalogs.clone(), self.auth);
        spec.instructions = self.instructions.clone();
        spec.disabled = self.disabled.clone().unwrap_or_default();
        spec.state_ttl_secs = self.state_ttl_secs;
        spec.legacy_shim = self.legacy_shim.unwrap_or(true);
        spec.memory_budget_bytes = self.memory_budget_bytes;
        spec.rate_limits = self.rate_limits.clone().unwrap_or_default();
        spec
    }
}

/// `PATCH /admin/v1/tenants/{slug}`: what is present changes, `null` clears a nullable field.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct PatchTenant {
    /// A name for people: 1 to 200 characters, not blank, no control characters.
    #[schema(
        min_length = 1,
        max_length = 200,
        pattern = "^[^\\x00-\\x1F\\x7F-\\x9F]*[^\\x00-\\x20\\x7F-\\xA0\\u1680\\u2000-\\u200A\\u2028\\u2029\\u202F\\u205F\\u3000][^\\x00-\\x1F\\x7F-\\x9F]*$"
    )]
    pub name: Option<String>,
    /// What clients are told, at most 16384 characters; `null` clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(nullable, value_type = Option<String>, max_length = 16384)]
    pub instructions: Option<Option<String>>,
    /// The catalogs it serves, 1 to 16 (operator only).
    #[schema(value_type = Option<Vec<CatalogName>>, min_items = 1, max_items = 16)]
    pub catalogs: Option<Vec<String>>,
    /// What it does not serve, replacing the current list.
    pub disabled: Option<Names>,
    /// Lifetime of a sealed requestState, seconds; `null`: the server's default.
    #[serde(default, deserialize_with = "nullable_whole")]
    #[schema(nullable, value_type = Option<u64>, minimum = 1, maximum = 86400)]
    pub state_ttl_secs: Option<Option<u64>>,
    /// Whether legacy sessions get the shim.
    pub legacy_shim: Option<bool>,
    /// What its callers may keep together, bytes; `null`: the server's per-tenant budget
    /// (operator only).
    #[serde(default, deserialize_with = "nullable_whole")]
    #[schema(nullable, value_type = Option<u64>, minimum = 1, maximum = 1125899906842624_u64)]
    pub memory_budget_bytes: Option<Option<u64>>,
    /// Rate limits, replacing the current ones (operator only).
    pub rate_limits: Option<RateLimits>,
    /// How MCP callers authenticate.
    pub auth: Option<AuthMode>,
}

impl PatchTenant {
    /// Fields only the operator may change, if the patch has any.
    pub fn operator_field(&self) -> Option<&'static str> {
        if self.catalogs.is_some() {
            Some("change catalogs")
        } else if self.rate_limits.is_some() {
            Some("change rate limits")
        } else if self.memory_budget_bytes.is_some() {
            Some("change the memory budget")
        } else {
            None
        }
    }

    /// `spec` with the patch applied.
    pub fn apply(self, mut spec: TenantSpec) -> TenantSpec {
        if let Some(name) = self.name {
            spec.name = name;
        }
        if let Some(instructions) = self.instructions {
            spec.instructions = instructions;
        }
        if let Some(catalogs) = self.catalogs {
            spec.catalogs = catalogs;
        }
        if let Some(disabled) = self.disabled {
            spec.disabled = disabled;
        }
        if let Some(ttl) = self.state_ttl_secs {
            spec.state_ttl_secs = ttl;
        }
        if let Some(shim) = self.legacy_shim {
            spec.legacy_shim = shim;
        }
        if let Some(bytes) = self.memory_budget_bytes {
            spec.memory_budget_bytes = bytes;
        }
        if let Some(limits) = self.rate_limits {
            spec.rate_limits = limits;
        }
        if let Some(auth) = self.auth {
            spec.auth = auth;
        }
        spec
    }
}

/// A tenant.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantBody {
    /// Where it is served.
    pub slug: String,
    /// Its MCP endpoint's path.
    #[schema(example = "/t/acme/mcp")]
    pub endpoint: String,
    /// A name for people.
    pub name: String,
    /// What clients are told.
    pub instructions: Option<String>,
    /// The catalogs it serves.
    pub catalogs: Vec<String>,
    /// What it does not serve of them.
    pub disabled: Names,
    /// requestState lifetime, seconds (`null`: the server's default).
    pub state_ttl_secs: Option<u64>,
    /// Whether legacy sessions get the shim.
    pub legacy_shim: bool,
    /// What its callers may keep together, bytes (`null`: the server's per-tenant budget).
    pub memory_budget_bytes: Option<u64>,
    /// Its rate limits.
    pub rate_limits: RateLimits,
    /// How MCP callers authenticate.
    pub auth: AuthMode,
    /// Whether it serves.
    pub status: Status,
    /// When it was created.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it last changed.
    #[schema(format = DateTime)]
    pub updated_at: String,
}

impl From<&TenantRecord> for TenantBody {
    fn from(record: &TenantRecord) -> TenantBody {
        let spec = &record.spec;
        TenantBody {
            slug: record.slug.as_str().to_owned(),
            endpoint: format!("/t/{}/mcp", record.slug),
            name: spec.name.clone(),
            instructions: spec.instructions.clone(),
            catalogs: spec.catalogs.clone(),
            disabled: spec.disabled.clone(),
            state_ttl_secs: spec.state_ttl_secs,
            legacy_shim: spec.legacy_shim,
            memory_budget_bytes: spec.memory_budget_bytes,
            rate_limits: spec.rate_limits.clone(),
            auth: spec.auth,
            status: record.status,
            created_at: rfc3339(record.created_at),
            updated_at: rfc3339(record.updated_at),
        }
    }
}

/// A page of tenants.
#[derive(Debug, Serialize, ToSchema)]
pub struct TenantPage {
    /// This page's tenants, in slug order.
    pub items: Vec<TenantBody>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// `POST /admin/v1/tenants/{slug}/keys`.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct CreateKey {
    /// What the key may be used for: `mcp` (the MCP endpoint), `tenant-admin` (this API,
    /// for its tenant).
    #[schema(value_type = Vec<Scope>, min_items = 1, example = json!(["mcp"]))]
    pub scopes: BTreeSet<Scope>,
    /// The only tools, prompts and resources it may see and use; absent: everything.
    #[serde(default)]
    pub allow: Option<Names>,
    /// When it stops working (RFC 3339, in the future); absent: never.
    #[serde(default)]
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
}

/// A key's metadata: never its secret.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyBody {
    /// Its id; its MCP principal is `key:{id}`.
    pub id: String,
    /// Its tenant.
    pub tenant: String,
    /// What it may be used for.
    pub scopes: BTreeSet<Scope>,
    /// What it may see; `null`: everything.
    pub allow: Option<Names>,
    /// When it stops working.
    #[schema(format = DateTime)]
    pub expires_at: Option<String>,
    /// When it was made.
    #[schema(format = DateTime)]
    pub created_at: String,
    /// When it was revoked.
    #[schema(format = DateTime)]
    pub revoked_at: Option<String>,
    /// `active`, `expired` or `revoked`.
    #[schema(example = "active")]
    pub state: String,
}

impl KeyBody {
    /// The key of `tenant` as the API shows it at `now`.
    pub fn of(tenant: &str, key: &ApiKeyRecord, now: Millis) -> KeyBody {
        let state = if key.revoked_at.is_some() {
            "revoked"
        } else if key.is_live(|| now) {
            "active"
        } else {
            "expired"
        };
        KeyBody {
            id: key.id.clone(),
            tenant: tenant.to_owned(),
            scopes: key.scopes.clone(),
            allow: key.allow.clone(),
            expires_at: key.expires_at.map(rfc3339),
            created_at: rfc3339(key.created_at),
            revoked_at: key.revoked_at.map(rfc3339),
            state: state.into(),
        }
    }
}

/// A new key, with its secret: shown this once.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyCreated {
    /// The key's metadata.
    #[serde(flatten)]
    pub key: KeyBody,
    /// The bearer token. Only its hash is kept: it cannot be shown again.
    pub secret: String,
}

/// A page of keys.
#[derive(Debug, Serialize, ToSchema)]
pub struct KeyPage {
    /// This page's keys, in id order, revoked ones included.
    pub items: Vec<KeyBody>,
    /// Pass as `cursor` for the next page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// One audit record.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditBody {
    /// Its place in the log; newer records have larger ids.
    pub id: i64,
    /// When it happened.
    #[schema(format = DateTime)]
    pub at: String,
    /// Who: `key:{id}`, `anonymous` or `operator`.
    pub actor: String,
    /// A call on the MCP endpoint, or an admin action.
    pub kind: AuditKind,
    /// The MCP method, or the admin action (`tenant.update`, `key.create`, ...).
    pub action: String,
    /// The tool, prompt or resource, or the admin action's object.
    pub target: Option<String>,
    /// How it ended.
    pub outcome: AuditOutcome,
    /// The JSON-RPC error code of a failed call.
    pub error_code: Option<i64>,
    /// The call's round: 0 for a first call, n after n input-required results.
    pub round: Option<i64>,
    /// How long the call took, microseconds.
    pub latency_us: Option<i64>,
}

impl From<AuditEvent> for AuditBody {
    fn from(e: AuditEvent) -> AuditBody {
        AuditBody {
            id: e.id,
            at: rfc3339(e.at),
            actor: e.actor,
            kind: e.kind,
            action: e.action,
            target: e.target,
            outcome: e.outcome,
            error_code: e.error_code,
            round: e.round,
            latency_us: e.latency_us,
        }
    }
}

/// A page of audit records.
#[derive(Debug, Serialize, ToSchema)]
pub struct AuditPage {
    /// This page's records, newest first.
    pub items: Vec<AuditBody>,
    /// Pass as `cursor` for the next (older) page; `null` on the last.
    pub next_cursor: Option<String>,
}

/// A compiled-in catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogBody {
    /// Its name, as a tenant's `catalogs` lists it.
    pub name: String,
    /// Its tools.
    pub tools: Vec<String>,
    /// Its prompts.
    pub prompts: Vec<String>,
    /// Its resources' URIs and resource templates.
    pub resources: Vec<String>,
}

impl From<CatalogContents> for CatalogBody {
    fn from(c: CatalogContents) -> CatalogBody {
        CatalogBody {
            name: c.name,
            tools: c.tools,
            prompts: c.prompts,
            resources: c.resources,
        }
    }
}

/// Every compiled-in catalog.
#[derive(Debug, Serialize, ToSchema)]
pub struct CatalogList {
    /// The catalogs.
    pub items: Vec<CatalogBody>,
}

/// The state key a rotation made active.
#[derive(Debug, Serialize, ToSchema)]
pub struct Rotated {
    /// The tenant.
    pub tenant: String,
    /// The new active key's id; the previous key keeps opening states until they expire.
    pub kid: String,
}

/// The tenant a path names.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct TenantPath {
    /// The tenant's slug.
    #[param(pattern = "^[a-z0-9][a-z0-9-]{1,62}$")]
    pub slug: String,
}

/// Paging of a list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PageQuery {
    /// Items per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = "^([0-9a-f]{2})+$")]
    pub cursor: Option<String>,
}

/// Filters of the audit log.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct AuditQuery {
    /// Only records at or after this time (RFC 3339).
    #[param(format = DateTime)]
    pub since: Option<String>,
    /// Only records about this tool, prompt, resource or key.
    pub target: Option<String>,
    /// Only records with this outcome.
    pub outcome: Option<AuditOutcome>,
    /// Records per page, 1 to 500 (default 50).
    #[param(minimum = 1, maximum = 500)]
    pub limit: Option<u32>,
    /// The `next_cursor` of the previous page.
    #[param(pattern = "^[0-9a-f]{16}$")]
    pub cursor: Option<String>,
}

/// The page size a query asks for.
pub fn page_size(limit: Option<u32>) -> Result<u32, Problem> {
    match limit.unwrap_or(50) {
        n @ 1..=500 => Ok(n),
        _ => Err(Problem::bad_request("limit: 1 to 500")),
    }
}
