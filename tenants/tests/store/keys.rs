//! API keys: create, read, list a page at a time, revoke, replace.

use roundtrip_tenants::{Millis, Names, StoreError};

use crate::harness::{full_key, key, slug, spec, Db};

async fn tenant(db: &Db, s: &str) {
    db.store()
        .create_tenant(&slug(s), &spec(s))
        .await
        .expect("the tenant is created");
}

on_both_backends!(
    a_created_key_reads_back_with_every_field,
    an_empty_allow_list_reads_back_as_empty_not_as_everything,
    an_unknown_key_reads_as_none,
    creating_a_taken_key_id_is_a_conflict_and_keeps_the_first,
    creating_a_key_for_an_unknown_tenant_is_not_found,
    the_same_key_id_under_two_tenants_is_two_keys,
    keys_list_in_id_order_a_page_at_a_time_revoked_ones_included,
    revoking_a_key_marks_it_revoked_at_the_moment_given,
    revoking_a_revoked_key_is_false_and_keeps_the_first_moment,
    revoking_an_unknown_key_is_false,
    put_key_replaces_a_key_and_makes_it_live_again,
    put_key_adds_a_key_that_was_not_there,
    put_key_for_an_unknown_tenant_is_not_found,
);

async fn a_created_key_reads_back_with_every_field(db: &Db) {
    tenant(db, "acme").await;
    let (secret, record) = full_key("k1");
    db.store()
        .create_key("acme", &record)
        .await
        .expect("the key is created");
    let read = db
        .store()
        .key("acme", "k1")
        .await
        .expect("a read")
        .expect("the key");
    assert_eq!(read, record);
    assert_eq!(read.digest(), record.digest());
    assert!(read.verify(&secret.secret));
}

async fn an_empty_allow_list_reads_back_as_empty_not_as_everything(db: &Db) {
    tenant(db, "acme").await;
    let store = db.store();
    store
        .create_key("acme", &key("none").with_allow(Names::default()))
        .await
        .expect("the key is created");
    store
        .create_key("acme", &key("all"))
        .await
        .expect("the key is created");
    let none = store
        .key("acme", "none")
        .await
        .expect("a read")
        .expect("the key");
    let all = store
        .key("acme", "all")
        .await
        .expect("a read")
        .expect("the key");
    assert_eq!(none.allow, Some(Names::default()));
    assert_eq!(all.allow, None);
}

async fn an_unknown_key_reads_as_none(db: &Db) {
    tenant(db, "acme").await;
    assert_eq!(db.store().key("acme", "nope").await.expect("a read"), None);
    assert_eq!(db.store().key("nobody", "k1").await.expect("a read"), None);
}

async fn creating_a_taken_key_id_is_a_conflict_and_keeps_the_first(db: &Db) {
    tenant(db, "acme").await;
    let store = db.store();
    let first = key("k1");
    store
        .create_key("acme", &first)
        .await
        .expect("the key is created");
    let second = store.create_key("acme", &key("k1")).await;
    assert!(matches!(second, Err(StoreError::Conflict(_))), "{second:?}");
    assert_eq!(store.key("acme", "k1").await.expect("a read"), Some(first));
}

async fn creating_a_key_for_an_unknown_tenant_is_not_found(db: &Db) {
    let created = db.store().create_key("nobody", &key("k1")).await;
    assert!(
        matches!(created, Err(StoreError::NotFound(_))),
        "{created:?}"
    );
    assert_eq!(db.store().key("nobody", "k1").await.expect("a read"), None);
}

async fn the_same_key_id_under_two_tenants_is_two_keys(db: &Db) {
    tenant(db, "acme").await;
    tenant(db, "other").await;
    let (a, b) = (key("k1"), key("k1"));
    db.store()
        .create_key("acme", &a)
        .await
        .expect("the key is created");
    db.store()
        .create_key("other", &b)
        .await
        .expect("the key is created");
    assert_eq!(db.store().key("acme", "k1").await.expect("a read"), Some(a));
    assert_eq!(
        db.store().key("other", "k1").await.expect("a read"),
        Some(b)
    );
}

