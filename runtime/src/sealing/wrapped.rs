//! A key ring as storage holds it: [`WrappedRing`], every key wrapped under the
//! [`MasterKey`], never in the clear. This is the only form a [`KeyShare`] ever sees.
//!
//! Each key is wrapped on its own, with AES-256-GCM under the master key and a fresh nonce,
//! and its associated data names the tenant and the kid (`roundtrip/ring-key/v1`, tenant,
//! kid, NUL-separated). So a wrapped key opens only as the key of that kid of that tenant:
//! storage that moves a key to another tenant or another kid makes it fail to unwrap, not
//! become someone else's key. Kids, creation times and retire times stay in the clear: they
//! are not secret, and a writer to the storage can delete keys whatever we do.
//!
//! The serde form is what backends persist (JSON text in the tenant store), so its field
//! names are a storage format: change them only with a new format.
//!
//! [`KeyShare`]: super::KeyShare

use std::sync::Arc;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use super::codec::{is_kid, StateKey};
use super::keyring::{KeyRing, Pending};
use super::master_key::{MasterKey, WrapFailed};

/// What a wrapped key's associated data starts with: the purpose and its format version.
const AAD_LABEL: &[u8] = b"roundtrip/ring-key/v1";

/// Why a stored ring did not unwrap. Never carries key bytes.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UnwrapError {
    /// The key does not open under this master key, as this tenant's key of this kid: a
    /// master key other than the one that wrapped it, or a ring changed in storage.
    #[error(
        "key {kid} of tenant {tenant} does not unwrap under the master key: \
         it was wrapped under another master key, or changed in storage"
    )]
    WrongMasterKey {
        /// The tenant whose ring it is.
        tenant: String,
        /// The key that failed.
        kid: String,
    },
    /// The stored ring is not a ring: a bad kid, bad base64, or a key of the wrong length.
    #[error("the stored key ring of tenant {tenant} is malformed: {what}")]
    Malformed {
        /// The tenant whose ring it is.
        tenant: String,
        /// What is wrong with it.
        what: &'static str,
    },
}

/// One state key wrapped under the master key, with what is not secret about it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedKey {
    /// The key id.
    pub kid: String,
    /// When the key was made, unix seconds.
    pub created_at: u64,
    /// The wrap's nonce, base64.
    pub nonce: String,
    /// The wrapped key bytes and the tag, base64.
    pub sealed: String,
}

/// A verify-only key of a wrapped ring and the unix second after which it retires.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedVerifyOnly {
    /// The key.
    pub key: WrappedKey,
    /// Unix seconds.
    pub retire_after: u64,
}

/// A published key of a wrapped ring that seals from `activates_at` on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedPending {
    /// The key.
    pub key: WrappedKey,
    /// Unix seconds.
    pub activates_at: u64,
    /// Unix seconds: when the key it replaces stops verifying.
    pub retire_previous_after: u64,
}

/// A tenant's ring with every key wrapped: what any [`KeyShare`](super::KeyShare) stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrappedRing {
    /// The key that seals.
    pub active: WrappedKey,
    /// The keys that only open, newest first.
    pub verify_only: Vec<WrappedVerifyOnly>,
    /// The key published to seal later, during a rotation. Absent from rings stored before
    /// rotations published keys first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending: Option<WrappedPending>,
}

impl WrappedRing {
    /// `ring`, `tenant`'s, with each key wrapped under `master`.
    pub fn wrap(
        tenant: &str,
        ring: &KeyRing,
        master: &MasterKey,
    ) -> Result<WrappedRing, WrapFailed> {
        let verify_only = ring
            .verify_only()
            .iter()
            .map(|(key, retire_after)| {
                Ok(WrappedVerifyOnly {
                    key: wrap_key(tenant, key, master)?,
                    retire_after: *retire_after,
                })
            })
            .collect::<Result<_, WrapFailed>>()?;
        let pending = ring
            .pending()
            .map(|p| {
                Ok::<_, WrapFailed>(WrappedPending {
                    key: wrap_key(tenant, &p.key, master)?,
                    activates_at: p.activates_at,
                    retire_previous_after: p.retire_previous_after,
                })
            })
            .transpose()?;
        Ok(WrappedRing {
            active: wrap_key(tenant, ring.active(), master)?,
            verify_only,
            pending,
        })
    }

