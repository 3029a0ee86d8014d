//! Single-use states: the record of sealed states that have already completed a call, for the
//! tools that opt in (`ToolDescriptor::single_use_state`).
//!
//! A sealed state opens as often as it is presented until it expires: that is what lets a
//! client retry a round whose answer it lost. For a destructive tool it also means the last
//! round can be sent again, and act again. A tool that opts in has each state **claimed**
//! before its handler runs: a second claim of the same state, while the first runs or after
//! it completed, is refused. A run that does not complete (it asked for more input, failed,
//! or was cancelled) gives its claim back, so only completion uses a state up.
//!
//! A state is identified by the SHA-256 digest of its sealed token, and remembered until the
//! token could no longer open (its expiry plus the clock skew), then forgotten.
//!
//! [`ReplayCache`] is the seam for a record shared between processes (`crate::redis`'s
//! `RedisReplayCache`, with `ROUNDTRIP_REDIS_URL`); [`MemoryReplayCache`] is this process's,
//! bounded in bytes. When it is
//! full it refuses new claims until entries expire rather than forget live ones early, which
//! would reopen exactly the replay it exists to stop.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use sha2::{Digest, Sha256};

/// What identifies a sealed state: the SHA-256 digest of its token.
pub type StateDigest = [u8; 32];

/// The digest of the sealed token `token`.
pub fn state_digest(token: &str) -> StateDigest {
    Sha256::digest(token.as_bytes()).into()
}

/// Why a claim was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClaimRefused {
    /// The state already completed a call, or another request is running it now.
    #[error("requestState was already used")]
    Replayed,
    /// The record holds as many states as its bound allows; the earliest of them expires
    /// after `retry_after`.
    #[error("the replay record is full")]
    Full {
        /// When the earliest entry expires and frees room.
        retry_after: Duration,
    },
    /// A record shared between processes could not be reached: the state is refused rather
    /// than risk running it twice.
    #[error("the replay record is unavailable")]
    Unavailable,
}

/// Where claimed states are recorded.
#[async_trait(?Send)]
pub trait ReplayCache: Send + Sync + std::fmt::Debug + 'static {
    /// Claims the state `digest` until `expires_at` (unix seconds, the last second its token
    /// still opens); `now` is the current unix second. Refused if it is claimed already.
    async fn claim(
        &self,
        digest: &StateDigest,
        expires_at: u64,
        now: u64,
    ) -> Result<(), ClaimRefused>;

    /// Gives a claim back: the run did not complete, and the state may be presented again.
    /// Called from `Drop`, so it must not wait: a shared record sends it off and returns.
    fn release(&self, digest: &StateDigest);
}

/// What one entry of [`MemoryReplayCache`] is charged, in bytes: its digest and expiry in the
/// hash map and in the expiry index (40 bytes each), with the tables' load-factor and
/// node slack. An estimate from the layouts, on the high side, not a measurement.
pub const ENTRY_BYTES: usize = 192;

/// The default bound of [`MemoryReplayCache`]: 16 MiB, about 87,000 states.
pub const DEFAULT_MAX_BYTES: usize = 16 << 20;

/// This process's record of claimed states, bounded by `max_bytes` ([`ENTRY_BYTES`] each).
#[derive(Debug)]
pub struct MemoryReplayCache {
    max_entries: usize,
    inner: Mutex<Entries>,
}

#[derive(Debug, Default)]
struct Entries {
    /// Claimed digests and when each may be forgotten.
    expiry: HashMap<StateDigest, u64>,
    /// The same entries ordered by expiry, to forget the expired ones first.
    by_expiry: BTreeSet<(u64, StateDigest)>,
}

impl MemoryReplayCache {
    /// A record that holds at most `max_bytes` of entries.
    pub fn new(max_bytes: usize) -> Self {
        Self {
            max_entries: max_bytes / ENTRY_BYTES,
            inner: Mutex::new(Entries::default()),
        }
    }

    /// How many states are recorded now.
    pub fn len(&self) -> usize {
        self.entries().expiry.len()
    }

    /// Whether no state is recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        // A panic while the lock was held cannot leave the two indexes half-updated (each
        // update is a pair of infallible inserts or removes), so a poisoned lock is still good.
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Default for MemoryReplayCache {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_BYTES)
    }
}

impl Entries {
    /// Forgets the entries whose tokens can no longer open.
    fn prune(&mut self, now: u64) {
        while let Some(&(expires_at, digest)) = self.by_expiry.first() {
            if expires_at >= now {
                break;
            }
            self.by_expiry.pop_first();
            self.expiry.remove(&digest);
        }
    }
}

