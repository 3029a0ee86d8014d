//! AES-256-GCM token codec: bytes in, `v2.<kid>.<blob>` out, and back. No policy, and no
//! clock beyond stamping a new key's creation time; the only state is each key's seal count.
//!
//! Token format: `v2.<kid>.<base64url-no-pad(nonce(12) || ciphertext || tag(16))>`.
//! - `v2` is the format version (v2: the binary claims frame of `claims`; v1 carried JSON
//!   claims and is no longer opened), and it is authenticated: the caller puts it, with the kid,
//!   in the associated data (see `binding::associated_data`), so neither can be swapped.
//! - `kid` picks the key from the tenant's ring in O(1), which is what lets keys rotate while
//!   tokens sealed under the previous key are still in flight.
//! - The nonce is 96 random bits per seal, from the thread's CSPRNG (`rand::thread_rng`:
//!   ChaCha12 seeded and periodically reseeded from the OS), so a seal costs no system call;
//!   keys themselves come straight from the OS RNG. With random nonces GCM stays safe up to about 2^32
//!   seals per key (NIST SP 800-38D, §8.3): past that a nonce collision becomes likely
//!   enough to matter, and one collision leaks the GHASH key, which lets an attacker forge
//!   tokens with any binding. So every [`StateKey`] counts its seals ([`StateKey::seals`]),
//!   and a key is rotated out of sealing after [`ROTATE_AFTER_SEALS`] (2^28) of them, or
//!   once it is older than the `KeyManager`'s `rotate_every` (6 h by default), whichever
//!   comes first (see `key_manager`). The count is per process and starts at 0 whenever a
//!   key is loaded; if several processes seal with one shared key, each counts its own
//!   seals, so the limit keeps a fleet of up to 16 processes within 2^32 together, and the
//!   age limit bounds the rest (docs/ARCHITECTURE.md, "The nonce bound across a fleet").
//!
//! The token is attacker-controlled on the way back in, so parsing is strict: only canonical
//! unpadded base64url is accepted (no `=`, no `+` or `/`, no stray trailing bits), so each
//! blob has exactly one spelling. `base64-simd` decodes that strictly, and several times
//! faster than the scalar `base64` engine, which was half of a 1 KiB seal and open. AES-GCM checks the tag in constant time; nothing here
//! compares secrets by hand.
//!
//! Key bytes are wiped from memory when a key is dropped: the copy kept for sharing is
//! [`Zeroizing`], and since aes-gcm 0.11 its `zeroize` feature wipes both the AES round keys
//! and the GHASH key inside the cipher.
//!
//! Both directions work in place on the one buffer that becomes the token's blob (sealing) or
//! the claims' bytes (opening): a 1 KiB state is never copied between encryption and the
//! base64 step.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::SystemTime;

use aes_gcm::aead::{AeadInOut, KeyInit, Nonce, Tag};
use aes_gcm::Aes256Gcm;
use base64_simd::URL_SAFE_NO_PAD;
use rand::rngs::OsRng;
use rand::RngCore;
use zeroize::{Zeroize, Zeroizing};

use super::claims::unix_secs;
use super::error::OpenError;

/// The token format version, as it appears at the start of every token.
pub(crate) const VERSION: &str = "v2";
const PREFIX: &str = "v2.";
const NONCE_LEN: usize = 12;
const TAG_LEN: usize = 16;
const KID_RANDOM_BYTES: usize = 8;

/// How many seals a key may make (in one process) before it must be rotated: 2^28, a
/// sixteenth of the 2^32 random-nonce bound of AES-GCM, so 16 processes sealing with one
/// shared key stay within it together. See [`KeyRing::needs_rotation`].
///
/// [`KeyRing::needs_rotation`]: super::KeyRing::needs_rotation
pub const ROTATE_AFTER_SEALS: u64 = 1 << 28;

/// One AES-256-GCM key, its id, when it was made, and how many seals it has made here. The
/// cipher is built once, here, never per request.
///
/// Shared by `Arc` between every worker's ring snapshot, so the seal count is atomic.
/// `Debug` prints the kid, creation time and seal count; the key bytes never reach a log, and
/// this copy of them is wiped when the key is dropped.
pub struct StateKey {
    kid: String,
    cipher: Aes256Gcm,
    secret: Zeroizing<[u8; 32]>,
    /// Unix seconds.
    created_at: u64,
    seals: AtomicU64,
    /// Set by the first worker of this process to ask for this key's rotation.
    rotation_asked: AtomicBool,
}

