//! The audit log as the SQL store keeps it: in batches. Every call of a busy server is
//! audited, so a row per event would put a database insert (and its index update) beside
//! every request; instead each append writes one row per tenant, holding that tenant's events
//! of the batch as JSON. An event's id is its batch's id times [`SPAN`] plus its place in the
//! batch, so ids grow with the log and survive a purge that rewrites a batch. Reading decodes
//! the tenant's batches newest first and filters their events.
//!
//! A batch is written as a [`Sequence`]: each event leaves out what it shares with the one
//! before it (see there). Batches written before it, as a plain array of [`Stored`] events,
//! still read.

use std::borrow::Cow;
use std::collections::BTreeMap;

use roundtrip_runtime::tenancy::CallRecord;
use serde::{Deserialize, Serialize};
use sqlx::any::AnyRow;
use sqlx::{Any, AnyPool, Transaction};

use super::rows::{column, corrupt, db, json, slug, to_json};
use super::StoreError;
use crate::audit::{AuditEvent, AuditFilter, AuditKind, AuditOutcome};
use crate::model::{Millis, Slug};

/// Ids one batch spans: the most events a batch row holds.
pub(super) const SPAN: i64 = 1024;

/// Batches read per query while a page fills.
const BATCHES_PER_READ: i64 = 16;

/// One event as a batch holds it: its tenant is the batch's, its id the batch's and `n`'s.
/// Written, it borrows the event's strings (an audited server writes one per call); read,
/// it owns them. A batch is written as a [`Sequence`] made from these (each event without
/// what the one before it says); batches written earlier, as an array of them, still read.
///
/// In such an array, members are under one-letter names, and a call's kind and a complete
/// outcome are left out; batches written earlier still, with the full names, read too
/// (`alias`).
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

/// A batch's events as they are written: `{"v":2,"e":[...]}`, each event an [`Elided`] one.
/// A busy tenant's batch is mostly one caller calling one tool, so an event written in full
/// repeats the one before it in all but its time and latency; left out, a call event is
/// about a quarter of its bytes, and the writer serialises, and SQLite writes twice, that
/// much less.
#[derive(Serialize, Deserialize)]
struct Sequence<'a> {
    v: u8,
    e: Vec<Elided<'a>>,
}

/// The version a [`Sequence`] says it is.
const SEQUENCE: u8 = 2;

/// An event of a [`Sequence`]: what the event before it (in the sequence) does not already say.
/// - `n`, its place in the batch, only when it is not its place in the sequence (after a purge);
/// - `t`, its time, as the difference from the time of the event before it (of 0 for the
///   first);
/// - `p`, `a` and `g` (actor, action, target) only when they differ from the event before's:
///   an absent member is the previous event's, and `"g":null` is no target;
/// - the other members as [`Stored`] writes them.
#[derive(Serialize, Deserialize)]
struct Elided<'a> {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    n: Option<i64>,
    #[serde(rename = "t")]
    since_previous: i64,
    #[serde(rename = "p", default, skip_serializing_if = "Option::is_none")]
    actor: Option<Cow<'a, str>>,
    #[serde(rename = "a", default, skip_serializing_if = "Option::is_none")]
    action: Option<Cow<'a, str>>,
    #[serde(
        rename = "g",
        default,
        deserialize_with = "present",
        skip_serializing_if = "Option::is_none"
    )]
    target: Option<Option<Cow<'a, str>>>,
    #[serde(
        rename = "k",
        default = "default_kind",
        skip_serializing_if = "is_call"
    )]
    kind: AuditKind,
    #[serde(
        rename = "o",
        default = "default_outcome",
        skip_serializing_if = "is_complete"
    )]
    outcome: AuditOutcome,
    #[serde(rename = "e", default, skip_serializing_if = "Option::is_none")]
    error_code: Option<i64>,
    #[serde(rename = "r", default, skip_serializing_if = "Option::is_none")]
    round: Option<i64>,
    #[serde(rename = "l", default, skip_serializing_if = "Option::is_none")]
    latency_us: Option<i64>,
}

/// A member that is present, even as `null`: `Some(None)`. Absent, `#[serde(default)]`
/// makes it `None`.
fn present<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(deserializer).map(Some)
}

