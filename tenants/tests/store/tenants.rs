//! Tenants: create, read, list a page at a time, update, delete.

use roundtrip_tenants::{AuthMode, Status, StoreError};

use crate::harness::{full_spec, key, slug, spec, Db};

on_both_backends!(
    a_created_tenant_reads_back_with_every_field,
    a_created_tenant_with_the_defaults_reads_back_the_same,
    an_unknown_tenant_reads_as_none,
    creating_a_taken_slug_is_a_conflict_and_keeps_the_first,
    tenants_list_in_slug_order_a_page_at_a_time,
    updating_a_tenant_replaces_its_spec_and_status_and_keeps_its_creation_time,
    updating_an_unknown_tenant_is_none,
    deleting_a_tenant_deletes_it_and_its_keys,
    deleting_a_tenant_leaves_the_others_and_their_keys,
    deleting_an_unknown_tenant_is_false,
    an_anonymous_tenant_stays_anonymous,
);

async fn a_created_tenant_reads_back_with_every_field(db: &Db) {
    let store = db.store();
    let created = store
        .create_tenant(&slug("acme"), &full_spec())
        .await
        .expect("the tenant is created");
    assert_eq!(created.slug, slug("acme"));
    assert_eq!(created.spec, full_spec());
    assert_eq!(created.status, Status::Active);
    assert_eq!(created.created_at, created.updated_at);
    let read = store.tenant("acme").await.expect("a read");
    assert_eq!(read, Some(created));
}

async fn a_created_tenant_with_the_defaults_reads_back_the_same(db: &Db) {
    let store = db.store();
    let created = store
        .create_tenant(&slug("plain"), &spec("Plain"))
        .await
        .expect("the tenant is created");
    assert_eq!(store.tenant("plain").await.expect("a read"), Some(created));
}

async fn an_unknown_tenant_reads_as_none(db: &Db) {
    assert_eq!(db.store().tenant("nobody").await.expect("a read"), None);
}

async fn creating_a_taken_slug_is_a_conflict_and_keeps_the_first(db: &Db) {
    let store = db.store();
    let first = store
        .create_tenant(&slug("acme"), &spec("First"))
        .await
        .expect("the tenant is created");
    let second = store.create_tenant(&slug("acme"), &spec("Second")).await;
    assert!(matches!(second, Err(StoreError::Conflict(_))), "{second:?}");
    assert_eq!(store.tenant("acme").await.expect("a read"), Some(first));
}

async fn tenants_list_in_slug_order_a_page_at_a_time(db: &Db) {
    let store = db.store();
    // Bytewise order, on both backends: '-' sorts before the letters.
    for s in ["bb", "ab", "a-b", "aa"] {
        store
            .create_tenant(&slug(s), &spec(s))
            .await
            .expect("the tenant is created");
    }
    let page = |after: Option<&'static str>| async move {
        store
            .tenants(after, 2)
            .await
            .expect("a page")
            .into_iter()
            .map(|t| t.slug.to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(page(None).await, ["a-b", "aa"]);
    assert_eq!(page(Some("aa")).await, ["ab", "bb"]);
    assert_eq!(page(Some("bb")).await, Vec::<String>::new());
    assert_eq!(store.tenants(None, 10).await.expect("a page").len(), 4);
}

async fn updating_a_tenant_replaces_its_spec_and_status_and_keeps_its_creation_time(db: &Db) {
    let store = db.store();
    let created = store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    let updated = store
        .update_tenant("acme", &full_spec(), Status::Suspended)
        .await
        .expect("an update")
        .expect("the tenant exists");
    assert_eq!(updated.spec, full_spec());
    assert_eq!(updated.status, Status::Suspended);
    assert_eq!(updated.created_at, created.created_at);
    assert!(updated.updated_at >= created.updated_at);
    assert_eq!(store.tenant("acme").await.expect("a read"), Some(updated));
}

async fn updating_an_unknown_tenant_is_none(db: &Db) {
    let updated = db
        .store()
        .update_tenant("nobody", &spec("Nobody"), Status::Active)
        .await
        .expect("an update");
    assert_eq!(updated, None);
    assert_eq!(db.store().tenant("nobody").await.expect("a read"), None);
}

async fn deleting_a_tenant_deletes_it_and_its_keys(db: &Db) {
    let store = db.store();
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    store.create_key("acme", &key("k1")).await.expect("a key");
    store.create_key("acme", &key("k2")).await.expect("a key");
    assert!(store.delete_tenant("acme").await.expect("a delete"));
    assert_eq!(store.tenant("acme").await.expect("a read"), None);
    assert_eq!(store.key("acme", "k1").await.expect("a read"), None);
    // A new tenant under the old slug starts with no keys.
    store
        .create_tenant(&slug("acme"), &spec("Acme again"))
        .await
        .expect("the slug is free again");
    assert!(store
        .keys("acme", None, 10)
        .await
        .expect("a page")
        .is_empty());
}

async fn deleting_a_tenant_leaves_the_others_and_their_keys(db: &Db) {
    let store = db.store();
    for s in ["acme", "other"] {
        store
            .create_tenant(&slug(s), &spec(s))
            .await
            .expect("the tenant is created");
        store.create_key(s, &key("k1")).await.expect("a key");
    }
    assert!(store.delete_tenant("acme").await.expect("a delete"));
    assert!(store.tenant("other").await.expect("a read").is_some());
    assert!(store.key("other", "k1").await.expect("a read").is_some());
}

async fn deleting_an_unknown_tenant_is_false(db: &Db) {
    assert!(!db.store().delete_tenant("nobody").await.expect("a delete"));
}

async fn an_anonymous_tenant_stays_anonymous(db: &Db) {
    let store = db.store();
    let mut anonymous = spec("Open");
    anonymous.auth = AuthMode::Anonymous;
    store
        .create_tenant(&slug("open"), &anonymous)
        .await
        .expect("the tenant is created");
    let read = store
        .tenant("open")
        .await
        .expect("a read")
        .expect("the tenant");
    assert_eq!(read.spec.auth, AuthMode::Anonymous);
}
