//! Wrapped requestState key rings: the `key_rings` table's compare-and-swap, and the
//! runtime's `KeyShare` over it (`StoreKeyShare`).

use roundtrip_runtime::sealing::{
    KeyRing, KeyShare, MasterKey, ShareError, StateKey, Version, WrappedRing,
};
use roundtrip_tenants::store::RingWrite;
use roundtrip_tenants::StoreKeyShare;

use crate::harness::Db;

on_both_backends!(
    a_ring_written_first_reads_back_at_version_one,
    writing_at_the_version_read_replaces_the_ring_and_bumps_the_version,
    writing_at_a_stale_version_is_a_conflict_and_writes_nothing,
    creating_a_ring_that_exists_is_a_conflict_and_keeps_the_first,
    rings_are_kept_per_tenant,
    the_store_share_gives_back_the_keys_after_the_store_is_reopened,
    the_store_share_never_holds_a_key_in_the_clear,
    the_store_share_refuses_a_stale_version_as_a_conflict,
);

/// `tenant`'s stored ring text and version.
async fn stored(db: &Db, tenant: &str) -> (String, i64) {
    let row = db
        .sql_store()
        .key_ring(tenant)
        .await
        .expect("a read")
        .expect("the ring");
    (row.ring, row.version)
}

async fn a_ring_written_first_reads_back_at_version_one(db: &Db) {
    let store = db.sql_store();
    assert_eq!(store.key_ring("acme").await.expect("a read"), None);
    let written = store
        .put_key_ring("acme", "{}", None)
        .await
        .expect("a write");
    assert_eq!(written, RingWrite::Stored(1));
    assert_eq!(stored(db, "acme").await, ("{}".to_owned(), 1));
}

async fn writing_at_the_version_read_replaces_the_ring_and_bumps_the_version(db: &Db) {
    let store = db.sql_store();
    store
        .put_key_ring("acme", "one", None)
        .await
        .expect("a write");
    let written = store
        .put_key_ring("acme", "two", Some(1))
        .await
        .expect("a write");
    assert_eq!(written, RingWrite::Stored(2));
    assert_eq!(stored(db, "acme").await, ("two".to_owned(), 2));
}

async fn writing_at_a_stale_version_is_a_conflict_and_writes_nothing(db: &Db) {
    let store = db.sql_store();
    store
        .put_key_ring("acme", "one", None)
        .await
        .expect("a write");
    store
        .put_key_ring("acme", "theirs", Some(1))
        .await
        .expect("a write");
    let written = store
        .put_key_ring("acme", "ours", Some(1))
        .await
        .expect("a write");
    assert_eq!(written, RingWrite::Conflict);
    assert_eq!(stored(db, "acme").await, ("theirs".to_owned(), 2));
}

async fn creating_a_ring_that_exists_is_a_conflict_and_keeps_the_first(db: &Db) {
    let store = db.sql_store();
    store
        .put_key_ring("acme", "first", None)
        .await
        .expect("a write");
    let written = store
        .put_key_ring("acme", "second", None)
        .await
        .expect("a write");
    assert_eq!(written, RingWrite::Conflict);
    assert_eq!(stored(db, "acme").await, ("first".to_owned(), 1));
}

async fn rings_are_kept_per_tenant(db: &Db) {
    let store = db.sql_store();
    store
        .put_key_ring("acme", "a", None)
        .await
        .expect("a write");
    store
        .put_key_ring("other", "o", None)
        .await
        .expect("a write");
    assert_eq!(stored(db, "acme").await.0, "a");
    assert_eq!(store.key_ring("third").await.expect("a read"), None);
}

fn share(store: roundtrip_tenants::SqlStore) -> StoreKeyShare {
    StoreKeyShare::new(store, tokio::runtime::Handle::current())
}

async fn the_store_share_gives_back_the_keys_after_the_store_is_reopened(db: &Db) {
    let master = MasterKey::generate();
    let ring = KeyRing::new(StateKey::generate()).rotated(StateKey::generate(), 5_000);
    let wrapped = WrappedRing::wrap("acme", &ring, &master).expect("wrapped");
    share(db.sql_store().clone())
        .store("acme", &wrapped, None)
        .await
        .expect("stored");

    let stored = share(db.reopen().await)
        .load("acme")
        .await
        .expect("a read")
        .expect("the ring");
    let back = stored.ring.unwrap("acme", &master).expect("unwrapped");
    assert_eq!(back.active().kid(), ring.active().kid());
    assert_eq!(back.active().secret_bytes(), ring.active().secret_bytes());
    let (old, retire) = &back.verify_only()[0];
    assert_eq!(old.secret_bytes(), ring.verify_only()[0].0.secret_bytes());
    assert_eq!(*retire, 5_000);
}

async fn the_store_share_never_holds_a_key_in_the_clear(db: &Db) {
    use base64::Engine as _;
    let master = MasterKey::generate();
    let ring = KeyRing::new(StateKey::generate());
    let wrapped = WrappedRing::wrap("acme", &ring, &master).expect("wrapped");
    share(db.sql_store().clone())
        .store("acme", &wrapped, None)
        .await
        .expect("stored");
    let (text, _) = stored(db, "acme").await;
    let secret = ring.active().secret_bytes();
    for clear in [
        base64::engine::general_purpose::STANDARD.encode(secret),
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
        secret.iter().map(|b| format!("{b:02x}")).collect(),
    ] {
        assert!(!text.contains(&clear), "a key in the clear: {text}");
    }
}

async fn the_store_share_refuses_a_stale_version_as_a_conflict(db: &Db) {
    let master = MasterKey::generate();
    let wrap = || {
        WrappedRing::wrap("acme", &KeyRing::new(StateKey::generate()), &master).expect("wrapped")
    };
    let share = share(db.sql_store().clone());
    let first = share.store("acme", &wrap(), None).await.expect("stored");
    let second = share
        .store("acme", &wrap(), Some(first))
        .await
        .expect("stored");
    assert_ne!(first, second);
    assert!(matches!(
        share.store("acme", &wrap(), Some(first)).await,
        Err(ShareError::Conflict)
    ));
    assert!(matches!(
        share.store("acme", &wrap(), None).await,
        Err(ShareError::Conflict)
    ));
    assert!(matches!(
        share.store("acme", &wrap(), Some(Version(u64::MAX))).await,
        Err(ShareError::Conflict)
    ));
}
