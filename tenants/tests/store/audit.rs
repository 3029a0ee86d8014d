//! The audit log: appended in batches, read newest first through a filter and a cursor,
//! purged by age.

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use roundtrip_runtime::tenancy::{CallOutcome, CallRecord};
use roundtrip_tenants::audit::{AuditEvent, AuditFilter, AuditKind, AuditOutcome};
use roundtrip_tenants::{Millis, Slug, Store, StoreError};

use crate::harness::{event, Db};

use AuditOutcome::{Complete, Error, InputRequired};

/// The filter with nothing but a limit.
fn all(limit: u32) -> AuditFilter {
    AuditFilter {
        limit,
        ..AuditFilter::default()
    }
}

/// The `at` of each event `filter` reads of tenant `acme`, in the order read.
async fn ats(store: &dyn Store, filter: &AuditFilter) -> Vec<i64> {
    store
        .audit("acme", filter)
        .await
        .expect("the audit events")
        .into_iter()
        .map(|e| e.at.0)
        .collect()
}

/// Five events of `acme`, at 10, 20, … 50, in that order.
async fn five_events(store: &dyn Store) {
    store
        .append_audit(&[
            event("acme", 10, "echo", Complete),
            event("acme", 20, "add", InputRequired),
            event("acme", 30, "echo", Error),
            event("acme", 40, "add", Complete),
            event("acme", 50, "echo", InputRequired),
        ])
        .await
        .expect("the events are appended");
}

on_both_backends!(
    appended_events_read_back_newest_first_with_every_field,
    later_batches_get_larger_ids,
    appending_no_events_appends_nothing,
    audit_reads_only_the_tenants_events,
    the_since_filter_keeps_the_events_at_or_after_the_moment,
    the_target_filter_keeps_the_events_about_the_target,
    the_outcome_filter_keeps_the_events_with_the_outcome,
    the_filters_combine,
    the_limit_caps_a_page,
    the_before_id_cursor_pages_through_the_log,
    the_cursor_combines_with_the_filters,
    purging_deletes_the_events_before_the_moment_and_counts_them,
    a_purge_keeps_the_ids_of_the_events_it_keeps,
    appended_events_are_stored_as_a_sequence,
    a_purge_rewrites_what_it_keeps_as_a_sequence,
    calls_records_read_back_as_the_call_events_they_are,
    a_batch_of_calls_with_a_tenant_that_is_no_slug_is_refused_whole,
);

