//! Sealing of `requestState`, the opaque string a 2026-07-28 `InputRequiredResult` hands the
//! client and the client echoes back on its retry.
//!
//! The threat model: the echoed state is **attacker-controlled input** (spec, MRTR
//! "requestState" security). Handlers carry facts across rounds in it, so Roundtrip seals it
//! with AES-256-GCM under the tenant's current key: the client can neither read nor change
//! it, and a token opens only
//! - for the tenant, principal, method, target and arguments it was issued for (the binding
//!   is in the associated data, see [`Binding`]), which stops replay onto another request;
//! - until a short expiry (per round, with a clock-skew allowance), see [`SealPolicy`];
//! - while its key is still in the tenant's ring (rotation keeps the previous key
//!   verify-only for one TTL, see [`KeyRing`]).
//!
//! Keys rotate on their own, by age and by use, because AES-GCM with random nonces is safe
//! for only about 2^32 seals per key and clients decide how often we seal (see
//! [`KeyManager`]). Key bytes are wiped from memory when a key is dropped.
//!
//! A state opens as often as it is presented until it expires. A tool that must act at most
//! once per state opts in to single-use states, which the runtime enforces through a bounded
//! record of states that completed a call (see [`ReplayCache`]).
//!
//! Every failure to open is an [`OpenError`] reason for the log; the client always gets the
//! same fixed `-32602`, built by the dispatcher, never here.
//!
//! Layout, one concern per file:
//! - `codec`: AES-256-GCM token format ([`StateKey`], which counts its seals).
//! - `binding`: what a token is bound to and the canonical argument digest.
//! - `claims`: the sealed plaintext.
//! - `policy`: [`seal`] and [`open`], limits, expiry and skew.
//! - `keyring`: a tenant's active and verify-only keys, plain data.
//! - `master_key`: the [`MasterKey`] that wraps state keys at rest.
//! - `wrapped`: a ring as storage holds it, every key wrapped ([`WrappedRing`]).
//! - `share`: where wrapped rings are kept and shared between processes ([`KeyShare`],
//!   versioned, compare-and-swap), and the in-memory [`LocalKeyShare`].
//! - `vault`: a share seen through the master key, and the compare-and-swap loop every
//!   change of a ring goes through.
//! - `key_manager`: the [`KeyManager`] actor that owns the rings, rotates keys, and pushes
//!   snapshots to workers, so sealing and opening never wait on it.
//! - `replay`: the record of single-use states ([`ReplayCache`], [`MemoryReplayCache`]).
//! - `error`: [`OpenError`] and [`SealError`].

mod binding;
mod claims;
mod codec;
mod error;
mod key_manager;
mod keyring;
mod master_key;
mod policy;
mod replay;
mod share;
mod vault;
mod wrapped;

pub(crate) use binding::arguments_digest;
pub use binding::{args_digest, ArgsDigest, Binding};
pub(crate) use claims::unix_secs;
pub use claims::Claims;
pub use codec::{kid_of, StateKey, ROTATE_AFTER_SEALS};
pub use error::{OpenError, SealError};
pub use key_manager::{
    EnsureTenant, KeyManager, KeyManagerConfig, KeyRingsChanged, Refresh, RefreshReason, Rotate,
    SetTenantGrace, ShareHealth, Snapshot, Subscribe, PRUNE_EVERY, ROTATE_EVERY, TICK_EVERY,
    UNKNOWN_KID_REFRESH_EVERY,
};
pub use keyring::{KeyRing, KeyRings, Pending};
pub(crate) use master_key::keyed_hmac;
pub use master_key::{MasterKey, MasterKeyError, WrapFailed, MASTER_KEY_LEN};
pub use policy::{open, seal, Payload, SealPolicy};
pub use replay::{
    state_digest, Claim, ClaimRefused, MemoryReplayCache, ReplayCache, StateDigest,
    DEFAULT_MAX_BYTES as DEFAULT_REPLAY_MAX_BYTES, ENTRY_BYTES as REPLAY_ENTRY_BYTES,
};
pub use share::{KeyShare, LocalKeyShare, ShareError, Stored, Version};
pub use vault::{RingError, ATTEMPTS as RING_UPDATE_ATTEMPTS};
pub use wrapped::{UnwrapError, WrappedKey, WrappedPending, WrappedRing, WrappedVerifyOnly};
