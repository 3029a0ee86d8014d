//! The audit log as the SQL store keeps it: in batches. Every call of a busy server is
//! audited, so a row per event would put a database insert (and its index update) beside
//! every request; instead each append writes one row per tenant, holding that tenant's events
//! of the batch as JSON. An event's id is its batch's id times [`SPAN`] plus its place in the
//! batch, so ids grow with the log and survive a purge that rewrites a batch. Reading decodes
//! the tenant's batches newest first and filters their events.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{Any, AnyPool, Transaction};

use super::rows::{column, corrupt, db, json, slug, to_json};
use super::StoreError;
use crate::audit::{AuditEvent, AuditFilter, AuditKind, AuditOutcome};
use crate::model::Millis;

/// Ids one batch spans: the most events a batch row holds.
pub(super) const SPAN: i64 = 1024;

/// Batches read per query while a page fills.
const BATCHES_PER_READ: i64 = 16;

/// One event as a batch holds it: its tenant is the batch's, its id the batch's and `n`'s.
/// Written, it borrows the event's strings (an audited server writes one per call); read,
/// it owns them.
///
/// Members are written under one-letter names, and a call's kind and a complete outcome
/// not at all: a call event is about half the bytes it was with its full names, and the
/// audit writer's share of a busy server's CPU is mostly those bytes (serialised, then
/// written twice by SQLite). Batches written with the full names still read (`alias`).
#[derive(Serialize, Deserialize)]
struct Stored<'a> {
    n: i64,
    #[serde(rename = "t", alias = "at")]
    at: i64,
    #[serde(rename = "p", alias = "actor")]
    actor: Cow<'a, str>,
    #[serde(
        rename = "k",
        alias = "kind",
        default = "default_kind",
        skip_serializing_if = "is_call"
    )]
    kind: AuditKind,
    #[serde(rename = "a", alias = "action")]
    action: Cow<'a, str>,
    #[serde(
        rename = "g",
        alias = "target",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    target: Option<Cow<'a, str>>,
    #[serde(
        rename = "o",
        alias = "outcome",
        default = "default_outcome",
        skip_serializing_if = "is_complete"
    )]
    outcome: AuditOutcome,
    #[serde(
        rename = "e",
        alias = "error_code",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    error_code: Option<i64>,
    #[serde(
        rename = "r",
        alias = "round",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    round: Option<i64>,
    #[serde(
        rename = "l",
        alias = "latency_us",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    latency_us: Option<i64>,
}

fn default_kind() -> AuditKind {
    AuditKind::Call
}

fn is_call(kind: &AuditKind) -> bool {
    *kind == AuditKind::Call
}

fn default_outcome() -> AuditOutcome {
    AuditOutcome::Complete
}

fn is_complete(outcome: &AuditOutcome) -> bool {
    *outcome == AuditOutcome::Complete
}

/// Writes `events` in `tx`: a batch row per tenant (per [`SPAN`] events of a tenant).
pub(super) async fn append(
    tx: &mut Transaction<'static, Any>,
    events: &[AuditEvent],
) -> Result<(), StoreError> {
    let mut by_tenant: BTreeMap<&str, Vec<&AuditEvent>> = BTreeMap::new();
    for event in events {
        by_tenant
            .entry(event.tenant.as_str())
            .or_default()
            .push(event);
    }
    for (tenant, events) in by_tenant {
        for chunk in events.chunks(SPAN as usize) {
            let stored: Vec<Stored> = chunk
                .iter()
                .zip(0..)
                .map(|(e, n)| Stored {
                    n,
                    at: e.at.0,
                    actor: Cow::Borrowed(&e.actor),
                    kind: e.kind,
                    action: Cow::Borrowed(&e.action),
                    target: e.target.as_deref().map(Cow::Borrowed),
                    outcome: e.outcome,
                    error_code: e.error_code,
                    round: e.round,
                    latency_us: e.latency_us,
                })
                .collect();
            insert(tx, tenant, &stored).await?;
        }
    }
    Ok(())
}

