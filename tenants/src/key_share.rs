//! [`StoreKeyShare`]: the runtime's `KeyShare` over the tenant store, the embedded default.
//! Every process on one database (SQLite file or PostgreSQL) shares the rings, and a
//! restarted process finds the keys it sealed with before, so states in flight still open.
//!
//! Rings are kept wrapped (the runtime wraps them before they get here) as JSON in the
//! `key_rings` table, compare-and-swap on its version (see `store::key_rings`).
//!
//! The KeyManager calls this from its own Arbiter, a runtime other than the one that opened
//! the store's pool. Each call therefore runs on the runtime the share was made on (a
//! [`Handle`] taken at construction), where the pool's connections and tasks live, and the
//! KeyManager awaits the result, for at most `CALL_TIMEOUT` (5 s): the KeyManager handles no other
//! message while it waits, so a database that does not answer must not hold it for the pool's
//! own acquire timeout (30 s). A write that times out may still land; the compare-and-swap
//! makes the next read see it.

use std::time::Duration;

use async_trait::async_trait;
use roundtrip_runtime::sealing::{KeyShare, ShareError, Stored, Version, WrappedRing};
use tokio::runtime::Handle;

use crate::store::{RingWrite, SqlStore, StoreError};

/// The longest a read or write of a ring is waited for before the share counts as
/// unavailable.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// Key rings in the tenant store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct StoreKeyShare {
    store: SqlStore,
    runtime: Handle,
    timeout: Duration,
}

impl StoreKeyShare {
    /// A share over `store`, its queries run on `runtime`: the runtime that opened `store`
    /// and keeps running as long as the share is used (the server's main one).
    pub fn new(store: SqlStore, runtime: Handle) -> StoreKeyShare {
        StoreKeyShare {
            store,
            runtime,
            timeout: CALL_TIMEOUT,
        }
    }

    /// The same share, waiting at most `timeout` for each call.
    pub fn with_timeout(self, timeout: Duration) -> StoreKeyShare {
        StoreKeyShare { timeout, ..self }
    }

    /// Runs `work` on the store's runtime and waits for it, at most `self.timeout`.
    async fn on_store_runtime<T: Send + 'static>(
        &self,
        work: impl std::future::Future<Output = Result<T, StoreError>> + Send + 'static,
    ) -> Result<T, ShareError> {
        tokio::time::timeout(self.timeout, self.runtime.spawn(work))
            .await
            .map_err(|e| ShareError::Unavailable(Box::new(e)))?
            .map_err(|e| ShareError::Unavailable(Box::new(e)))?
            .map_err(|e| ShareError::Unavailable(Box::new(e)))
    }
}

#[async_trait]
impl KeyShare for StoreKeyShare {
    async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
        let store = self.store.clone();
        let tenant = tenant.to_owned();
        let row = self
            .on_store_runtime(async move { store.key_ring(&tenant).await })
            .await?;
        let Some(row) = row else {
            return Ok(None);
        };
        let ring: WrappedRing =
            serde_json::from_str(&row.ring).map_err(|e| ShareError::Malformed(Box::new(e)))?;
        let version = u64::try_from(row.version).map_err(|e| ShareError::Malformed(Box::new(e)))?;
        Ok(Some(Stored {
            ring,
            version: Version(version),
        }))
    }

    async fn store(
        &self,
        tenant: &str,
        ring: &WrappedRing,
        expected: Option<Version>,
    ) -> Result<Version, ShareError> {
        let text = serde_json::to_string(ring).map_err(|e| ShareError::Malformed(Box::new(e)))?;
        let expected = expected
            .map(|Version(v)| i64::try_from(v))
            .transpose()
            // A version the table never gave out: whatever is stored is not it.
            .map_err(|_| ShareError::Conflict)?;
        let store = self.store.clone();
        let tenant = tenant.to_owned();
        let written = self
            .on_store_runtime(async move { store.put_key_ring(&tenant, &text, expected).await })
            .await?;
        match written {
            RingWrite::Stored(version) => u64::try_from(version)
                .map(Version)
                .map_err(|e| ShareError::Malformed(Box::new(e))),
            RingWrite::Conflict => Err(ShareError::Conflict),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_store_that_does_not_answer_in_time_is_unavailable() {
        let store = SqlStore::open("sqlite::memory:").await.expect("opens");
        store.migrate().await.expect("migrates");
        // A runtime nobody drives: work spawned there never runs.
        let idle = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let share = StoreKeyShare::new(store, idle.handle().clone())
            .with_timeout(Duration::from_millis(50));
        // Without the share's own timeout this would wait for ever: the test's guard says so.
        let outcome = tokio::time::timeout(Duration::from_secs(30), share.load("acme"))
            .await
            .expect("the share gave up on its own");
        assert!(
            matches!(outcome, Err(ShareError::Unavailable(_))),
            "{outcome:?}"
        );
        tokio::task::spawn_blocking(move || drop(idle))
            .await
            .expect("dropped");
    }
}
