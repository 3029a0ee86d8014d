//! API keys: generated with 256 bits of randomness, shown once, stored only as a SHA-256
//! hash, compared in constant time.
//!
//! A fast hash is enough here (unlike passwords): the keys are random, so there is nothing
//! to guess a dictionary against.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use roundtrip_runtime::tenancy::Grants;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// A freshly issued key: the secret exists only here and in the caller's hands.
pub struct ApiKey {
    /// The key's id: its principal is `key:{id}`, and it is how an operator names the key.
    pub id: String,
    /// The bearer token the caller presents. Shown once; only its hash is stored.
    pub secret: String,
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKey")
            .field("id", &self.id)
            .field("secret", &"<redacted>")
            .finish()
    }
}

impl ApiKey {
    /// A new random key `rt_<43 base64url chars>`.
    pub fn generate(id: impl Into<String>) -> Self {
        let mut bytes = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut bytes);
        Self {
            id: id.into(),
            secret: format!("rt_{}", URL_SAFE_NO_PAD.encode(bytes)),
        }
    }

    /// The stored form of this key.
    pub fn record(&self) -> ApiKeyRecord {
        ApiKeyRecord::from_secret(self.id.clone(), &self.secret)
    }
}

/// The stored form of a key: its id, the hash of its secret, and what it may see.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The key's id: its principal is `key:{id}`.
    pub id: String,
    hash: [u8; 32],
    /// What the key's principal may see of its tenant: everything unless limited.
    pub grants: Grants,
}

impl std::fmt::Debug for ApiKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyRecord")
            .field("id", &self.id)
            .field("grants", &self.grants)
            .finish_non_exhaustive()
    }
}

impl ApiKeyRecord {
    /// The record of `secret`, stored under `id`, with access to everything.
    pub fn from_secret(id: String, secret: &str) -> Self {
        Self {
            id,
            hash: hash(secret),
            grants: Grants::All,
        }
    }

    /// The same key, limited to `grants`.
    pub fn with_grants(mut self, grants: Grants) -> Self {
        self.grants = grants;
        self
    }

    /// Constant-time check of a presented secret.
    pub fn verify(&self, presented: &str) -> bool {
        self.matches(&PresentedKey::new(presented))
    }

    /// Constant-time check of a secret hashed once for several records.
    pub fn matches(&self, presented: &PresentedKey) -> bool {
        self.hash.ct_eq(&presented.0).into()
    }

    /// The SHA-256 of the secret: what a registry indexes its keys by.
    pub fn digest(&self) -> &[u8; 32] {
        &self.hash
    }
}

/// A presented secret, hashed once: what the records are compared against.
pub struct PresentedKey([u8; 32]);

impl std::fmt::Debug for PresentedKey {
    /// Nothing of the hash: it would let a log reader test guesses offline.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PresentedKey").finish_non_exhaustive()
    }
}

impl PresentedKey {
    /// Hashes the bearer token a caller presented.
    pub fn new(secret: &str) -> Self {
        Self(hash(secret))
    }

    /// The SHA-256 of the presented secret, to look a stored record up by.
    pub fn digest(&self) -> &[u8; 32] {
        &self.0
    }
}

fn hash(secret: &str) -> [u8; 32] {
    Sha256::digest(secret.as_bytes()).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_verifies_against_its_record_and_nothing_else() {
        let key = ApiKey::generate("k1");
        let record = key.record();
        assert!(record.verify(&key.secret));
        assert!(!record.verify("rt_wrong"));
        assert!(!record.verify(""));
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = ApiKey::generate("k1");
        assert!(!format!("{key:?}").contains(&key.secret));
    }
}
