//! Redis, where the worker processes of a fleet share what must be the same on every one of
//! them (`ROUNDTRIP_REDIS_URL`). Unset, each process keeps its own, and key rings live in the
//! tenant store.
//!
//! Layout, one concern per file:
//! - `connection`: the [`Redis`] handle every backend below goes through: one multiplexed,
//!   self-reconnecting connection per process, each call bounded in time, failures counted.
//! - `key_share`: [`RedisKeyShare`], the `KeyShare` over Redis (compare-and-swap by a Lua
//!   script, which also announces the change).
//! - `announcements`: [`follow_key_rings`], which hears those announcements and has the
//!   `KeyManager` reload the ring that changed.
//! - `replay`: [`RedisReplayCache`], the single-use record shared by the fleet.
//! - `sessions`: [`RedisSessionDirectory`], which worker holds each legacy session.

mod announcements;
mod connection;
mod key_share;
mod replay;
mod sessions;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use announcements::follow_key_rings;
pub use connection::{Redis, RedisErrorCount, RedisUrlError, CALL_TIMEOUT};
pub use key_share::RedisKeyShare;
pub use replay::RedisReplayCache;
pub use sessions::RedisSessionDirectory;