impl<'a> Sequence<'a> {
    /// `stored`, in its order, each event without what the one before it says.
    fn of(stored: &'a [Stored<'a>]) -> Self {
        let mut previous: Option<&Stored<'a>> = None;
        let e = stored
            .iter()
            .zip(0..)
            .map(|(event, place)| {
                let differs = |same: fn(&Stored<'a>, &Stored<'a>) -> bool| {
                    previous.is_none_or(|p| !same(p, event))
                };
                let elided = Elided {
                    n: (event.n != place).then_some(event.n),
                    // Wrapping, as the reader adds it back: exact for any two times.
                    since_previous: event.at.wrapping_sub(previous.map_or(0, |p| p.at)),
                    actor: differs(|p, e| p.actor == e.actor)
                        .then(|| Cow::Borrowed(event.actor.as_ref())),
                    action: differs(|p, e| p.action == e.action)
                        .then(|| Cow::Borrowed(event.action.as_ref())),
                    target: differs(|p, e| p.target == e.target)
                        .then(|| event.target.as_deref().map(Cow::Borrowed)),
                    kind: event.kind,
                    outcome: event.outcome,
                    error_code: event.error_code,
                    round: event.round,
                    latency_us: event.latency_us,
                };
                previous = Some(event);
                elided
            })
            .collect();
        Sequence { v: SEQUENCE, e }
    }

    /// The events in full, in the sequence's order; an error names what is missing or wrong.
    fn into_stored(self) -> Result<Vec<Stored<'static>>, String> {
        if self.v != SEQUENCE {
            return Err(format!("version {} of the batch format is unknown", self.v));
        }
        let mut out: Vec<Stored<'static>> = Vec::with_capacity(self.e.len());
        for (event, place) in self.e.into_iter().zip(0..) {
            let previous = out.last();
            let inherit = |what: &str| format!("event {place} has no {what} and none before it");
            let actor = own_or_previous(event.actor.map(owned), previous.map(|p| &p.actor))
                .ok_or_else(|| inherit("actor"))?;
            let action = own_or_previous(event.action.map(owned), previous.map(|p| &p.action))
                .ok_or_else(|| inherit("action"))?;
            let target = own_or_previous(
                event.target.map(|t| t.map(owned)),
                previous.map(|p| &p.target),
            )
            .ok_or_else(|| inherit("target"))?;
            let at = previous
                .map_or(0, |p| p.at)
                .wrapping_add(event.since_previous);
            out.push(Stored {
                n: event.n.unwrap_or(place),
                at,
                actor,
                kind: event.kind,
                action,
                target,
                outcome: event.outcome,
                error_code: event.error_code,
                round: event.round,
                latency_us: event.latency_us,
            });
        }
        Ok(out)
    }
}

/// An elided member: the event's own value when it has one, else the previous event's
/// (`None` when there is no previous event either).
fn own_or_previous<T: Clone>(own: Option<T>, previous: Option<&T>) -> Option<T> {
    own.or_else(|| previous.cloned())
}

fn owned(text: Cow<'_, str>) -> Cow<'static, str> {
    Cow::Owned(text.into_owned())
}

/// Writes `events` in `tx`: a batch row per tenant (per [`SPAN`] events of a tenant).
pub(super) async fn append_events(
    tx: &mut Transaction<'static, Any>,
    events: &[AuditEvent],
) -> Result<(), StoreError> {
    append(tx, events).await
}

/// Writes calls' `records` in `tx` as [`append_events`] writes their events, borrowing their
/// strings: the audit writer hands them over as the runtime queued them.
pub(super) async fn append_calls(
    tx: &mut Transaction<'static, Any>,
    records: &[CallRecord],
) -> Result<(), StoreError> {
    if let Some(record) = records.iter().find(|r| !Slug::is_slug(&r.tenant)) {
        return Err(StoreError::Invalid(format!(
            "an audit record of tenant {:?}, which is no slug",
            record.tenant
        )));
    }
    append(tx, records).await
}

/// What a batch's events are written from.
trait Entry {
    /// The slug of the tenant it concerns.
    fn tenant(&self) -> &str;
    /// It as the batch holds it, `n`th in the batch.
    fn stored(&self, n: i64) -> Stored<'_>;
}

impl Entry for AuditEvent {
    fn tenant(&self) -> &str {
        self.tenant.as_str()
    }

    fn stored(&self, n: i64) -> Stored<'_> {
        Stored {
            n,
            at: self.at.0,
            actor: Cow::Borrowed(&self.actor),
            kind: self.kind,
            action: Cow::Borrowed(&self.action),
            target: self.target.as_deref().map(Cow::Borrowed),
            outcome: self.outcome,
            error_code: self.error_code,
            round: self.round,
            latency_us: self.latency_us,
        }
    }
}

