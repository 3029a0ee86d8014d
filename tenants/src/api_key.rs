//! API keys: generated with 256 bits of randomness, shown once, stored only as a SHA-256
//! hash, compared in constant time.
//!
//! A fast hash is enough here (unlike passwords): the keys are random, so there is nothing
//! to guess a dictionary against.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use rand::RngCore;
use std::collections::BTreeSet;

use roundtrip_runtime::tenancy::{Allow, Grants};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::model::{Millis, Names};

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
    /// A new random key under a new random id (`k_` and 16 hex digits).
    pub fn new_random() -> Self {
        let mut id = [0u8; 8];
        rand::rngs::OsRng.fill_bytes(&mut id);
        Self::generate(format!("k_{}", hex::encode(id)))
    }

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

/// What a key may be used for.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    utoipa::ToSchema,
)]
pub enum Scope {
    /// Calling the tenant's MCP endpoint.
    #[serde(rename = "mcp")]
    Mcp,
    /// The tenant's part of the admin API.
    #[serde(rename = "tenant-admin")]
    TenantAdmin,
}

impl Scope {
    /// The name the store and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Mcp => "mcp",
            Scope::TenantAdmin => "tenant-admin",
        }
    }

    /// The scope named `s`.
    pub fn parse(s: &str) -> Option<Scope> {
        match s {
            "mcp" => Some(Scope::Mcp),
            "tenant-admin" => Some(Scope::TenantAdmin),
            _ => None,
        }
    }
}

/// The stored form of a key: its id, the hash of its secret, its scopes and what it may see.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    /// The key's id: its principal is `key:{id}`.
    pub id: String,
    hash: [u8; 32],
    /// What it may be used for.
    pub scopes: BTreeSet<Scope>,
    /// What its principal may see of its tenant: everything when `None`.
    pub allow: Option<Names>,
    /// When it stops working, if ever.
    pub expires_at: Option<Millis>,
    /// When it was made.
    pub created_at: Millis,
    /// When it was revoked, if it was.
    pub revoked_at: Option<Millis>,
}

impl std::fmt::Debug for ApiKeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiKeyRecord")
            .field("id", &self.id)
            .field("scopes", &self.scopes)
            .field("allow", &self.allow)
            .field("expires_at", &self.expires_at)
            .field("revoked_at", &self.revoked_at)
            .finish_non_exhaustive()
    }
}

impl ApiKeyRecord {
    /// The record of `secret`, stored under `id`: an `mcp` key with access to everything,
    /// made now, never expiring.
    pub fn from_secret(id: String, secret: &str) -> Self {
        Self::from_digest(id, hash(secret))
    }

    /// The record of a secret known by its SHA-256 (as the store keeps it).
    pub fn from_digest(id: String, digest: [u8; 32]) -> Self {
        Self {
            id,
            hash: digest,
            scopes: BTreeSet::from([Scope::Mcp]),
            allow: None,
            expires_at: None,
            created_at: Millis::now(),
            revoked_at: None,
        }
    }

    /// The same key, limited to `allow`.
    pub fn with_allow(mut self, allow: Names) -> Self {
        self.allow = Some(allow);
        self
    }

    /// The same key, with these scopes.
    pub fn with_scopes(mut self, scopes: impl IntoIterator<Item = Scope>) -> Self {
        self.scopes = scopes.into_iter().collect();
        self
    }

    /// The same key, expiring at `at`.
    pub fn expiring(mut self, at: Millis) -> Self {
        self.expires_at = Some(at);
        self
    }

    /// What the key's principal may see, as the runtime reads it.
    pub fn grants(&self) -> Grants {
        match &self.allow {
            None => Grants::All,
            Some(names) => Grants::only(
                Allow::default()
                    .tools(names.tools.iter().cloned())
                    .prompts(names.prompts.iter().cloned())
                    .resources(names.resources.iter().cloned()),
            ),
        }
    }

    /// Does the key work at `now` (not revoked, not expired)? The clock is read only for a
    /// key that expires: most keys do not, and every authenticated request asks.
    pub fn is_live(&self, now: impl FnOnce() -> Millis) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|at| now() < at)
    }

    /// Constant-time check of a presented secret.
    pub fn verify(&self, presented: &str) -> bool {
        self.matches(&PresentedKey::new(presented))
    }

    /// Constant-time check of a secret hashed once for several records.
    pub fn matches(&self, presented: &PresentedKey) -> bool {
        digests_equal(&self.hash, &presented.0)
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

/// Whether two digests are equal, in constant time: compared as four words, each with
/// `subtle`, rather than as 32 bytes one by one (about 340 instructions on every
/// authenticated request, against about 60).
fn digests_equal(a: &[u8; 32], b: &[u8; 32]) -> bool {
    let (a, _) = a.as_chunks::<8>();
    let (b, _) = b.as_chunks::<8>();
    a.iter()
        .zip(b)
        .fold(subtle::Choice::from(1), |equal, (x, y)| {
            equal & u64::from_ne_bytes(*x).ct_eq(&u64::from_ne_bytes(*y))
        })
        .into()
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
    fn digests_are_equal_only_when_every_byte_is() {
        let digest = hash("rt_secret");
        assert!(digests_equal(&digest, &hash("rt_secret")));
        for byte in 0..32 {
            let mut other = digest;
            other[byte] ^= 1;
            assert!(!digests_equal(&digest, &other), "byte {byte} differs");
        }
    }

    #[test]
    fn a_key_is_live_until_it_expires_or_is_revoked() {
        let record = ApiKey::generate("k1").record().expiring(Millis(1_000));
        assert!(record.is_live(|| Millis(999)));
        assert!(!record.is_live(|| Millis(1_000)));
        let mut revoked = ApiKey::generate("k2").record();
        revoked.revoked_at = Some(Millis(5));
        assert!(!revoked.is_live(|| Millis(0)));
    }

    #[test]
    fn a_key_that_never_expires_is_live_without_reading_the_clock() {
        let record = ApiKey::generate("k1").record();
        assert!(record.is_live(|| panic!("the clock was read")));
    }

    #[test]
    fn a_key_without_an_allow_list_sees_everything() {
        assert_eq!(ApiKey::generate("k1").record().grants(), Grants::All);
        let mut allow = Names::default();
        allow.tools.insert("echo".into());
        let limited = ApiKey::generate("k2").record().with_allow(allow);
        assert_eq!(
            limited.grants(),
            Grants::only(Allow::default().tools(["echo"]))
        );
    }

    #[test]
    fn random_ids_differ() {
        assert_ne!(ApiKey::new_random().id, ApiKey::new_random().id);
    }

    #[test]
    fn debug_never_shows_the_secret() {
        let key = ApiKey::generate("k1");
        assert!(!format!("{key:?}").contains(&key.secret));
    }
}
