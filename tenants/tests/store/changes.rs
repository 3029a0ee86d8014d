//! The change log: one change per mutation of a tenant or a key, in the same transaction,
//! read back in order by the processes that follow the store.

use roundtrip_tenants::audit::AuditOutcome;
use roundtrip_tenants::{Change, Millis, Status, Store};

use crate::harness::{event, full_key, full_spec, key, slug, spec, Db};

/// The changes after `seq`, as (tenant, key) pairs.
async fn changes_after(store: &dyn Store, seq: i64) -> Vec<(String, Option<String>)> {
    store
        .changes_since(seq, 100)
        .await
        .expect("the changes")
        .into_iter()
        .map(|c| (c.tenant, c.key))
        .collect()
}

/// Checks that the changes after `seq` are exactly one, about `tenant` and `key`; the newest
/// seq.
async fn one_change_after(store: &dyn Store, seq: i64, tenant: &str, key: Option<&str>) -> i64 {
    assert_eq!(
        changes_after(store, seq).await,
        [(tenant.to_owned(), key.map(str::to_owned))],
        "the changes after {seq}"
    );
    store.last_change().await.expect("the last change")
}

on_both_backends!(
    an_empty_store_has_no_changes,
    each_mutation_appends_one_change_naming_its_tenant_and_key,
    a_mutation_that_changes_nothing_appends_no_change,
    audit_events_are_not_changes,
    changes_since_returns_the_later_changes_oldest_first_up_to_the_limit,
    last_change_is_the_newest_seq,
    pruning_drops_the_changes_before_the_moment_but_the_newest,
    pruning_keeps_the_changes_at_or_after_the_moment,
    a_seq_is_never_reused_after_pruning,
);

async fn an_empty_store_has_no_changes(db: &Db) {
    assert_eq!(db.store().last_change().await.expect("the last change"), 0);
    assert!(db
        .store()
        .changes_since(0, 10)
        .await
        .expect("the changes")
        .is_empty());
}

async fn each_mutation_appends_one_change_naming_its_tenant_and_key(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("create_tenant");
    let seq = one_change_after(store, 0, "acme", None).await;

    store
        .update_tenant("acme", &full_spec(), Status::Suspended)
        .await
        .expect("update_tenant");
    let seq = one_change_after(store, seq, "acme", None).await;

    store
        .create_key("acme", &key("k1"))
        .await
        .expect("create_key");
    let seq = one_change_after(store, seq, "acme", Some("k1")).await;

    store
        .put_key("acme", &full_key("k1").1)
        .await
        .expect("put_key");
    let seq = one_change_after(store, seq, "acme", Some("k1")).await;

    store
        .revoke_key("acme", "k1", Millis(1))
        .await
        .expect("revoke_key");
    let seq = one_change_after(store, seq, "acme", Some("k1")).await;

    store.delete_tenant("acme").await.expect("delete_tenant");
    one_change_after(store, seq, "acme", None).await;
}

async fn a_mutation_that_changes_nothing_appends_no_change(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("create_tenant");
    store
        .create_key("acme", &key("k1"))
        .await
        .expect("create_key");
    store
        .revoke_key("acme", "k1", Millis(1))
        .await
        .expect("revoke_key");
    let seq = store.last_change().await.expect("the last change");

    assert!(store
        .create_tenant(&slug("acme"), &spec("Again"))
        .await
        .is_err());
    assert!(store
        .update_tenant("nobody", &spec("N"), Status::Active)
        .await
        .expect("update")
        .is_none());
    assert!(!store.delete_tenant("nobody").await.expect("delete"));
    assert!(store.create_key("acme", &key("k1")).await.is_err());
    assert!(store.create_key("nobody", &key("k1")).await.is_err());
    assert!(store.put_key("nobody", &key("k1")).await.is_err());
    assert!(!store
        .revoke_key("acme", "k1", Millis(2))
        .await
        .expect("revoke"));
    assert!(!store
        .revoke_key("acme", "nope", Millis(2))
        .await
        .expect("revoke"));

    assert_eq!(store.last_change().await.expect("the last change"), seq);
    assert!(changes_after(store, seq).await.is_empty());
}

async fn audit_events_are_not_changes(db: &Db) {
    let store = db.store();
    store
        .append_audit(&[event("acme", 1, "echo", AuditOutcome::Complete)])
        .await
        .expect("the event is appended");
    assert_eq!(store.last_change().await.expect("the last change"), 0);
}

async fn changes_since_returns_the_later_changes_oldest_first_up_to_the_limit(db: &Db) {
    let store = db.store();
    for s in ["t1", "t2", "t3", "t4"] {
        store
            .create_tenant(&slug(s), &spec(s))
            .await
            .expect("create_tenant");
    }
    let all = store.changes_since(0, 10).await.expect("the changes");
    assert_eq!(all.len(), 4);
    assert!(all.windows(2).all(|w| w[0].seq < w[1].seq), "{all:?}");
    let tenants: Vec<&str> = all.iter().map(|c| c.tenant.as_str()).collect();
    assert_eq!(tenants, ["t1", "t2", "t3", "t4"]);

    let page: Vec<Change> = store
        .changes_since(all[0].seq, 2)
        .await
        .expect("the changes");
    assert_eq!(page, &all[1..3]);
    assert!(store
        .changes_since(all[3].seq, 10)
        .await
        .expect("the changes")
        .is_empty());
}

async fn last_change_is_the_newest_seq(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("t1"), &spec("t1"))
        .await
        .expect("create_tenant");
    store
        .create_tenant(&slug("t2"), &spec("t2"))
        .await
        .expect("create_tenant");
    let all = store.changes_since(0, 10).await.expect("the changes");
    assert_eq!(
        store.last_change().await.expect("the last change"),
        all[1].seq
    );
}

async fn pruning_drops_the_changes_before_the_moment_but_the_newest(db: &Db) {
    let store = db.store();
    for s in ["t1", "t2", "t3"] {
        store
            .create_tenant(&slug(s), &spec(s))
            .await
            .expect("create_tenant");
    }
    let last = store.last_change().await.expect("the last change");
    let later = Millis(Millis::now().0 + 3_600_000);
    assert_eq!(store.prune_changes(later).await.expect("a prune"), 2);
    let left = store.changes_since(0, 10).await.expect("the changes");
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].seq, last);
    assert_eq!(store.last_change().await.expect("the last change"), last);
}

async fn pruning_keeps_the_changes_at_or_after_the_moment(db: &Db) {
    let store = db.store();
    let before = Millis::now();
    for s in ["t1", "t2"] {
        store
            .create_tenant(&slug(s), &spec(s))
            .await
            .expect("create_tenant");
    }
    assert_eq!(store.prune_changes(before).await.expect("a prune"), 0);
    assert_eq!(
        store.changes_since(0, 10).await.expect("the changes").len(),
        2
    );
}

async fn a_seq_is_never_reused_after_pruning(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("t1"), &spec("t1"))
        .await
        .expect("create_tenant");
    store
        .create_tenant(&slug("t2"), &spec("t2"))
        .await
        .expect("create_tenant");
    let last = store.last_change().await.expect("the last change");
    store
        .prune_changes(Millis(Millis::now().0 + 3_600_000))
        .await
        .expect("a prune");
    store
        .create_tenant(&slug("t3"), &spec("t3"))
        .await
        .expect("create_tenant");
    let newer = store.changes_since(last, 10).await.expect("the changes");
    assert_eq!(newer.len(), 1);
    assert_eq!(newer[0].tenant, "t3");
    assert!(newer[0].seq > last);
}