/// Whether every batch row of the store holds a sequence: one whose version is changed no
/// longer reads.
async fn stored_as_sequences(db: &Db) -> bool {
    db.execute(r#"UPDATE audit_batches SET events = replace(events, '{"v":2,', '{"v":9,')"#)
        .await;
    matches!(
        db.store().audit("acme", &all(10)).await,
        Err(roundtrip_tenants::StoreError::Corrupt(_))
    )
}

async fn appended_events_read_back_newest_first_with_every_field(db: &Db) {
    let store = db.store();
    let call = event("acme", 10, "echo", Error);
    let admin = AuditEvent {
        id: 0,
        tenant: call.tenant.clone(),
        at: Millis(20),
        actor: "operator".into(),
        kind: AuditKind::Admin,
        action: "key.create".into(),
        target: None,
        outcome: Complete,
        error_code: None,
        round: None,
        latency_us: None,
    };
    store
        .append_audit(&[call.clone(), admin.clone()])
        .await
        .expect("appended");
    let read = store
        .audit("acme", &all(10))
        .await
        .expect("the audit events");
    assert_eq!(read.len(), 2);
    assert!(read[0].id > read[1].id, "{read:?}");
    assert_eq!(
        read[0],
        AuditEvent {
            id: read[0].id,
            ..admin
        }
    );
    assert_eq!(
        read[1],
        AuditEvent {
            id: read[1].id,
            ..call
        }
    );
}

async fn later_batches_get_larger_ids(db: &Db) {
    let store = db.store();
    // Newest by id, whatever their times say.
    store
        .append_audit(&[event("acme", 50, "echo", Complete)])
        .await
        .expect("appended");
    store
        .append_audit(&[event("acme", 10, "echo", Complete)])
        .await
        .expect("appended");
    assert_eq!(ats(store, &all(10)).await, [10, 50]);
}

/// A call's record as the runtime hands it to the audit writer.
fn record(tenant: &str, at_ms: u64, target: Option<&str>, outcome: CallOutcome) -> CallRecord {
    CallRecord {
        tenant: Arc::from(tenant),
        principal: Arc::from("key:k1"),
        method: "tools/call",
        target: target.map(Arc::from),
        outcome,
        round: 1,
        at: UNIX_EPOCH + Duration::from_millis(at_ms),
        latency: Duration::from_micros(250),
    }
}

async fn calls_records_read_back_as_the_call_events_they_are(db: &Db) {
    let store = db.store();
    store
        .append_calls(&[
            record("acme", 10, Some("echo"), CallOutcome::Complete),
            record("acme", 20, None, CallOutcome::Error(-32602)),
            record("other", 30, Some("echo"), CallOutcome::InputRequired),
        ])
        .await
        .expect("appended");
    let read = store
        .audit("acme", &all(10))
        .await
        .expect("the audit events");
    let acme = Slug::parse("acme").expect("a slug");
    let call = |at, target: Option<&str>, outcome, error_code| AuditEvent {
        id: 0,
        tenant: acme.clone(),
        at: Millis(at),
        actor: "key:k1".into(),
        kind: AuditKind::Call,
        action: "tools/call".into(),
        target: target.map(str::to_owned),
        outcome,
        error_code,
        round: Some(1),
        latency_us: Some(250),
    };
    let without_ids: Vec<AuditEvent> = read
        .iter()
        .map(|e| AuditEvent { id: 0, ..e.clone() })
        .collect();
    assert_eq!(
        without_ids,
        [
            call(20, None, Error, Some(-32602)),
            call(10, Some("echo"), Complete, None)
        ]
    );
    assert_eq!(ats(store, &all(10)).await, [20, 10]);
    let other = store
        .audit("other", &all(10))
        .await
        .expect("the audit events");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].outcome, InputRequired);
}

async fn a_batch_of_calls_with_a_tenant_that_is_no_slug_is_refused_whole(db: &Db) {
    let store = db.store();
    let refused = store
        .append_calls(&[
            record("acme", 10, Some("echo"), CallOutcome::Complete),
            record("Not A Slug", 20, Some("echo"), CallOutcome::Complete),
        ])
        .await;
    assert!(
        matches!(refused, Err(StoreError::Invalid(_))),
        "{refused:?}"
    );
    assert!(ats(store, &all(10)).await.is_empty());
}

async fn appending_no_events_appends_nothing(db: &Db) {
    db.store()
        .append_audit(&[])
        .await
        .expect("nothing appended");
    assert!(ats(db.store(), &all(10)).await.is_empty());
}

async fn audit_reads_only_the_tenants_events(db: &Db) {
    let store = db.store();
    store
        .append_audit(&[
            event("acme", 10, "echo", Complete),
            event("other", 20, "echo", Complete),
        ])
        .await
        .expect("appended");
    assert_eq!(ats(store, &all(10)).await, [10]);
    assert_eq!(
        store
            .audit("other", &all(10))
            .await
            .expect("the audit events")
            .len(),
        1
    );
}

async fn the_since_filter_keeps_the_events_at_or_after_the_moment(db: &Db) {
    five_events(db.store()).await;
    let filter = AuditFilter {
        since: Some(Millis(30)),
        ..all(10)
    };
    assert_eq!(ats(db.store(), &filter).await, [50, 40, 30]);
}

async fn the_target_filter_keeps_the_events_about_the_target(db: &Db) {
    five_events(db.store()).await;
    let filter = AuditFilter {
        target: Some("add".into()),
        ..all(10)
    };
    assert_eq!(ats(db.store(), &filter).await, [40, 20]);
}