async fn keys_list_in_id_order_a_page_at_a_time_revoked_ones_included(db: &Db) {
    tenant(db, "acme").await;
    tenant(db, "other").await;
    let store = db.store();
    for id in ["k3", "k1", "k-2", "k4"] {
        store
            .create_key("acme", &key(id))
            .await
            .expect("the key is created");
    }
    store
        .create_key("other", &key("k0"))
        .await
        .expect("the key is created");
    assert!(store
        .revoke_key("acme", "k3", Millis(5))
        .await
        .expect("a revocation"));
    let page = |after: Option<&'static str>| async move {
        store
            .keys("acme", after, 2)
            .await
            .expect("a page")
            .into_iter()
            .map(|k| k.id)
            .collect::<Vec<_>>()
    };
    assert_eq!(page(None).await, ["k-2", "k1"]);
    assert_eq!(page(Some("k1")).await, ["k3", "k4"]);
    assert_eq!(page(Some("k4")).await, Vec::<String>::new());
}

async fn revoking_a_key_marks_it_revoked_at_the_moment_given(db: &Db) {
    tenant(db, "acme").await;
    let store = db.store();
    store
        .create_key("acme", &key("k1"))
        .await
        .expect("the key is created");
    assert!(store
        .revoke_key("acme", "k1", Millis(1_234))
        .await
        .expect("a revocation"));
    let read = store
        .key("acme", "k1")
        .await
        .expect("a read")
        .expect("the key");
    assert_eq!(read.revoked_at, Some(Millis(1_234)));
    assert!(!read.is_live(|| Millis(0)));
}

async fn revoking_a_revoked_key_is_false_and_keeps_the_first_moment(db: &Db) {
    tenant(db, "acme").await;
    let store = db.store();
    store
        .create_key("acme", &key("k1"))
        .await
        .expect("the key is created");
    assert!(store
        .revoke_key("acme", "k1", Millis(1))
        .await
        .expect("a revocation"));
    assert!(!store
        .revoke_key("acme", "k1", Millis(2))
        .await
        .expect("a revocation"));
    let read = store
        .key("acme", "k1")
        .await
        .expect("a read")
        .expect("the key");
    assert_eq!(read.revoked_at, Some(Millis(1)));
}

async fn revoking_an_unknown_key_is_false(db: &Db) {
    tenant(db, "acme").await;
    assert!(!db
        .store()
        .revoke_key("acme", "nope", Millis(1))
        .await
        .expect("a revocation"));
    assert!(!db
        .store()
        .revoke_key("nobody", "k1", Millis(1))
        .await
        .expect("a revocation"));
}

async fn put_key_replaces_a_key_and_makes_it_live_again(db: &Db) {
    tenant(db, "acme").await;
    let store = db.store();
    store
        .create_key("acme", &key("k1"))
        .await
        .expect("the key is created");
    assert!(store
        .revoke_key("acme", "k1", Millis(1))
        .await
        .expect("a revocation"));
    let (_, replacement) = full_key("k1");
    store
        .put_key("acme", &replacement)
        .await
        .expect("the key is replaced");
    let read = store
        .key("acme", "k1")
        .await
        .expect("a read")
        .expect("the key");
    assert_eq!(read, replacement);
    assert_eq!(read.revoked_at, None);
    assert_eq!(store.keys("acme", None, 10).await.expect("a page").len(), 1);
}

async fn put_key_adds_a_key_that_was_not_there(db: &Db) {
    tenant(db, "acme").await;
    let record = key("k1");
    db.store()
        .put_key("acme", &record)
        .await
        .expect("the key is added");
    assert_eq!(
        db.store().key("acme", "k1").await.expect("a read"),
        Some(record)
    );
}

async fn put_key_for_an_unknown_tenant_is_not_found(db: &Db) {
    let put = db.store().put_key("nobody", &key("k1")).await;
    assert!(matches!(put, Err(StoreError::NotFound(_))), "{put:?}");
}
