//! The master key that wraps every state key at rest: [`MasterKey`], with its two operations:
//! AES-256-GCM over a 32-byte key with associated data the caller chooses, and keys for
//! other purposes derived from it (HMAC-SHA256 of the purpose's name), so that the fleet
//! shares one secret.
//!
//! Whatever keeps key rings beyond this process (a database table, Redis) holds them wrapped
//! under this key (see `wrapped`), so a copy of that storage (a dump, a backup, a replica)
//! gives no state key away without the master key too. Every wrap draws a fresh 96-bit
//! nonce from the OS RNG; a master key wraps a few keys per tenant per rotation, far from
//! the 2^32 random-nonce bound.
//!
//! The key is parsed once, at start-up, from base64 (standard alphabet, padding optional);
//! its bytes are wiped when it is dropped and never printed: `Debug` says only that it is
//! there.

use std::fmt;

use aes_gcm::aead::{AeadInOut, KeyInit, Nonce, Tag};
use aes_gcm::Aes256Gcm;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD};
use base64::Engine as _;
use hmac::digest::generic_array::GenericArray;
use hmac::{Hmac, Mac};
use rand::rngs::OsRng;
use rand::RngCore;
use sha2::Sha256;
use zeroize::Zeroizing;

/// The length of a master key, in bytes.
pub const MASTER_KEY_LEN: usize = 32;
/// The nonce drawn for each wrap, in bytes.
pub(crate) const WRAP_NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;

/// Why a master key's text is not a master key. Neither case carries the text itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MasterKeyError {
    /// The text is not base64.
    #[error("a master key must be base64 (32 random bytes, e.g. `openssl rand -base64 32`)")]
    NotBase64,
    /// The text decodes to the wrong number of bytes.
    #[error("a master key must be {MASTER_KEY_LEN} bytes, base64; this one is {len} bytes")]
    WrongLength {
        /// How many bytes it decoded to.
        len: usize,
    },
}

/// Why something wrapped under a master key did not unwrap.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "wrapped bytes do not open under this master key (a different master key, or changed bytes)"
)]
pub(crate) struct UnwrapFailed;

/// AES-GCM refused to wrap: only a plaintext over 64 GiB does that.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("AES-GCM refused to wrap the plaintext")]
pub struct WrapFailed;

/// HMAC-SHA256 keyed with `secret`. HMAC pads a key shorter than its block with zeros;
/// padding it here makes it a whole block, which `KeyInit::new` takes with no length check
/// left to fail.
pub(crate) fn keyed_hmac(secret: &[u8; 32]) -> Hmac<Sha256> {
    let mut block = Zeroizing::new([0u8; 64]);
    block[..32].copy_from_slice(secret);
    <Hmac<Sha256> as hmac::digest::KeyInit>::new(GenericArray::from_slice(block.as_slice()))
}

/// The 32-byte key that wraps state keys at rest. Cloning copies the key (each copy is wiped
/// when dropped).
#[derive(Clone)]
pub struct MasterKey {
    secret: Zeroizing<[u8; MASTER_KEY_LEN]>,
    cipher: Aes256Gcm,
}

impl MasterKey {
    /// The key for `purpose`, derived from this one: HMAC-SHA256 of the purpose's name under
    /// the master key. Knowing one derived key tells nothing of the master key or of another
    /// purpose's key. Wiped when dropped.
    pub fn derive(&self, purpose: &str) -> Zeroizing<[u8; 32]> {
        let mut mac = keyed_hmac(&self.secret);
        mac.update(b"roundtrip key for: ");
        mac.update(purpose.as_bytes());
        Zeroizing::new(mac.finalize().into_bytes().into())
    }

    /// A fresh random key from the OS RNG.
    pub fn generate() -> MasterKey {
        let mut secret = Zeroizing::new([0u8; MASTER_KEY_LEN]);
        OsRng.fill_bytes(secret.as_mut());
        MasterKey::from_secret(secret)
    }

    /// The key that `text` spells in base64 (standard alphabet, with or without padding;
    /// surrounding whitespace ignored, so a key file may end with a newline).
    pub fn from_base64(text: &str) -> Result<MasterKey, MasterKeyError> {
        let text = text.trim();
        let bytes = Zeroizing::new(
            STANDARD
                .decode(text)
                .or_else(|_| STANDARD_NO_PAD.decode(text))
                .map_err(|_| MasterKeyError::NotBase64)?,
        );
        let secret: [u8; MASTER_KEY_LEN] = bytes
            .as_slice()
            .try_into()
            .map_err(|_| MasterKeyError::WrongLength { len: bytes.len() })?;
        Ok(MasterKey::from_secret(Zeroizing::new(secret)))
    }

    /// The key in base64 (standard, padded), to write to a key file. Wiped when dropped.
    pub fn to_base64(&self) -> Zeroizing<String> {
        Zeroizing::new(STANDARD.encode(self.secret.as_slice()))
    }

    fn from_secret(secret: Zeroizing<[u8; MASTER_KEY_LEN]>) -> MasterKey {
        let cipher = Aes256Gcm::new((&*secret).into());
        MasterKey { secret, cipher }
    }