    /// The ring, `tenant`'s, with each key unwrapped under `master`. The keys' seal counts
    /// start at 0; their creation times are the stored ones.
    pub fn unwrap(&self, tenant: &str, master: &MasterKey) -> Result<KeyRing, UnwrapError> {
        let active = unwrap_key(tenant, &self.active, master)?;
        let verify_only = self
            .verify_only
            .iter()
            .map(|v| {
                Ok((
                    Arc::new(unwrap_key(tenant, &v.key, master)?),
                    v.retire_after,
                ))
            })
            .collect::<Result<_, UnwrapError>>()?;
        let ring = KeyRing::from_parts(Arc::new(active), verify_only);
        Ok(match &self.pending {
            None => ring,
            Some(p) => ring.with_pending(Pending {
                key: Arc::new(unwrap_key(tenant, &p.key, master)?),
                activates_at: p.activates_at,
                retire_previous_after: p.retire_previous_after,
            }),
        })
    }
}

/// The associated data of `tenant`'s key `kid`.
fn aad(tenant: &str, kid: &str) -> Vec<u8> {
    let mut aad = Vec::with_capacity(AAD_LABEL.len() + tenant.len() + kid.len() + 2);
    aad.extend_from_slice(AAD_LABEL);
    aad.push(0);
    aad.extend_from_slice(tenant.as_bytes());
    aad.push(0);
    aad.extend_from_slice(kid.as_bytes());
    aad
}

fn wrap_key(tenant: &str, key: &StateKey, master: &MasterKey) -> Result<WrappedKey, WrapFailed> {
    let (nonce, sealed) = master.wrap(&aad(tenant, key.kid()), key.secret_bytes())?;
    Ok(WrappedKey {
        kid: key.kid().to_owned(),
        created_at: key.created_at(),
        nonce: STANDARD.encode(nonce),
        sealed: STANDARD.encode(sealed),
    })
}