impl StateKey {
    /// A fresh random key from the OS RNG, with a random 11-character kid (8 bytes,
    /// base64url without padding), created now.
    pub fn generate() -> StateKey {
        let mut secret = Zeroizing::new([0u8; 32]);
        OsRng.fill_bytes(secret.as_mut());
        let mut kid = [0u8; KID_RANDOM_BYTES];
        OsRng.fill_bytes(&mut kid);
        StateKey::from_secret(URL_SAFE_NO_PAD.encode_to_string(kid), secret)
    }

    /// A key from stored bytes, e.g. loaded from a `KeyShare`, **stamped as created now**
    /// with a seal count of 0.
    ///
    /// A backend that stores keys should also store [`StateKey::created_at`] and restore it
    /// with [`StateKey::with_created_at`]; otherwise every reload makes the key look new, and
    /// a process that restarts more often than the `KeyManager`'s `rotate_every` never
    /// rotates it by age.
    ///
    /// `kid` must be non-empty and in the base64url alphabet, as [`StateKey::generate`] makes
    /// it: a token sealed under any other kid never parses back (it fails as `Malformed`).
    /// A backend loading kids from outside should check them.
    ///
    /// This function wipes its own copy of `bytes`; the caller should wipe theirs.
    pub fn from_bytes(kid: String, mut bytes: [u8; 32]) -> StateKey {
        let key = StateKey::from_secret(kid, Zeroizing::new(bytes));
        bytes.zeroize();
        key
    }

    fn from_secret(kid: String, secret: Zeroizing<[u8; 32]>) -> StateKey {
        let cipher = Aes256Gcm::new((&*secret).into());
        StateKey {
            kid,
            cipher,
            secret,
            created_at: unix_secs(SystemTime::now()),
            seals: AtomicU64::new(0),
            rotation_asked: AtomicBool::new(false),
        }
    }

    /// The same key, stamped as created at `created_at` (unix seconds) instead: for a backend
    /// restoring a stored key, and for the `KeyManager`, which stamps keys with its own clock.
    #[must_use]
    pub fn with_created_at(mut self, created_at: u64) -> StateKey {
        self.created_at = created_at;
        self
    }

    /// The key id written into every token sealed under this key.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    /// When this key was made (or stamped, see [`StateKey::from_bytes`]), in unix seconds.
    pub fn created_at(&self) -> u64 {
        self.created_at
    }

    /// How many tokens this process has sealed under this key since it was made or loaded.
    pub fn seals(&self) -> u64 {
        self.seals.load(Ordering::Relaxed)
    }

    /// True for the first caller only: the one worker of this process that asks the
    /// KeyManager to rotate this key once it is used up, so a busy process sends one request,
    /// not one per seal until the new key arrives.
    pub fn claim_rotation_request(&self) -> bool {
        !self.rotation_asked.swap(true, Ordering::Relaxed)
    }

    /// The raw key bytes. **Only** for sharing the key with other processes or wrapping it
    /// under a master key at rest; sealing and opening never need them.
    pub fn secret_bytes(&self) -> &[u8; 32] {
        &self.secret
    }

    /// Pretends `n` more seals happened, so tests can reach [`ROTATE_AFTER_SEALS`].
    #[cfg(test)]
    pub(crate) fn add_seals_for_test(&self, n: u64) {
        self.seals.fetch_add(n, Ordering::Relaxed);
    }
}

impl fmt::Debug for StateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StateKey")
            .field("kid", &self.kid)
            .field("created_at", &self.created_at)
            .field("seals", &self.seals())
            .finish_non_exhaustive()
    }
}