async fn the_outcome_filter_keeps_the_events_with_the_outcome(db: &Db) {
    five_events(db.store()).await;
    let filter = AuditFilter {
        outcome: Some(InputRequired),
        ..all(10)
    };
    assert_eq!(ats(db.store(), &filter).await, [50, 20]);
    let filter = AuditFilter {
        outcome: Some(Error),
        ..all(10)
    };
    assert_eq!(ats(db.store(), &filter).await, [30]);
}

async fn the_filters_combine(db: &Db) {
    five_events(db.store()).await;
    let filter = AuditFilter {
        since: Some(Millis(20)),
        target: Some("echo".into()),
        outcome: Some(InputRequired),
        ..all(10)
    };
    assert_eq!(ats(db.store(), &filter).await, [50]);
}

async fn the_limit_caps_a_page(db: &Db) {
    five_events(db.store()).await;
    assert_eq!(ats(db.store(), &all(2)).await, [50, 40]);
}

async fn the_before_id_cursor_pages_through_the_log(db: &Db) {
    let store = db.store();
    five_events(store).await;
    let mut pages = Vec::new();
    let mut before_id = None;
    loop {
        let page = store
            .audit(
                "acme",
                &AuditFilter {
                    before_id,
                    ..all(2)
                },
            )
            .await
            .expect("a page");
        let Some(last) = page.last() else { break };
        before_id = Some(last.id);
        pages.push(page.iter().map(|e| e.at.0).collect::<Vec<_>>());
    }
    assert_eq!(pages, [vec![50, 40], vec![30, 20], vec![10]]);
}

async fn the_cursor_combines_with_the_filters(db: &Db) {
    let store = db.store();
    five_events(store).await;
    let echo = |before_id| AuditFilter {
        target: Some("echo".into()),
        before_id,
        ..all(1)
    };
    let first = store.audit("acme", &echo(None)).await.expect("a page");
    assert_eq!(first.len(), 1);
    let second = store
        .audit("acme", &echo(Some(first[0].id)))
        .await
        .expect("a page");
    assert_eq!(second.iter().map(|e| e.at.0).collect::<Vec<_>>(), [30]);
}

async fn purging_deletes_the_events_before_the_moment_and_counts_them(db: &Db) {
    let store = db.store();
    five_events(store).await;
    store
        .append_audit(&[event("other", 5, "echo", Complete)])
        .await
        .expect("appended");
    assert_eq!(store.purge_audit(Millis(30)).await.expect("a purge"), 3);
    assert_eq!(ats(store, &all(10)).await, [50, 40, 30]);
    assert!(store
        .audit("other", &all(10))
        .await
        .expect("the audit events")
        .is_empty());
    assert_eq!(store.purge_audit(Millis(30)).await.expect("a purge"), 0);
}

async fn a_purge_keeps_the_ids_of_the_events_it_keeps(db: &Db) {
    let store = db.store();
    five_events(store).await;
    let ids = |events: Vec<AuditEvent>| {
        events
            .into_iter()
            .map(|e| (e.at.0, e.id))
            .collect::<Vec<_>>()
    };
    let before = ids(store.audit("acme", &all(10)).await.expect("the events"));
    store.purge_audit(Millis(30)).await.expect("a purge");
    let after = ids(store.audit("acme", &all(10)).await.expect("the events"));
    assert_eq!(after, before[..3].to_vec());
}

async fn appended_events_are_stored_as_a_sequence(db: &Db) {
    five_events(db.store()).await;
    assert!(stored_as_sequences(db).await);
}

async fn a_purge_rewrites_what_it_keeps_as_a_sequence(db: &Db) {
    let store = db.store();
    five_events(store).await;
    // Stored as an array, as before sequences: the purge rewrites the batch it cuts.
    db.execute(
        r#"UPDATE audit_batches SET events = '[{"n":0,"t":10,"p":"key:k1","a":"tools/call","g":"echo","r":1,"l":250},{"n":1,"t":20,"p":"key:k1","a":"tools/call","g":"add","r":1,"l":250}]', first_at = 10, last_at = 20, count = 2"#,
    )
    .await;
    assert_eq!(store.purge_audit(Millis(15)).await.expect("a purge"), 1);
    assert_eq!(ats(store, &all(10)).await, [20]);
    assert!(stored_as_sequences(db).await);
}