fn unwrap_key(tenant: &str, key: &WrappedKey, master: &MasterKey) -> Result<StateKey, UnwrapError> {
    let malformed = |what| UnwrapError::Malformed {
        tenant: tenant.to_owned(),
        what,
    };
    // A kid outside the token alphabet would seal tokens that never parse back.
    if !is_kid(&key.kid) {
        return Err(malformed("a kid outside the base64url alphabet"));
    }
    let nonce = STANDARD
        .decode(&key.nonce)
        .map_err(|_| malformed("a nonce that is not base64"))?;
    let sealed = STANDARD
        .decode(&key.sealed)
        .map_err(|_| malformed("a wrapped key that is not base64"))?;
    let bytes = master
        .unwrap(&aad(tenant, &key.kid), &nonce, &sealed)
        .map_err(|_| UnwrapError::WrongMasterKey {
            tenant: tenant.to_owned(),
            kid: key.kid.clone(),
        })?;
    let secret: [u8; 32] = bytes
        .as_slice()
        .try_into()
        .map_err(|_| malformed("a key that is not 32 bytes"))?;
    Ok(StateKey::from_bytes(key.kid.clone(), secret).with_created_at(key.created_at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ring() -> KeyRing {
        KeyRing::new(StateKey::generate().with_created_at(1_000))
            .rotated(StateKey::generate().with_created_at(2_000), 5_000)
    }

    #[test]
    fn a_wrapped_ring_unwraps_to_the_same_keys_times_and_retire_times() {
        let master = MasterKey::generate();
        let ring = ring();
        let back = WrappedRing::wrap("acme", &ring, &master)
            .unwrap()
            .unwrap("acme", &master)
            .unwrap();
        assert_eq!(back.active().kid(), ring.active().kid());
        assert_eq!(back.active().secret_bytes(), ring.active().secret_bytes());
        assert_eq!(back.active().created_at(), 2_000);
        let (old, retire) = &back.verify_only()[0];
        assert_eq!(old.secret_bytes(), ring.verify_only()[0].0.secret_bytes());
        assert_eq!(old.created_at(), 1_000);
        assert_eq!(*retire, 5_000);
    }

    #[test]
    fn a_published_key_is_wrapped_and_unwraps_with_its_times() {
        let master = MasterKey::generate();
        let ring = ring().with_pending(Pending {
            key: Arc::new(StateKey::generate().with_created_at(3_000)),
            activates_at: 3_000,
            retire_previous_after: 3_330,
        });
        let wrapped = WrappedRing::wrap("acme", &ring, &master).unwrap();
        let back = wrapped.unwrap("acme", &master).unwrap();
        let (pending, original) = (back.pending().unwrap(), ring.pending().unwrap());
        assert_eq!(pending.key.secret_bytes(), original.key.secret_bytes());
        assert_eq!(
            (pending.activates_at, pending.retire_previous_after),
            (3_000, 3_330)
        );
        assert!(!serde_json::to_string(&wrapped)
            .unwrap()
            .contains(&STANDARD.encode(original.key.secret_bytes())));
    }

    #[test]
    fn a_ring_stored_before_keys_were_published_first_still_loads() {
        let master = MasterKey::generate();
        let mut stored =
            serde_json::to_value(WrappedRing::wrap("acme", &ring(), &master).unwrap()).unwrap();
        assert!(stored.get("pending").is_none());
        stored.as_object_mut().unwrap().remove("pending");
        let back: WrappedRing = serde_json::from_value(stored).unwrap();
        assert!(back.unwrap("acme", &master).unwrap().pending().is_none());
    }

    #[test]
    fn a_wrapped_ring_holds_no_key_in_the_clear() {
        let master = MasterKey::generate();
        let ring = ring();
        let stored =
            serde_json::to_string(&WrappedRing::wrap("acme", &ring, &master).unwrap()).unwrap();
        for key in [ring.active(), &*ring.verify_only()[0].0] {
            let secret = key.secret_bytes();
            for text in [
                STANDARD.encode(secret),
                base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
                hex::encode(secret),
            ] {
                assert!(!stored.contains(&text), "a key in the clear in {stored}");
            }
        }
    }

    #[test]
    fn a_ring_wrapped_under_another_master_key_is_a_wrong_master_key_error() {
        let wrapped = WrappedRing::wrap("acme", &ring(), &MasterKey::generate()).unwrap();
        assert!(matches!(
            wrapped.unwrap("acme", &MasterKey::generate()),
            Err(UnwrapError::WrongMasterKey { tenant, .. }) if tenant == "acme"
        ));
    }

    #[test]
    fn a_ring_wrapped_for_one_tenant_does_not_unwrap_for_another() {
        let master = MasterKey::generate();
        let wrapped = WrappedRing::wrap("acme", &ring(), &master).unwrap();
        assert!(matches!(
            wrapped.unwrap("other", &master),
            Err(UnwrapError::WrongMasterKey { .. })
        ));
    }

    #[test]
    fn a_wrapped_key_moved_under_another_kid_does_not_unwrap() {
        let master = MasterKey::generate();
        let mut wrapped = WrappedRing::wrap("acme", &ring(), &master).unwrap();
        wrapped.active.kid = wrapped.verify_only[0].key.kid.clone();
        assert!(matches!(
            wrapped.unwrap("acme", &master),
            Err(UnwrapError::WrongMasterKey { .. })
        ));
    }

    #[test]
    fn a_stored_kid_outside_the_token_alphabet_is_malformed() {
        let master = MasterKey::generate();
        let mut wrapped = WrappedRing::wrap("acme", &ring(), &master).unwrap();
        wrapped.active.kid = "a.b".to_owned();
        assert!(matches!(
            wrapped.unwrap("acme", &master),
            Err(UnwrapError::Malformed { .. })
        ));
    }
}