/// Whether `kid` is non-empty and uses only the base64url alphabet.
pub(crate) fn is_kid(kid: &str) -> bool {
    !kid.is_empty()
        && kid
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// The exact length of the token [`seal_bytes`] returns for a plaintext of `plaintext_len`
/// bytes under a kid of `kid_len` characters, so callers can check a size cap before
/// encrypting.
pub(crate) fn token_len(kid_len: usize, plaintext_len: usize) -> usize {
    let blob = NONCE_LEN + plaintext_len + TAG_LEN;
    PREFIX.len() + kid_len + 1 + (blob * 4).div_ceil(3)
}

/// Encrypts the concatenation of the `plaintext` parts under `key` with a fresh random
/// nonce, authenticating `aad`. The parts are written once, straight into the blob.
///
/// Counts the seal on the key first, so every nonce drawn is counted, even if AES-GCM then
/// fails. Fails only if AES-GCM refuses the plaintext (over 64 GiB).
pub(crate) fn seal_bytes(
    key: &StateKey,
    aad: &[u8],
    plaintext: &[&[u8]],
) -> Result<String, aes_gcm::Error> {
    // Relaxed: the count only has to be exact in total, not ordered with anything else.
    key.seals.fetch_add(1, Ordering::Relaxed);
    let mut nonce = [0u8; NONCE_LEN];
    // Not OsRng: a getrandom(2) call per seal was visible in the profile of sealed flows.
    rand::thread_rng().fill_bytes(&mut nonce);

    let plaintext_len = plaintext.iter().map(|part| part.len()).sum();
    let mut blob = Vec::with_capacity(NONCE_LEN + plaintext_len + TAG_LEN);
    blob.extend_from_slice(&nonce);
    for part in plaintext {
        blob.extend_from_slice(part);
    }
    let tag = key.cipher.encrypt_inout_detached(
        &Nonce::<Aes256Gcm>::from(nonce),
        aad,
        (&mut blob[NONCE_LEN..]).into(),
    )?;
    blob.extend_from_slice(&tag);

    let mut token = String::with_capacity(token_len(key.kid.len(), plaintext_len));
    token.push_str(PREFIX);
    token.push_str(&key.kid);
    token.push('.');
    URL_SAFE_NO_PAD.encode_append(&blob, &mut token);
    Ok(token)
}

/// Splits a token into its kid and decoded blob. Anything but the exact format is
/// [`OpenError::Malformed`]; the blob's contents are not checked here.
/// The kid `token` names, if it is shaped like a token: which key of the ring it needs.
pub fn kid_of(token: &str) -> Option<&str> {
    let (kid, _) = token.strip_prefix(PREFIX)?.split_once('.')?;
    is_kid(kid).then_some(kid)
}

pub(crate) fn split_token(token: &str) -> Result<(&str, Vec<u8>), OpenError> {
    let rest = token.strip_prefix(PREFIX).ok_or(OpenError::Malformed)?;
    let (kid, encoded) = rest.split_once('.').ok_or(OpenError::Malformed)?;
    if !is_kid(kid) {
        return Err(OpenError::Malformed);
    }
    let blob = URL_SAFE_NO_PAD
        .decode_to_vec(encoded)
        .map_err(|_| OpenError::Malformed)?;
    Ok((kid, blob))
}

/// Decrypts a blob from [`split_token`] under `key`, in place, checking the tag over the
/// ciphertext and `aad`, and returns the same buffer cut down to the plaintext. Too short to
/// hold a nonce and a tag is [`OpenError::Malformed`]; any authentication failure is
/// [`OpenError::Rejected`].
pub(crate) fn open_bytes(
    key: &StateKey,
    aad: &[u8],
    mut blob: Vec<u8>,
) -> Result<Vec<u8>, OpenError> {
    let plaintext_len = blob
        .len()
        .checked_sub(NONCE_LEN + TAG_LEN)
        .ok_or(OpenError::Malformed)?;
    let (nonce, rest) = blob.split_at_mut(NONCE_LEN);
    let (ciphertext, tag) = rest.split_at_mut(plaintext_len);
    let nonce = Nonce::<Aes256Gcm>::try_from(&*nonce).map_err(|_| OpenError::Malformed)?;
    let tag = Tag::<Aes256Gcm>::try_from(&*tag).map_err(|_| OpenError::Malformed)?;
    key.cipher
        .decrypt_inout_detached(&nonce, aad, ciphertext.into(), &tag)
        .map_err(|_| OpenError::Rejected)?;
    blob.truncate(NONCE_LEN + plaintext_len);
    blob.drain(..NONCE_LEN);
    Ok(blob)
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;

    fn key() -> StateKey {
        StateKey::from_bytes("test-kid".to_owned(), [7u8; 32])
    }

    fn reencode(kid: &str, blob: &[u8]) -> String {
        let encoded = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(blob);
        format!("{PREFIX}{kid}.{encoded}")
    }

    #[test]
    fn only_the_first_caller_claims_a_keys_rotation_request() {
        let key = StateKey::generate();
        assert!(key.claim_rotation_request());
        assert!(!key.claim_rotation_request());
    }

    #[test]
    fn sealed_bytes_open_with_the_same_key_and_aad() {
        let k = key();
        let token = seal_bytes(&k, b"aad", &[b"hello".as_slice()]).unwrap();
        let (kid, blob) = split_token(&token).unwrap();
        assert_eq!(kid, "test-kid");
        assert_eq!(open_bytes(&k, b"aad", blob).unwrap(), b"hello");
    }

    #[test]
    fn plaintext_parts_open_as_their_concatenation() {
        let k = key();
        let token = seal_bytes(&k, b"", &[b"head".as_slice(), b"", b"tail"]).unwrap();
        let (_, blob) = split_token(&token).unwrap();
        assert_eq!(open_bytes(&k, b"", blob).unwrap(), b"headtail");
    }

    #[test]
    fn token_has_the_documented_shape_and_predicted_length() {
        let k = StateKey::generate();
        for len in [0, 1, 2, 3, 100, 1000] {
            let token = seal_bytes(&k, b"", &[vec![b'x'; len].as_slice()]).unwrap();
            assert_eq!(token.len(), token_len(k.kid().len(), len));
            let parts: Vec<&str> = token.split('.').collect();
            assert_eq!(parts.len(), 3);
            assert_eq!(parts[0], VERSION);
            assert_eq!(parts[1], k.kid());
        }
    }

    #[test]
    fn two_seals_of_the_same_plaintext_differ() {
        let k = key();
        assert_ne!(
            seal_bytes(&k, b"", &[b"same".as_slice()]).unwrap(),
            seal_bytes(&k, b"", &[b"same".as_slice()]).unwrap()
        );
    }

    #[test]
    fn generated_kid_is_eleven_base64url_chars() {
        let k = StateKey::generate();
        assert_eq!(k.kid().len(), 11);
        assert!(is_kid(k.kid()));
        assert_ne!(StateKey::generate().kid(), k.kid());
    }

    #[test]
    fn debug_shows_the_kid_but_never_the_key_bytes() {
        // Created at 0, so no digit of the time can look like a key byte.
        let k = key().with_created_at(0);
        let shown = format!("{k:?}");
        assert!(shown.contains("test-kid"));
        assert!(!shown.contains("secret"));
        assert!(!shown.contains('7'));
    }

    #[test]
    fn from_bytes_keeps_the_secret_for_sharing() {
        assert_eq!(key().secret_bytes(), &[7u8; 32]);
    }

    #[test]
    fn the_secret_is_held_in_a_buffer_that_is_wiped_on_drop() {
        // Reading freed memory would need `unsafe`, which the crate forbids; the type is what
        // guarantees the wipe, so the test pins the type.
        fn wiped_on_drop<T: zeroize::ZeroizeOnDrop>(_: &T) {}
        wiped_on_drop(&key().secret);
    }

    #[test]
    fn every_seal_is_counted_on_its_key_and_opens_are_not() {
        let k = key();
        assert_eq!(k.seals(), 0);
        let token = seal_bytes(&k, b"", &[b"x".as_slice()]).unwrap();
        seal_bytes(&k, b"", &[b"y".as_slice()]).unwrap();
        let (_, blob) = split_token(&token).unwrap();
        open_bytes(&k, b"", blob).unwrap();
        assert_eq!(k.seals(), 2);
    }

    #[test]
    fn seals_from_many_threads_all_count_on_the_shared_key() {
        let k = std::sync::Arc::new(key());
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let k = std::sync::Arc::clone(&k);
                std::thread::spawn(move || {
                    for _ in 0..250 {
                        seal_bytes(&k, b"", &[b"x".as_slice()]).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(k.seals(), 1_000);
    }

    #[test]
    fn new_keys_are_stamped_now_and_a_stored_time_can_be_restored() {
        let before = unix_secs(SystemTime::now());
        let generated = StateKey::generate();
        let loaded = key();
        let after = unix_secs(SystemTime::now());
        for k in [&generated, &loaded] {
            assert!((before..=after).contains(&k.created_at()), "{k:?}");
        }
        assert_eq!(key().with_created_at(1_000).created_at(), 1_000);
    }

    #[test]
    fn a_flipped_bit_anywhere_in_the_blob_is_rejected() {
        let k = key();
        let token = seal_bytes(&k, b"aad", &[b"some state".as_slice()]).unwrap();
        let (_, blob) = split_token(&token).unwrap();
        for i in 0..blob.len() {
            let mut bad = blob.clone();
            bad[i] ^= 0x01;
            assert_eq!(
                open_bytes(&k, b"aad", bad),
                Err(OpenError::Rejected),
                "byte {i}"
            );
        }
    }

    #[test]
    fn other_aad_is_rejected() {
        let k = key();
        let (_, blob) = split_token(&seal_bytes(&k, b"aad", &[b"x".as_slice()]).unwrap()).unwrap();
        assert_eq!(open_bytes(&k, b"aae", blob), Err(OpenError::Rejected));
    }

    #[test]
    fn another_key_is_rejected() {
        let (_, blob) = split_token(&seal_bytes(&key(), b"", &[b"x".as_slice()]).unwrap()).unwrap();
        let other = StateKey::from_bytes("test-kid".to_owned(), [8u8; 32]);
        assert_eq!(open_bytes(&other, b"", blob), Err(OpenError::Rejected));
    }

    #[test]
    fn a_blob_shorter_than_nonce_and_tag_is_malformed() {
        let k = key();
        let (_, blob) = split_token(&seal_bytes(&k, b"", &[]).unwrap()).unwrap();
        assert_eq!(blob.len(), NONCE_LEN + TAG_LEN);
        assert_eq!(
            open_bytes(&k, b"", blob[..blob.len() - 1].to_vec()),
            Err(OpenError::Malformed)
        );
        assert_eq!(open_bytes(&k, b"", Vec::new()), Err(OpenError::Malformed));
    }

    #[test]
    fn a_truncated_blob_is_rejected() {
        let k = key();
        let (_, blob) =
            split_token(&seal_bytes(&k, b"", &[b"payload".as_slice()]).unwrap()).unwrap();
        assert_eq!(
            open_bytes(&k, b"", blob[..blob.len() - 1].to_vec()),
            Err(OpenError::Rejected)
        );
    }

    #[test]
    fn wrong_prefix_missing_parts_or_bad_kid_are_malformed() {
        let k = key();
        let token = seal_bytes(&k, b"", &[b"x".as_slice()]).unwrap();
        let body = token.strip_prefix(PREFIX).unwrap();
        for bad in [
            String::new(),
            "v2".to_owned(),
            "v2.".to_owned(),
            "v2.kid".to_owned(),
            format!("v1.{body}"),
            format!("v3.{body}"),
            format!("V2.{body}"),
            format!("v2..{}", body.split_once('.').unwrap().1),
            format!("v2.k!d.{}", body.split_once('.').unwrap().1),
            format!("v2.k.d.{}", body.split_once('.').unwrap().1),
            token.replacen("v2.", "", 1),
        ] {
            assert_eq!(split_token(&bad).err(), Some(OpenError::Malformed), "{bad}");
        }
    }

    #[test]
    fn padding_and_standard_alphabet_are_malformed() {
        // 13 bytes encode to 18 chars: not a multiple of 4, so padded would add "==".
        let blob: Vec<u8> = (0u8..13)
            .map(|b| b.wrapping_mul(37).wrapping_add(250))
            .collect();
        let canonical = reencode("kid", &blob);
        assert_eq!(split_token(&canonical).unwrap().1, blob);

        let padded = format!("{canonical}==");
        assert_eq!(split_token(&padded).err(), Some(OpenError::Malformed));

        let standard = base64::engine::general_purpose::STANDARD_NO_PAD.encode(&blob);
        assert!(standard.contains('+') || standard.contains('/'));
        assert_eq!(
            split_token(&format!("v2.kid.{standard}")).err(),
            Some(OpenError::Malformed)
        );
        for junk in [" ", "\n", "!", ".", "%3D"] {
            assert_eq!(
                split_token(&format!("{canonical}{junk}")).err(),
                Some(OpenError::Malformed),
                "{junk:?}"
            );
        }
    }

    #[test]
    fn non_canonical_trailing_bits_are_malformed() {
        // One byte encodes to two chars, and the second carries 4 unused bits that must be 0.
        let canonical = reencode("kid", &[0xff]);
        assert!(canonical.ends_with("_w"));
        assert!(split_token(&canonical).is_ok());
        let sloppy = canonical.replace("_w", "_x");
        assert_eq!(split_token(&sloppy).err(), Some(OpenError::Malformed));
    }
}
