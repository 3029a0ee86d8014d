//! What the store's rows hold and how they become records: the columns read (a row that
//! does not parse is [`StoreError::Corrupt`], never a panic), a tenant's settings as JSON,
//! digests as hex, and the store's errors made from sqlx's.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{Any, Row};

use super::StoreError;
use crate::api_key::{ApiKeyRecord, Scope};
use crate::model::{AuthMode, Millis, Names, RateLimits, Slug, Status, TenantRecord, TenantSpec};

pub(super) fn db(e: sqlx::Error) -> StoreError {
    StoreError::Database(Box::new(e))
}

pub(super) fn corrupt(what: impl std::fmt::Display) -> StoreError {
    StoreError::Corrupt(what.to_string())
}

/// The error of an insert that named a missing tenant (a race with its deletion, on
/// PostgreSQL) or a taken key; any other error as it is.
pub(super) fn insert_error(e: sqlx::Error, tenant: &str, id: &str) -> StoreError {
    if let sqlx::Error::Database(d) = &e {
        if d.is_foreign_key_violation() {
            return StoreError::NotFound(format!("tenant {tenant:?}"));
        }
        if d.is_unique_violation() {
            return StoreError::Conflict(format!("key {id:?} of tenant {tenant:?}"));
        }
    }
    db(e)
}

/// A column of a row, or [`StoreError::Corrupt`] naming it.
pub(super) fn column<'r, T>(row: &'r AnyRow, name: &str) -> Result<T, StoreError>
where
    T: sqlx::Decode<'r, Any> + sqlx::Type<Any>,
{
    row.try_get(name)
        .map_err(|e| corrupt(format_args!("column {name}: {e}")))
}

pub(super) fn json<T: for<'de> Deserialize<'de>>(what: &str, text: &str) -> Result<T, StoreError> {
    serde_json::from_str(text).map_err(|e| corrupt(format_args!("{what}: {e}")))
}

pub(super) fn to_json<T: Serialize>(value: &T) -> Result<String, StoreError> {
    // Only the model's own types are written, which always serialize.
    serde_json::to_string(value).map_err(|e| StoreError::Database(Box::new(e)))
}

/// A limit as SQL takes it.
pub(super) fn limit(n: u32) -> i64 {
    i64::from(n)
}

/// What a tenant's `settings` column holds: the spec's fields without a column of their own.
#[derive(Serialize, Deserialize)]
pub(super) struct Settings {
    instructions: Option<String>,
    catalogs: Vec<String>,
    disabled: Names,
    state_ttl_secs: Option<u64>,
    legacy_shim: bool,
    /// Absent in a record written before it existed.
    #[serde(default)]
    memory_budget_bytes: Option<u64>,
    rate_limits: RateLimits,
}

impl Settings {
    pub(super) fn of(spec: &TenantSpec) -> Settings {
        Settings {
            instructions: spec.instructions.clone(),
            catalogs: spec.catalogs.clone(),
            disabled: spec.disabled.clone(),
            state_ttl_secs: spec.state_ttl_secs,
            legacy_shim: spec.legacy_shim,
            memory_budget_bytes: spec.memory_budget_bytes,
            rate_limits: spec.rate_limits.clone(),
        }
    }

    fn into_spec(self, name: String, auth: AuthMode) -> TenantSpec {
        TenantSpec {
            name,
            instructions: self.instructions,
            catalogs: self.catalogs,
            disabled: self.disabled,
            state_ttl_secs: self.state_ttl_secs,
            legacy_shim: self.legacy_shim,
            memory_budget_bytes: self.memory_budget_bytes,
            rate_limits: self.rate_limits,
            auth,
        }
    }
}

pub(super) fn slug(text: &str) -> Result<Slug, StoreError> {
    Slug::parse(text).map_err(corrupt)
}

/// A `tenants` row (every column).
pub(super) fn tenant_row(row: &AnyRow) -> Result<TenantRecord, StoreError> {
    let slug = slug(&column::<String>(row, "slug")?)?;
    let status: String = column(row, "status")?;
    let status = Status::parse(&status)
        .ok_or_else(|| corrupt(format_args!("tenant {slug}: status {status:?}")))?;
    let auth: String = column(row, "auth")?;
    let auth = AuthMode::parse(&auth)
        .ok_or_else(|| corrupt(format_args!("tenant {slug}: auth {auth:?}")))?;
    let settings: Settings = json(
        &format!("tenant {slug}: settings"),
        &column::<String>(row, "settings")?,
    )?;
    Ok(TenantRecord {
        spec: settings.into_spec(column(row, "name")?, auth),
        status,
        created_at: Millis(column(row, "created_at")?),
        updated_at: Millis(column(row, "updated_at")?),
        slug,
    })
}

/// An `api_keys` row (every column).
pub(super) fn key_row(row: &AnyRow) -> Result<ApiKeyRecord, StoreError> {
    let id: String = column(row, "id")?;
    let digest: String = column(row, "digest")?;
    let digest =
        from_hex(&digest).ok_or_else(|| corrupt(format_args!("key {id:?}: digest {digest:?}")))?;
    let scopes: BTreeSet<Scope> = json(
        &format!("key {id:?}: scopes"),
        &column::<String>(row, "scopes")?,
    )?;
    let allow: Option<Names> = match column::<Option<String>>(row, "allow")? {
        Some(text) => Some(json(&format!("key {id:?}: allow"), &text)?),
        None => None,
    };
    let mut key = ApiKeyRecord::from_digest(id, digest).with_scopes(scopes);
    key.allow = allow;
    key.expires_at = column::<Option<i64>>(row, "expires_at")?.map(Millis);
    key.created_at = Millis(column(row, "created_at")?);
    key.revoked_at = column::<Option<i64>>(row, "revoked_at")?.map(Millis);
    Ok(key)
}

/// An `audit` row (every column).
pub(super) fn to_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    out
}

pub(super) fn from_hex(text: &str) -> Option<[u8; 32]> {
    let text = text.as_bytes();
    if text.len() != 64 {
        return None;
    }
    let nibble = |c: u8| match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (byte, pair) in out.iter_mut().zip(text.chunks_exact(2)) {
        *byte = (nibble(pair[0])? << 4) | nibble(pair[1])?;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_a_digest() {
        let digest: [u8; 32] = std::array::from_fn(|i| (i * 37) as u8);
        let text = to_hex(&digest);
        assert_eq!(text.len(), 64);
        assert_eq!(from_hex(&text), Some(digest));
    }

    #[test]
    fn settings_stored_before_the_memory_budget_read_as_the_servers_budget() {
        let stored = r#"{"instructions": null, "catalogs": ["examples"], "disabled": {},
            "state_ttl_secs": null, "legacy_shim": true, "rate_limits": {}}"#;
        let settings: Settings = serde_json::from_str(stored).expect("an older record reads");
        let spec = settings.into_spec("T".into(), AuthMode::Anonymous);
        assert_eq!(spec.memory_budget_bytes, None);
    }

    #[test]
    fn malformed_hex_is_no_digest() {
        assert_eq!(from_hex("ab"), None);
        assert_eq!(from_hex(&"G".repeat(64)), None);
        assert_eq!(from_hex(&"AB".repeat(32)), None);
    }
}
