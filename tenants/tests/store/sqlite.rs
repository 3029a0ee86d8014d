//! What only SQLite has: a file that several processes share, and the in-memory database.

use roundtrip_tenants::{SqlStore, Store};
use sqlx::{AnyConnection, Connection, Row};

use crate::harness::{slug, spec};

#[tokio::test]
async fn opening_a_sqlite_store_creates_its_directory() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let file = dir.path().join("a/b/store.db");
    let url = format!("sqlite://{}?mode=rwc", file.display());
    let store = SqlStore::open(&url).await.expect("the store opens");
    assert!(file.is_file());
    store.close().await;
}

#[tokio::test]
async fn a_sqlite_store_runs_in_wal_mode() {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}/store.db?mode=rwc", dir.path().display());
    let store = SqlStore::open(&url).await.expect("the store opens");
    let mut conn = AnyConnection::connect(&url)
        .await
        .expect("a direct connection");
    let mode: String = sqlx::query("PRAGMA journal_mode")
        .fetch_one(&mut conn)
        .await
        .expect("the journal mode")
        .try_get(0)
        .expect("a text");
    assert_eq!(mode, "wal");
    conn.close().await.expect("the connection closes");
    store.close().await;
}

/// A serving process and the CLI write the same file at once: neither fails "database is
/// locked", and every write gets its own change.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_stores_on_one_sqlite_file_write_at_the_same_time() {
    const EACH: usize = 25;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let url = format!("sqlite://{}/store.db?mode=rwc", dir.path().display());
    let first = SqlStore::open(&url).await.expect("the store opens");
    let second = SqlStore::open(&url).await.expect("the store opens again");
    let writer = |store: SqlStore, prefix: &'static str| {
        tokio::spawn(async move {
            for i in 0..EACH {
                let s = slug(&format!("{prefix}-{i}"));
                store.create_tenant(&s, &spec("t")).await.expect("a write");
                store
                    .create_key(s.as_str(), &crate::harness::key("k1"))
                    .await
                    .expect("a write");
            }
        })
    };
    let (a, b) = (writer(first.clone(), "a"), writer(second.clone(), "b"));
    a.await.expect("the first writer ends");
    b.await.expect("the second writer ends");
    let changes = first.changes_since(0, 1_000).await.expect("the changes");
    assert_eq!(changes.len(), 4 * EACH);
    assert!(changes.windows(2).all(|w| w[0].seq < w[1].seq));
    assert_eq!(
        first.tenants(None, 1_000).await.expect("the tenants").len(),
        2 * EACH
    );
    first.close().await;
    second.close().await;
}

#[tokio::test]
async fn an_in_memory_sqlite_store_keeps_its_data_while_it_is_open() {
    let store = SqlStore::open("sqlite::memory:")
        .await
        .expect("the store opens");
    store
        .create_tenant(&slug("acme"), &spec("Acme"))
        .await
        .expect("the tenant is created");
    // Concurrent reads share the one connection rather than each opening an empty database.
    let (a, b) = tokio::join!(store.tenant("acme"), store.tenants(None, 10));
    assert!(a.expect("a read").is_some());
    assert_eq!(b.expect("a page").len(), 1);
    store.close().await;
}