impl Entry for CallRecord {
    fn tenant(&self) -> &str {
        &self.tenant
    }

    fn stored(&self, n: i64) -> Stored<'_> {
        let (outcome, error_code) = AuditOutcome::of_call(self.outcome);
        Stored {
            n,
            at: Millis::of(self.at).0,
            actor: Cow::Borrowed(&self.principal),
            kind: AuditKind::Call,
            action: Cow::Borrowed(self.method),
            target: self.target.as_deref().map(Cow::Borrowed),
            outcome,
            error_code,
            round: Some(i64::from(self.round)),
            latency_us: Some(i64::try_from(self.latency.as_micros()).unwrap_or(i64::MAX)),
        }
    }
}

async fn append<E: Entry>(
    tx: &mut Transaction<'static, Any>,
    entries: &[E],
) -> Result<(), StoreError> {
    let mut by_tenant: BTreeMap<&str, Vec<&E>> = BTreeMap::new();
    for entry in entries {
        by_tenant.entry(entry.tenant()).or_default().push(entry);
    }
    for (tenant, entries) in by_tenant {
        for chunk in entries.chunks(SPAN as usize) {
            let stored: Vec<Stored> = chunk.iter().zip(0..).map(|(e, n)| e.stored(n)).collect();
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
    .bind(to_json(&Sequence::of(stored))?)
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
    let what = format!("audit batch {batch}");
    // A sequence is an object; a batch written before sequences, an array.
    let mut stored: Vec<Stored> = if text.trim_start().starts_with('{') {
        json::<Sequence>(&what, &text)?
            .into_stored()
            .map_err(|e| corrupt(format_args!("{what}: {e}")))?
    } else {
        json(&what, &text)?
    };
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
        .bind(to_json(&Sequence::of(&stored))?)
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
    fn a_batch_leaves_out_what_each_event_shares_with_the_one_before() {
        let first = Stored {
            n: 0,
            ..call_event()
        };
        let second = Stored {
            n: 1,
            at: first.at + 3,
            latency_us: Some(9),
            ..call_event()
        };
        let batch = [first, second];
        let written = serde_json::to_string(&Sequence::of(&batch)).expect("serialisable");
        assert_eq!(
            written,
            r#"{"v":2,"e":[{"t":1733376000000,"p":"key_1","a":"tools/call","g":"echo","r":0,"l":12},{"t":3,"r":0,"l":9}]}"#
        );
    }

    #[test]
    fn a_sequence_reads_back_as_the_events_it_was_written_from() {
        let batch = [
            Stored {
                n: 2,
                ..call_event()
            },
            Stored {
                n: 5,
                at: 1_733_376_000_500,
                target: None,
                ..call_event()
            },
            Stored {
                n: 6,
                at: 1_733_375_999_000,
                actor: Cow::Borrowed("operator"),
                kind: AuditKind::Admin,
                action: Cow::Borrowed("tenant.create"),
                outcome: AuditOutcome::Error,
                error_code: Some(409),
                round: None,
                latency_us: None,
                ..call_event()
            },
        ];
        let written = serde_json::to_string(&Sequence::of(&batch)).expect("serialisable");
        let read = serde_json::from_str::<Sequence>(&written)
            .expect("readable")
            .into_stored()
            .expect("whole");
        let shown = |events: &[Stored]| serde_json::to_string(events).expect("serialisable");
        assert_eq!(shown(&read), shown(&batch));
    }

    #[test]
    fn a_sequence_whose_first_event_names_no_actor_is_refused() {
        let written = r#"{"v":2,"e":[{"t":5,"a":"tools/call","g":"echo"}]}"#;
        let read = serde_json::from_str::<Sequence>(written).expect("readable");
        let Err(refused) = read.into_stored() else {
            panic!("read without an actor")
        };
        assert!(refused.contains("actor"), "{refused}");
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
