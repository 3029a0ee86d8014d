//! A [`KeyShare`] seen through the [`MasterKey`]: plain [`KeyRing`]s in and out, keys wrapped
//! on the way to the share and unwrapped on the way back, and the compare-and-swap loop every
//! change of a ring goes through ([`Vault::update`]).
//!
//! The `KeyManager` never writes a ring it has not just read: it loads the stored ring with
//! its version, decides the new ring from what it found (create one, rotate it, prune it, or
//! leave it), and stores that at the version it read. A [`ShareError::Conflict`] means
//! another process (or an earlier call) changed the ring in between, so it loads again and
//! decides again, up to [`ATTEMPTS`] times. A key another process added is thus always in
//! what is decided from, and never overwritten.
//!
//! Cheap to clone (two `Arc`s), so a future can own one and run without borrowing the
//! `KeyManager`.

use std::sync::Arc;

use super::keyring::KeyRing;
use super::master_key::{MasterKey, WrapFailed};
use super::share::{KeyShare, ShareError, Version};
use super::wrapped::{UnwrapError, WrappedRing};

/// How many times `Vault::update` loads and decides before giving up on a ring that keeps
/// changing under it.
pub const ATTEMPTS: usize = 4;

/// Why the rings could not be read or changed. Never carries key bytes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RingError {
    /// The share failed.
    #[error(transparent)]
    Share(#[from] ShareError),
    /// A stored ring did not unwrap under the master key.
    #[error(transparent)]
    Unwrap(#[from] UnwrapError),
    /// A key could not be wrapped.
    #[error(transparent)]
    Wrap(#[from] WrapFailed),
    /// The ring changed under every one of [`ATTEMPTS`] updates.
    #[error("the key ring of tenant {0} kept changing under {ATTEMPTS} attempts to update it")]
    Contended(String),
}

/// What a [`Vault::update`] decides a ring becomes.
#[derive(Debug)]
pub(crate) enum Next {
    /// This ring, already stored (the one found, typically): nothing is written.
    Keep(KeyRing),
    /// This ring, to be stored at the version read.
    Write(KeyRing),
}

/// What [`Vault::update`] left in the share.
#[derive(Debug)]
pub(crate) struct Updated {
    /// The tenant's ring now, as stored.
    pub(crate) ring: KeyRing,
    /// Whether this update wrote it.
    pub(crate) wrote: bool,
}

/// The share and the master key its rings are wrapped under.
#[derive(Clone)]
pub(crate) struct Vault {
    share: Arc<dyn KeyShare>,
    master: Arc<MasterKey>,
}

impl std::fmt::Debug for Vault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Vault").finish_non_exhaustive()
    }
}

impl Vault {
    pub(crate) fn new(share: Arc<dyn KeyShare>, master: MasterKey) -> Vault {
        Vault {
            share,
            master: Arc::new(master),
        }
    }

    async fn load_versioned(&self, tenant: &str) -> Result<Option<(KeyRing, Version)>, RingError> {
        match self.share.load(tenant).await? {
            None => Ok(None),
            Some(stored) => Ok(Some((
                stored.ring.unwrap(tenant, &self.master)?,
                stored.version,
            ))),
        }
    }

