//! Where key rings live beyond one `KeyManager`: the [`KeyShare`] trait and its in-memory
//! implementation, [`LocalKeyShare`].
//!
//! Modern requests are stateless, so any worker process may get the retry of a request
//! another process sealed: every process must hold the same keys, and a restarted process
//! must still hold the keys it sealed with before. The `KeyManager` reads rings through this
//! trait and writes every change back. Implementations: [`LocalKeyShare`] here (this
//! process only, or several servers inside one process), and the tenant store's
//! (`roundtrip_tenants::StoreKeyShare`), which `serve` uses by default.
//!
//! A share only ever sees [`WrappedRing`]s: keys are wrapped under the master key before
//! they reach it, so no backend can keep a key in the clear.
//!
//! # Fallible, versioned, async
//! A networked backend fails, is slow, and is written by several processes at once, so:
//! - every call returns a `Result`, and the `KeyManager` keeps serving the rings it holds
//!   when the share fails (see `key_manager`);
//! - a ring is read with its [`Version`], and [`KeyShare::store`] is compare-and-swap on it:
//!   it writes only if the stored ring is still the one read (or, with `expected: None`, if
//!   there is none yet), and otherwise fails with [`ShareError::Conflict`], so the caller
//!   reloads, redoes its change on what it finds, and tries again. Two processes rotating at
//!   once therefore never overwrite each other's new key;
//! - calls are async (`async_trait`, boxed futures, so the trait stays object-safe). Only the
//!   `KeyManager` calls them, on its own Arbiter: never on a request's path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use super::wrapped::WrappedRing;

/// The version of a stored ring: changes at every store. Opaque, compared for equality only.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version(pub u64);

/// A stored ring and its version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stored {
    /// The ring, wrapped.
    pub ring: WrappedRing,
    /// Pass it back to [`KeyShare::store`] as `expected` to replace this ring.
    pub version: Version,
}

/// Why a share call failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ShareError {
    /// [`KeyShare::store`] found another version than the one expected (another process or
    /// an earlier call changed the ring since it was read): reload and retry. Nothing was
    /// written.
    #[error("the key ring changed since it was read")]
    Conflict,
    /// The backend failed or could not be reached.
    #[error("the key share is unavailable")]
    Unavailable(#[source] Box<dyn std::error::Error + Send + Sync>),
    /// The backend holds something that is not a wrapped ring.
    #[error("the key share holds a malformed key ring")]
    Malformed(#[source] Box<dyn std::error::Error + Send + Sync>),
}

/// Storage for tenants' wrapped key rings, shared by every process that must open each
/// other's tokens.
#[async_trait]
pub trait KeyShare: Send + Sync + 'static {
    /// The stored ring of `tenant` and its version, if there is one.
    async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError>;

    /// Stores `ring` as `tenant`'s ring if the stored one is still at version `expected`
    /// (`None`: if there is none). Returns the new version; [`ShareError::Conflict`] when
    /// the stored ring is not the one expected, in which case nothing changed.
    async fn store(
        &self,
        tenant: &str,
        ring: &WrappedRing,
        expected: Option<Version>,
    ) -> Result<Version, ShareError>;
}

/// Key rings in this process's memory: the off-switch for sharing. Clones share one map, so
/// several KeyManagers in one process (several servers, or tests modelling a fleet) that hold
/// clones of it share rings; a fresh one is a process's own, and gone at exit.
#[derive(Debug, Clone, Default)]
pub struct LocalKeyShare {
    rings: Arc<Mutex<HashMap<String, Stored>>>,
}

impl LocalKeyShare {
    /// An empty share; clone it for each KeyManager that should share it.
    pub fn new() -> LocalKeyShare {
        LocalKeyShare::default()
    }

    fn rings(&self) -> std::sync::MutexGuard<'_, HashMap<String, Stored>> {
        self.rings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl KeyShare for LocalKeyShare {
    async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
        Ok(self.rings().get(tenant).cloned())
    }

    async fn store(
        &self,
        tenant: &str,
        ring: &WrappedRing,
        expected: Option<Version>,
    ) -> Result<Version, ShareError> {
        let mut rings = self.rings();
        let current = rings.get(tenant).map(|stored| stored.version);
        if current != expected {
            return Err(ShareError::Conflict);
        }
        let version = Version(current.map_or(1, |Version(v)| v.wrapping_add(1)));
        rings.insert(
            tenant.to_owned(),
            Stored {
                ring: ring.clone(),
                version,
            },
        );
        Ok(version)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sealing::codec::StateKey;
    use crate::sealing::keyring::KeyRing;
    use crate::sealing::master_key::MasterKey;

    fn wrapped() -> WrappedRing {
        WrappedRing::wrap(
            "acme",
            &KeyRing::new(StateKey::generate()),
            &MasterKey::generate(),
        )
        .unwrap()
    }

    #[actix_rt::test]
    async fn a_stored_ring_loads_back_with_its_version_for_its_tenant_only() {
        let share = LocalKeyShare::new();
        assert!(share.load("acme").await.unwrap().is_none());
        let ring = wrapped();
        let version = share.store("acme", &ring, None).await.unwrap();
        let loaded = share.load("acme").await.unwrap().unwrap();
        assert_eq!(loaded.ring, ring);
        assert_eq!(loaded.version, version);
        assert!(share.load("other").await.unwrap().is_none());
    }

    #[actix_rt::test]
    async fn a_ring_stored_through_one_local_share_loads_through_its_clone_only() {
        let one = LocalKeyShare::new();
        let clone = one.clone();
        one.store("acme", &wrapped(), None).await.unwrap();
        assert!(clone.load("acme").await.unwrap().is_some());
        assert!(LocalKeyShare::new().load("acme").await.unwrap().is_none());
    }

    #[actix_rt::test]
    async fn storing_at_the_loaded_version_replaces_the_ring_and_changes_the_version() {
        let share = LocalKeyShare::new();
        let first = share.store("acme", &wrapped(), None).await.unwrap();
        let next = wrapped();
        let second = share.store("acme", &next, Some(first)).await.unwrap();
        assert_ne!(first, second);
        assert_eq!(share.load("acme").await.unwrap().unwrap().ring, next);
    }

    #[actix_rt::test]
    async fn storing_at_a_stale_version_is_a_conflict_and_changes_nothing() {
        let share = LocalKeyShare::new();
        let first = share.store("acme", &wrapped(), None).await.unwrap();
        let theirs = wrapped();
        share.store("acme", &theirs, Some(first)).await.unwrap();
        assert!(matches!(
            share.store("acme", &wrapped(), Some(first)).await,
            Err(ShareError::Conflict)
        ));
        assert_eq!(share.load("acme").await.unwrap().unwrap().ring, theirs);
    }

    #[actix_rt::test]
    async fn creating_a_ring_that_exists_is_a_conflict() {
        let share = LocalKeyShare::new();
        share.store("acme", &wrapped(), None).await.unwrap();
        assert!(matches!(
            share.store("acme", &wrapped(), None).await,
            Err(ShareError::Conflict)
        ));
    }
}
