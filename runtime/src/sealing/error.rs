//! Why a seal or an open failed.
//!
//! [`OpenError`] names the reason a `requestState` was refused. The reasons are for **logs
//! only**: whoever answers the client maps every one of them to the same fixed `-32602`
//! error, so a client probing with forged tokens learns nothing about which check failed
//! (expired vs. wrong binding vs. unknown key). This module does not build that wire error;
//! the dispatcher does.
//!
//! [`SealError`] is the server's own failure to produce a token. It is never the client's
//! fault, so it surfaces as an internal error.

/// Why a `requestState` token did not open. Log it; never send it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum OpenError {
    /// Longer than the policy's `max_token_bytes`; refused before any decoding.
    #[error("requestState exceeds the size limit")]
    Oversize,
    /// Empty, wrong version prefix, bad key id, non-canonical base64url, too short to hold a
    /// nonce and a tag, or claims that are not the frame we write.
    #[error("requestState is malformed")]
    Malformed,
    /// The key id names no key this tenant still verifies with.
    #[error("requestState was sealed with an unknown or retired key")]
    UnknownKey,
    /// AES-GCM authentication failed: tampered, truncated, sealed under another key, or
    /// presented for another tenant, principal, method, target or arguments (the binding is
    /// in the associated data, so a mismatch looks exactly like tampering).
    #[error("requestState failed authentication or was bound to another request")]
    Rejected,
    /// Past its expiry plus the allowed clock skew.
    #[error("requestState has expired")]
    Expired,
    /// Issued further in the future than the allowed clock skew.
    #[error("requestState was issued in the future")]
    FromTheFuture,
}

/// Why the runtime could not seal a handler's state.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SealError {
    /// The handler's state and the answer schemas sealed beside it are together longer than
    /// the policy's `max_state_bytes`.
    #[error("handler state and answer schemas are {len} bytes, over the {max}-byte limit")]
    StateTooLarge {
        /// The length of the state and the answer schemas, in bytes.
        len: usize,
        /// The policy's `max_state_bytes`.
        max: usize,
    },
    /// The state fits `max_state_bytes`, but once framed, encrypted and encoded the token
    /// would exceed `max_token_bytes`, so [`open`](super::open) would refuse it. Refusing here
    /// means the runtime never hands out a token it cannot take back.
    #[error("sealed token would be {len} bytes, over the {max}-byte limit")]
    TokenTooLarge {
        /// The token's length in bytes.
        len: usize,
        /// The policy's `max_token_bytes`.
        max: usize,
    },
    /// AES-GCM refused to encrypt (its only failure is a plaintext over 64 GiB, far beyond any
    /// sane limit); kept as an error rather than a panic.
    #[error("AES-GCM refused the plaintext")]
    Encrypt,
}