async fn insert(
    tx: &mut Transaction<'static, Any>,
    tenant: &str,
    stored: &[Stored<'_>],
) -> Result<(), StoreError> {
    let (first, last) = span_of(stored);
    sqlx::query(
        "INSERT INTO audit_batches (tenant, first_at, last_at, count, events) \
         VALUES ($1, $2, $3, $4, $5)",
    )
    .bind(tenant)
    .bind(first)
    .bind(last)
    .bind(stored.len() as i64)
    .bind(to_json(&stored)?)
    .execute(&mut **tx)
    .await
    .map_err(db)?;
    Ok(())
}

/// The earliest and latest `at` of a batch's events.
fn span_of(stored: &[Stored<'_>]) -> (i64, i64) {
    let first = stored.iter().map(|e| e.at).min().unwrap_or(0);
    let last = stored.iter().map(|e| e.at).max().unwrap_or(0);
    (first, last)
}

/// `tenant`'s events as `filter` asks, newest first.
pub(super) async fn read(
    pool: &AnyPool,
    tenant: &str,
    filter: &AuditFilter,
) -> Result<Vec<AuditEvent>, StoreError> {
    let tenant_slug = slug(tenant)?;
    let since = filter.since.map_or(i64::MIN, |m| m.0);
    let before = filter.before_id.unwrap_or(i64::MAX);
    let limit = filter.limit as usize;
    let mut found = Vec::new();
    let mut next_batch = before / SPAN;
    while found.len() < limit {
        let rows = sqlx::query(
            "SELECT id, events FROM audit_batches \
             WHERE tenant = $1 AND id <= $2 AND last_at >= $3 ORDER BY id DESC LIMIT $4",
        )
        .bind(tenant)
        .bind(next_batch)
        .bind(since)
        .bind(BATCHES_PER_READ)
        .fetch_all(pool)
        .await
        .map_err(db)?;
        for row in &rows {
            let (batch, stored) = batch_of(row)?;
            for event in stored.into_iter().rev() {
                let id = batch * SPAN + event.n;
                let wanted = id < before
                    && event.at >= since
                    && filter
                        .target
                        .as_ref()
                        .is_none_or(|t| event.target.as_deref() == Some(t.as_str()))
                    && filter.outcome.is_none_or(|o| event.outcome == o);
                if wanted && found.len() < limit {
                    found.push(event_of(id, &tenant_slug, event));
                }
            }
            next_batch = batch - 1;
        }
        if rows.len() < BATCHES_PER_READ as usize {
            break;
        }
    }
    Ok(found)
}

fn batch_of(row: &AnyRow) -> Result<(i64, Vec<Stored<'static>>), StoreError> {
    let batch: i64 = column(row, "id")?;
    let text: String = column(row, "events")?;
    let mut stored: Vec<Stored> = json(&format!("audit batch {batch}"), &text)?;
    if stored.iter().any(|e| !(0..SPAN).contains(&e.n)) {
        return Err(corrupt(format_args!(
            "audit batch {batch}: an event out of place"
        )));
    }
    stored.sort_by_key(|e| e.n);
    Ok((batch, stored))
}

fn event_of(id: i64, tenant: &crate::model::Slug, e: Stored<'_>) -> AuditEvent {
    AuditEvent {
        id,
        tenant: tenant.clone(),
        at: Millis(e.at),
        actor: e.actor.into_owned(),
        kind: e.kind,
        action: e.action.into_owned(),
        target: e.target.map(Cow::into_owned),
        outcome: e.outcome,
        error_code: e.error_code,
        round: e.round,
        latency_us: e.latency_us,
    }
}

/// Deletes the events older than `before`, in `tx`: whole batches, and the old events of a
/// batch that also holds newer ones (rewritten, their ids kept). How many went.
pub(super) async fn purge(
    tx: &mut Transaction<'static, Any>,
    before: Millis,
) -> Result<u64, StoreError> {
    let old: i64 = sqlx::query(
        "SELECT CAST(COALESCE(SUM(count), 0) AS BIGINT) AS old FROM audit_batches \
         WHERE last_at < $1",
    )
    .bind(before.0)
    .fetch_one(&mut **tx)
    .await
    .map_err(db)
    .and_then(|row| column(&row, "old"))?;
    sqlx::query("DELETE FROM audit_batches WHERE last_at < $1")
        .bind(before.0)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    let straddling =
        sqlx::query("SELECT id, events FROM audit_batches WHERE first_at < $1 AND last_at >= $1")
            .bind(before.0)
            .fetch_all(&mut **tx)
            .await
            .map_err(db)?;
    let mut purged = u64::try_from(old).unwrap_or(0);
    for row in &straddling {
        let (batch, mut stored) = batch_of(row)?;
        let was = stored.len();
        stored.retain(|e| e.at >= before.0);
        purged += (was - stored.len()) as u64;
        let (first, last) = span_of(&stored);
        sqlx::query(
            "UPDATE audit_batches SET first_at = $1, last_at = $2, count = $3, events = $4 \
             WHERE id = $5",
        )
        .bind(first)
        .bind(last)
        .bind(stored.len() as i64)
        .bind(to_json(&stored)?)
        .bind(batch)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    }
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call_event() -> Stored<'static> {
        Stored {
            n: 3,
            at: 1_733_376_000_000,
            actor: Cow::Borrowed("key_1"),
            kind: AuditKind::Call,
            action: Cow::Borrowed("tools/call"),
            target: Some(Cow::Borrowed("echo")),
            outcome: AuditOutcome::Complete,
            error_code: None,
            round: Some(0),
            latency_us: Some(12),
        }
    }

    #[test]
    fn a_complete_call_is_stored_under_short_names_without_its_kind_and_outcome() {
        let written = serde_json::to_string(&call_event()).expect("serialisable");
        assert_eq!(
            written,
            r#"{"n":3,"t":1733376000000,"p":"key_1","a":"tools/call","g":"echo","r":0,"l":12}"#
        );
    }

    #[test]
    fn an_admin_action_that_failed_keeps_its_kind_and_outcome() {
        let event = Stored {
            kind: AuditKind::Admin,
            outcome: AuditOutcome::Error,
            error_code: Some(409),
            ..call_event()
        };
        let read: Stored =
            serde_json::from_str(&serde_json::to_string(&event).expect("serialisable"))
                .expect("readable");
        assert_eq!(read.kind, AuditKind::Admin);
        assert_eq!(read.outcome, AuditOutcome::Error);
        assert_eq!(read.error_code, Some(409));
    }

    #[test]
    fn a_batch_written_with_the_full_names_still_reads() {
        let old = r#"[{"n":3,"at":1733376000000,"actor":"key_1","kind":"call","action":"tools/call","target":"echo","outcome":"input_required","round":1,"latency_us":12}]"#;
        let read: Vec<Stored> = serde_json::from_str(old).expect("readable");
        let [event] = read.as_slice() else {
            panic!("one event")
        };
        assert_eq!((event.n, event.at), (3, 1_733_376_000_000));
        assert_eq!(
            (event.actor.as_ref(), event.action.as_ref()),
            ("key_1", "tools/call")
        );
        assert_eq!(event.target.as_deref(), Some("echo"));
        assert_eq!(event.kind, AuditKind::Call);
        assert_eq!(event.outcome, AuditOutcome::InputRequired);
        assert_eq!((event.round, event.latency_us), (Some(1), Some(12)));
    }
}
