//! The store as a whole: migrations from an empty database, data that outlives the store
//! that wrote it, and rows that do not parse.

use roundtrip_tenants::audit::{AuditFilter, AuditOutcome};
use roundtrip_tenants::{SqlStore, Store, StoreError};

use crate::harness::{event, full_key, full_spec, slug, spec, Db};

fn is_corrupt<T>(result: Result<T, StoreError>) -> bool {
    matches!(result, Err(StoreError::Corrupt(_)))
}

on_both_backends!(
    migrations_make_an_empty_database_a_working_store,
    migrating_an_up_to_date_database_changes_nothing,
    data_survives_closing_and_reopening_the_store,
    a_second_store_on_the_same_database_sees_the_first_ones_writes,
    a_tenant_with_an_unknown_status_is_corrupt,
    a_tenant_with_an_unknown_auth_mode_is_corrupt,
    a_tenant_with_settings_that_are_not_json_is_corrupt,
    a_tenant_with_settings_of_the_wrong_shape_is_corrupt,
    a_key_with_an_unknown_scope_is_corrupt,
    a_key_with_a_malformed_digest_is_corrupt,
    a_key_with_a_malformed_allow_list_is_corrupt,
    an_audit_event_with_an_unknown_outcome_is_corrupt,
    an_audit_batch_written_as_an_array_before_sequences_still_reads,
);

async fn migrations_make_an_empty_database_a_working_store(db: &Db) {
    // `db` was opened on an empty database: every table is there, and empty.
    let store = db.store();
    assert!(store
        .tenants(None, 10)
        .await
        .expect("the tenants")
        .is_empty());
    assert_eq!(store.key("acme", "k1").await.expect("a key"), None);
    assert_eq!(store.last_change().await.expect("the last change"), 0);
    let filter = AuditFilter {
        limit: 10,
        ..AuditFilter::default()
    };
    assert!(store
        .audit("acme", &filter)
        .await
        .expect("the audit")
        .is_empty());
}

async fn migrating_an_up_to_date_database_changes_nothing(db: &Db) {
    let created = db
        .store()
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    db.sql_store().migrate().await.expect("migrating again");
    assert_eq!(
        db.store().tenant("acme").await.expect("a read"),
        Some(created)
    );
}

async fn data_survives_closing_and_reopening_the_store(db: &Db) {
    let store = db.store();
    let tenant = store
        .create_tenant(&slug("acme"), &full_spec())
        .await
        .expect("the tenant is created");
    let (_, key) = full_key("k1");
    store
        .create_key("acme", &key)
        .await
        .expect("the key is created");
    store
        .append_audit(&[event("acme", 10, "echo", AuditOutcome::Complete)])
        .await
        .expect("the event is appended");
    let last = store.last_change().await.expect("the last change");
    db.sql_store().close().await;

    let reopened = db.reopen().await;
    assert_eq!(reopened.tenant("acme").await.expect("a read"), Some(tenant));
    assert_eq!(reopened.key("acme", "k1").await.expect("a read"), Some(key));
    assert_eq!(reopened.last_change().await.expect("the last change"), last);
    let filter = AuditFilter {
        limit: 10,
        ..AuditFilter::default()
    };
    assert_eq!(
        reopened
            .audit("acme", &filter)
            .await
            .expect("the audit")
            .len(),
        1
    );
    reopened.close().await;
}

async fn a_second_store_on_the_same_database_sees_the_first_ones_writes(db: &Db) {
    let other = db.reopen().await;
    let created = db
        .store()
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    assert_eq!(other.tenant("acme").await.expect("a read"), Some(created));
    assert_eq!(
        other.last_change().await.expect("the last change"),
        db.store().last_change().await.expect("the last change")
    );
    other.close().await;
}

async fn a_tenant_with_an_unknown_status_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    db.execute("UPDATE tenants SET status = 'weird' WHERE slug = 'acme'")
        .await;
    assert!(is_corrupt(store.tenant("acme").await));
    assert!(is_corrupt(store.tenants(None, 10).await));
}

async fn a_tenant_with_an_unknown_auth_mode_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    db.execute("UPDATE tenants SET auth = 'password' WHERE slug = 'acme'")
        .await;
    assert!(is_corrupt(store.tenant("acme").await));
}

async fn a_tenant_with_settings_that_are_not_json_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    db.execute("UPDATE tenants SET settings = '{not json' WHERE slug = 'acme'")
        .await;
    assert!(is_corrupt(store.tenant("acme").await));
}

async fn a_tenant_with_settings_of_the_wrong_shape_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    db.execute("UPDATE tenants SET settings = '{\"catalogs\": 3}' WHERE slug = 'acme'")
        .await;
    assert!(is_corrupt(store.tenant("acme").await));
}

async fn a_key_with_an_unknown_scope_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    store
        .create_key("acme", &full_key("k1").1)
        .await
        .expect("the key is created");
    db.execute("UPDATE api_keys SET scopes = '[\"root\"]'")
        .await;
    assert!(is_corrupt(store.key("acme", "k1").await));
    assert!(is_corrupt(store.keys("acme", None, 10).await));
}

async fn a_key_with_a_malformed_digest_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    store
        .create_key("acme", &full_key("k1").1)
        .await
        .expect("the key is created");
    db.execute("UPDATE api_keys SET digest = 'abc'").await;
    assert!(is_corrupt(store.key("acme", "k1").await));
}

async fn a_key_with_a_malformed_allow_list_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    store
        .create_key("acme", &full_key("k1").1)
        .await
        .expect("the key is created");
    db.execute("UPDATE api_keys SET allow = '{\"commands\": []}'")
        .await;
    assert!(is_corrupt(store.key("acme", "k1").await));
}

async fn an_audit_event_with_an_unknown_outcome_is_corrupt(db: &Db) {
    let store = db.store();
    store
        .append_audit(&[event("acme", 10, "echo", AuditOutcome::InputRequired)])
        .await
        .expect("the event is appended");
    db.execute(
        "UPDATE audit_batches SET events = replace(events, '\"input_required\"', '\"maybe\"')",
    )
    .await;
    let filter = AuditFilter {
        limit: 10,
        ..AuditFilter::default()
    };
    assert!(is_corrupt(store.audit("acme", &filter).await));
}

async fn an_audit_batch_written_as_an_array_before_sequences_still_reads(db: &Db) {
    let store = db.store();
    store
        .append_audit(&[event("acme", 10, "echo", AuditOutcome::Complete)])
        .await
        .expect("the event is appended");
    db.execute(
        r#"UPDATE audit_batches SET events = '[{"n":0,"t":10,"p":"key:k1","a":"tools/call","g":"older","r":1,"l":250}]'"#,
    )
    .await;
    let filter = AuditFilter {
        limit: 10,
        ..AuditFilter::default()
    };
    let read = store.audit("acme", &filter).await.expect("readable");
    let [event] = read.as_slice() else {
        panic!("one event, not {read:?}")
    };
    assert_eq!(
        (event.at.0, event.actor.as_str(), event.target.as_deref()),
        (10, "key:k1", Some("older"))
    );
}

#[tokio::test]
async fn a_url_of_another_database_is_refused() {
    let opened = SqlStore::open("mysql://root@127.0.0.1/roundtrip").await;
    assert!(matches!(opened, Err(StoreError::Database(_))), "{opened:?}");
}