    /// Loads `tenant`'s ring (`None` if there is none), asks `decide` what it becomes, and
    /// stores that if the stored ring did not change in between; otherwise loads and decides
    /// again, up to [`ATTEMPTS`] times. `decide` may run several times: it must decide from
    /// what it is given.
    pub(crate) async fn update(
        &self,
        tenant: &str,
        mut decide: impl FnMut(Option<KeyRing>) -> Next,
    ) -> Result<Updated, RingError> {
        for _ in 0..ATTEMPTS {
            let (current, version) = match self.load_versioned(tenant).await? {
                Some((ring, version)) => (Some(ring), Some(version)),
                None => (None, None),
            };
            let next = match decide(current) {
                Next::Keep(ring) => return Ok(Updated { ring, wrote: false }),
                Next::Write(ring) => ring,
            };
            let wrapped = WrappedRing::wrap(tenant, &next, &self.master)?;
            match self.share.store(tenant, &wrapped, version).await {
                Ok(_) => {
                    return Ok(Updated {
                        ring: next,
                        wrote: true,
                    })
                }
                Err(ShareError::Conflict) => {
                    tracing::debug!(tenant, "key ring changed while updating it; reloading");
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(RingError::Contended(tenant.to_owned()))
    }
}

#[cfg(test)]
impl Vault {
    /// `tenant`'s stored ring, unwrapped, if there is one.
    pub(crate) async fn load(&self, tenant: &str) -> Result<Option<KeyRing>, RingError> {
        Ok(self.load_versioned(tenant).await?.map(|(ring, _)| ring))
    }

    /// Stores `ring` as `tenant`'s, whatever is there: for tests that set up what another
    /// process stored.
    pub(crate) async fn replace(&self, tenant: &str, ring: &KeyRing) -> Result<(), RingError> {
        let current = self.share.load(tenant).await?.map(|stored| stored.version);
        let wrapped = WrappedRing::wrap(tenant, ring, &self.master)?;
        self.share.store(tenant, &wrapped, current).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sealing::codec::StateKey;
    use crate::sealing::share::{LocalKeyShare, Stored, Version};
    use async_trait::async_trait;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn vault() -> Vault {
        Vault::new(Arc::new(LocalKeyShare::new()), MasterKey::generate())
    }

    #[actix_rt::test]
    async fn an_update_stores_what_it_decides_and_loads_back_unwrapped() {
        let vault = vault();
        let ring = KeyRing::new(StateKey::generate());
        let kid = ring.active().kid().to_owned();
        let updated = vault
            .update("acme", |_| Next::Write(ring.clone()))
            .await
            .unwrap();
        assert!(updated.wrote);
        assert_eq!(
            vault.load("acme").await.unwrap().unwrap().active().kid(),
            kid
        );
    }

    #[actix_rt::test]
    async fn an_update_that_decides_nothing_writes_nothing_and_returns_what_it_found() {
        let vault = vault();
        let ring = KeyRing::new(StateKey::generate());
        vault.replace("acme", &ring).await.unwrap();
        let updated = vault
            .update("acme", |current| Next::Keep(current.unwrap()))
            .await
            .unwrap();
        assert!(!updated.wrote);
        assert_eq!(updated.ring.active().kid(), ring.active().kid());
    }

    /// A share where another process writes a ring between our load and our store, `races`
    /// times.
    struct Racing {
        inner: LocalKeyShare,
        master: MasterKey,
        races: AtomicUsize,
    }

    #[async_trait]
    impl KeyShare for Racing {
        async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
            let loaded = self.inner.load(tenant).await;
            if self.races.load(Ordering::SeqCst) > 0 {
                self.races.fetch_sub(1, Ordering::SeqCst);
                let theirs = loaded
                    .as_ref()
                    .ok()
                    .and_then(Option::as_ref)
                    .map(|s| s.ring.unwrap(tenant, &self.master))
                    .transpose()
                    .map_err(|e| ShareError::Malformed(Box::new(e)))?
                    .map_or_else(
                        || KeyRing::new(StateKey::generate()),
                        |ring| ring.rotated(StateKey::generate(), u64::MAX),
                    );
                let version = loaded
                    .as_ref()
                    .ok()
                    .and_then(Option::as_ref)
                    .map(|s| s.version);
                let wrapped = WrappedRing::wrap(tenant, &theirs, &self.master)
                    .map_err(|e| ShareError::Malformed(Box::new(e)))?;
                self.inner.store(tenant, &wrapped, version).await?;
            }
            loaded
        }

        async fn store(
            &self,
            tenant: &str,
            ring: &WrappedRing,
            expected: Option<Version>,
        ) -> Result<Version, ShareError> {
            self.inner.store(tenant, ring, expected).await
        }
    }

    fn racing(races: usize) -> (Vault, LocalKeyShare) {
        let master = MasterKey::generate();
        let inner = LocalKeyShare::new();
        let share = Racing {
            inner: inner.clone(),
            master: master.clone(),
            races: AtomicUsize::new(races),
        };
        (Vault::new(Arc::new(share), master), inner)
    }

    #[actix_rt::test]
    async fn a_ring_changed_by_another_process_mid_update_is_reloaded_and_its_key_kept() {
        let (vault, _) = racing(1);
        let ours = StateKey::generate();
        let our_kid = ours.kid().to_owned();
        let mut ours = Some(ours);
        let mut seen = Vec::new();
        let updated = vault
            .update("acme", |current| {
                seen.push(current.as_ref().map(|r| r.active().kid().to_owned()));
                let key = ours.take().unwrap_or_else(StateKey::generate);
                Next::Write(match current {
                    Some(ring) => ring.rotated(key, u64::MAX),
                    None => KeyRing::new(key),
                })
            })
            .await
            .unwrap();
        // First decided on nothing; the other process's ring appeared; decided again on it.
        assert_eq!(seen.len(), 2);
        let theirs = seen[1].clone().unwrap();
        let ring = updated.ring;
        assert_ne!(
            ring.active().kid(),
            our_kid,
            "the first decision was not stored"
        );
        assert!(ring.find(&theirs).is_some(), "their key survives");
        assert_eq!(
            vault.load("acme").await.unwrap().unwrap().active().kid(),
            ring.active().kid()
        );
    }

    #[actix_rt::test]
    async fn a_ring_that_keeps_changing_is_given_up_on_after_the_attempts() {
        let (vault, _) = racing(ATTEMPTS);
        let err = vault
            .update("acme", |_| Next::Write(KeyRing::new(StateKey::generate())))
            .await
            .unwrap_err();
        assert!(matches!(err, RingError::Contended(tenant) if tenant == "acme"));
    }
}