#[async_trait(?Send)]
impl ReplayCache for MemoryReplayCache {
    async fn claim(
        &self,
        digest: &StateDigest,
        expires_at: u64,
        now: u64,
    ) -> Result<(), ClaimRefused> {
        let mut entries = self.entries();
        entries.prune(now);
        if entries.expiry.contains_key(digest) {
            return Err(ClaimRefused::Replayed);
        }
        if entries.expiry.len() >= self.max_entries {
            let earliest = entries.by_expiry.first().map_or(now, |(at, _)| *at);
            return Err(ClaimRefused::Full {
                retry_after: Duration::from_secs(earliest.saturating_sub(now) + 1),
            });
        }
        entries.expiry.insert(*digest, expires_at);
        entries.by_expiry.insert((expires_at, *digest));
        Ok(())
    }

    fn release(&self, digest: &StateDigest) {
        let mut entries = self.entries();
        if let Some(expires_at) = entries.expiry.remove(digest) {
            entries.by_expiry.remove(&(expires_at, *digest));
        }
    }
}

/// A claim held while a single-use state's handler runs. Dropped without [`Claim::keep`]
/// (the run asked for more input, failed, timed out or was cancelled), it is given back.
#[derive(Debug)]
#[must_use = "a claim dropped at once is given back"]
pub struct Claim<'a> {
    cache: &'a dyn ReplayCache,
    digest: StateDigest,
    kept: bool,
}

impl<'a> Claim<'a> {
    /// Claims the state sealed as `token` in `cache` until `expires_at`.
    pub async fn take(
        cache: &'a dyn ReplayCache,
        token: &str,
        expires_at: u64,
        now: u64,
    ) -> Result<Claim<'a>, ClaimRefused> {
        let digest = state_digest(token);
        cache.claim(&digest, expires_at, now).await?;
        Ok(Claim {
            cache,
            digest,
            kept: false,
        })
    }

    /// The run completed: the state stays used until it expires.
    pub fn keep(mut self) {
        self.kept = true;
    }
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        if !self.kept {
            self.cache.release(&self.digest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::FutureExt;

    fn claim(
        cache: &MemoryReplayCache,
        token: &str,
        expires_at: u64,
        now: u64,
    ) -> Result<(), ClaimRefused> {
        cache
            .claim(&state_digest(token), expires_at, now)
            .now_or_never()
            .expect("the memory record never waits")
    }

    #[test]
    fn a_claimed_state_is_refused_a_second_time() {
        let cache = MemoryReplayCache::default();
        assert_eq!(claim(&cache, "a", 100, 10), Ok(()));
        assert_eq!(claim(&cache, "a", 100, 11), Err(ClaimRefused::Replayed));
        assert_eq!(claim(&cache, "b", 100, 11), Ok(()));
    }

    #[test]
    fn a_released_state_may_be_claimed_again() {
        let cache = MemoryReplayCache::default();
        claim(&cache, "a", 100, 10).expect("first");
        cache.release(&state_digest("a"));
        assert_eq!(claim(&cache, "a", 100, 11), Ok(()));
        assert_eq!(cache.len(), 1);
    }

    #[test]
    fn a_state_is_forgotten_once_its_token_can_no_longer_open() {
        let cache = MemoryReplayCache::default();
        claim(&cache, "a", 100, 10).expect("first");
        assert_eq!(claim(&cache, "a", 100, 100), Err(ClaimRefused::Replayed));
        assert_eq!(claim(&cache, "b", 200, 101), Ok(()));
        assert_eq!(cache.len(), 1, "a was forgotten");
    }

    #[test]
    fn a_full_record_refuses_new_claims_until_the_earliest_expires() {
        let cache = MemoryReplayCache::new(2 * ENTRY_BYTES);
        claim(&cache, "a", 50, 10).expect("a");
        claim(&cache, "b", 80, 10).expect("b");
        assert_eq!(
            claim(&cache, "c", 90, 20),
            Err(ClaimRefused::Full {
                retry_after: Duration::from_secs(31)
            })
        );
        assert_eq!(
            claim(&cache, "a", 90, 20),
            Err(ClaimRefused::Replayed),
            "nothing live is forgotten to make room"
        );
        assert_eq!(claim(&cache, "c", 90, 51), Ok(()));
    }

    #[test]
    fn a_claim_dropped_without_keep_is_given_back_and_a_kept_one_is_not() {
        let cache = MemoryReplayCache::default();
        let dropped = Claim::take(&cache, "a", 100, 10)
            .now_or_never()
            .expect("ready")
            .expect("claimed");
        drop(dropped);
        assert!(cache.is_empty());
        Claim::take(&cache, "a", 100, 10)
            .now_or_never()
            .expect("ready")
            .expect("claimed")
            .keep();
        assert_eq!(cache.len(), 1);
    }
}