    /// Encrypts `plaintext` with a fresh random nonce, authenticating `aad`: returns the
    /// nonce and the ciphertext followed by its tag. Fails only if AES-GCM refuses the
    /// plaintext (over 64 GiB; a wrapped key is 32 bytes).
    pub(crate) fn wrap(
        &self,
        aad: &[u8],
        plaintext: &[u8],
    ) -> Result<([u8; WRAP_NONCE_LEN], Vec<u8>), WrapFailed> {
        let mut nonce = [0u8; WRAP_NONCE_LEN];
        OsRng.fill_bytes(&mut nonce);
        let mut sealed = Vec::with_capacity(plaintext.len() + TAG_LEN);
        sealed.extend_from_slice(plaintext);
        let tag = self
            .cipher
            .encrypt_inout_detached(
                &Nonce::<Aes256Gcm>::from(nonce),
                aad,
                sealed.as_mut_slice().into(),
            )
            .map_err(|_| WrapFailed)?;
        sealed.extend_from_slice(&tag);
        Ok((nonce, sealed))
    }

    /// Decrypts what [`MasterKey::wrap`] returned, checking the tag over it and `aad`.
    pub(crate) fn unwrap(
        &self,
        aad: &[u8],
        nonce: &[u8],
        sealed: &[u8],
    ) -> Result<Zeroizing<Vec<u8>>, UnwrapFailed> {
        let nonce = Nonce::<Aes256Gcm>::try_from(nonce).map_err(|_| UnwrapFailed)?;
        let plaintext_len = sealed.len().checked_sub(TAG_LEN).ok_or(UnwrapFailed)?;
        let (ciphertext, tag) = sealed.split_at(plaintext_len);
        let tag = Tag::<Aes256Gcm>::try_from(tag).map_err(|_| UnwrapFailed)?;
        let mut plaintext = Zeroizing::new(ciphertext.to_vec());
        self.cipher
            .decrypt_inout_detached(&nonce, aad, plaintext.as_mut_slice().into(), &tag)
            .map_err(|_| UnwrapFailed)?;
        Ok(plaintext)
    }
}

impl fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padded_hmac_key_is_hmac_sha256_of_the_short_key() {
        let mut plain = <Hmac<Sha256> as Mac>::new_from_slice(&[1; 32]).unwrap();
        plain.update(b"message");
        let mut ours = keyed_hmac(&[1; 32]);
        ours.update(b"message");
        assert_eq!(ours.finalize().into_bytes(), plain.finalize().into_bytes());
    }

    #[test]
    fn derived_keys_differ_by_purpose_and_by_master_key_and_repeat_otherwise() {
        let key = MasterKey::generate();
        let again = MasterKey::from_base64(&key.to_base64()).unwrap();
        assert_eq!(
            *key.derive("legacy-forward"),
            *again.derive("legacy-forward")
        );
        assert_ne!(*key.derive("legacy-forward"), *key.derive("other"));
        assert_ne!(
            *key.derive("legacy-forward"),
            *MasterKey::generate().derive("legacy-forward")
        );
    }

    #[test]
    fn a_master_key_reads_back_from_its_base64() {
        let key = MasterKey::generate();
        let again = MasterKey::from_base64(&key.to_base64()).unwrap();
        assert_eq!(*key.secret, *again.secret);
    }

    #[test]
    fn a_master_key_reads_from_unpadded_base64_with_a_trailing_newline() {
        let text = format!("{}\n", STANDARD_NO_PAD.encode([9u8; 32]));
        assert_eq!(*MasterKey::from_base64(&text).unwrap().secret, [9u8; 32]);
    }

    #[test]
    fn a_master_key_that_is_not_base64_is_refused() {
        assert_eq!(
            MasterKey::from_base64("not base64!").unwrap_err(),
            MasterKeyError::NotBase64
        );
    }

    #[test]
    fn a_master_key_of_the_wrong_length_is_refused() {
        let text = STANDARD.encode([1u8; 16]);
        assert_eq!(
            MasterKey::from_base64(&text).unwrap_err(),
            MasterKeyError::WrongLength { len: 16 }
        );
    }

    #[test]
    fn debug_never_prints_the_key_bytes() {
        let key = MasterKey::from_base64(&STANDARD.encode([0xabu8; 32])).unwrap();
        let printed = format!("{key:?}");
        assert_eq!(printed, "MasterKey(<redacted>)");
        assert!(!printed.contains(&*key.to_base64()));
    }

    #[test]
    fn wrapped_bytes_open_under_the_same_key_and_aad_only() {
        let key = MasterKey::generate();
        let (nonce, sealed) = key.wrap(b"aad", b"secret").unwrap();
        assert_eq!(
            key.unwrap(b"aad", &nonce, &sealed).unwrap().as_slice(),
            b"secret"
        );
        assert_eq!(key.unwrap(b"other", &nonce, &sealed), Err(UnwrapFailed));
        let other = MasterKey::generate();
        assert_eq!(other.unwrap(b"aad", &nonce, &sealed), Err(UnwrapFailed));
    }

    #[test]
    fn each_wrap_draws_a_fresh_nonce() {
        let key = MasterKey::generate();
        let (one, _) = key.wrap(b"aad", b"secret").unwrap();
        let (two, _) = key.wrap(b"aad", b"secret").unwrap();
        assert_ne!(one, two);
    }
}
