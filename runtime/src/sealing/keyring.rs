//! One tenant's keys: the active key that seals, and older keys that still open tokens
//! sealed before a rotation. Plain immutable data.
//!
//! A ring is never changed in place: [`KeyRing::rotated`] and [`KeyRing::pruned`] return a
//! new ring. That is what lets the `KeyManager` push cheap `Arc` snapshots ([`KeyRings`]) to
//! every worker, which then seal and open without a lock or a message hop.
//!
//! A verify-only key is kept until its retire time, which the `KeyManager` sets to the
//! rotation time plus the state TTL plus the clock skew: every token sealed under it has
//! expired by then. [`KeyRing::find`] does not look at the clock; a key past its retire time
//! but not yet pruned can only open tokens that `open` then refuses as expired.
//!
//! A rotation in a fleet first **publishes** the new key as *pending*
//! ([`KeyRing::with_pending`]): it opens tokens but seals none until its activation time,
//! when every process promotes it on its own ([`KeyRing::promoted`]), by the clock, with no
//! further write. By then every worker has heard of it, so no worker meets a token under a
//! key it lacks.
//!
//! A ring also says when its active key should stop sealing ([`KeyRing::needs_rotation`],
//! after [`ROTATE_AFTER_SEALS`] seals), so that whoever just sealed can ask the `KeyManager`
//! for a rotation without reading a clock or holding a lock.

use std::sync::Arc;

use foldhash::HashMap;

use super::codec::{StateKey, ROTATE_AFTER_SEALS};

/// Every tenant's ring, by tenant slug: the snapshot workers seal and open with.
pub type KeyRings = Arc<HashMap<String, Arc<KeyRing>>>;

/// A tenant's active key plus the keys that only verify, each with its retire time.
#[derive(Debug, Clone)]
pub struct KeyRing {
    active: Arc<StateKey>,
    verify_only: Vec<(Arc<StateKey>, u64)>,
    pending: Option<Pending>,
}

/// A key published but not sealing yet.
#[derive(Debug, Clone)]
pub struct Pending {
    /// The key.
    pub key: Arc<StateKey>,
    /// The unix second from which it seals.
    pub activates_at: u64,
    /// The unix second after which the key it replaces stops verifying.
    pub retire_previous_after: u64,
}

impl KeyRing {
    /// A ring with one key, which seals and opens.
    pub fn new(active: StateKey) -> KeyRing {
        KeyRing {
            active: Arc::new(active),
            verify_only: Vec::new(),
            pending: None,
        }
    }

    /// A ring from its parts, e.g. loaded back from a `KeyShare`. Each verify-only key comes
    /// with the unix second after which it is retired.
    pub fn from_parts(active: Arc<StateKey>, verify_only: Vec<(Arc<StateKey>, u64)>) -> KeyRing {
        KeyRing {
            active,
            verify_only,
            pending: None,
        }
    }

    /// This ring with `pending` published: it opens tokens now and seals from its activation
    /// time on.
    #[must_use]
    pub fn with_pending(mut self, pending: Pending) -> KeyRing {
        self.pending = Some(pending);
        self
    }

    /// The key published to seal from a later time, if a rotation is under way.
    pub fn pending(&self) -> Option<&Pending> {
        self.pending.as_ref()
    }

    /// This ring with its pending key sealing, if its activation time is at or before `now`
    /// (the key it replaces verifies until the time the rotation set); `None` when there is
    /// nothing to promote. Every process promotes alike, from the clock and the ring alone.
    #[must_use]
    pub fn promoted(&self, now: u64) -> Option<KeyRing> {
        let pending = self.pending.as_ref().filter(|p| p.activates_at <= now)?;
        Some(self.rotated_arc(Arc::clone(&pending.key), pending.retire_previous_after))
    }

    /// [`KeyRing::promoted`], or this ring as it is.
    #[must_use]
    pub fn promoted_or_same(&self, now: u64) -> KeyRing {
        self.promoted(now).unwrap_or_else(|| self.clone())
    }

    /// The key new tokens are sealed with.
    pub fn active(&self) -> &StateKey {
        &self.active
    }

    /// The verify-only keys and their retire times (unix seconds), e.g. to share or persist.
    pub fn verify_only(&self) -> &[(Arc<StateKey>, u64)] {
        &self.verify_only
    }

    /// The key with id `kid`: the active key or a verify-only key not yet pruned.
    pub fn find(&self, kid: &str) -> Option<&StateKey> {
        self.find_shared(kid).map(|key| &**key)
    }

    /// Whether the active key has made [`ROTATE_AFTER_SEALS`] seals or more in this process,
    /// so it must be rotated out before a nonce collision becomes a risk.
    ///
    /// Cheap (one atomic load): check it after sealing, and if it is true send the
    /// `KeyManager` a `Rotate` with `if_kid` set to the active kid, so that many workers
    /// asking at once cause one rotation.
    pub fn needs_rotation(&self) -> bool {
        self.active.seals() >= ROTATE_AFTER_SEALS
    }

    /// Whether the active key is due for rotation at unix second `now`: used up (see
    /// [`KeyRing::needs_rotation`]) or made `max_age_secs` or more ago.
    pub(crate) fn due_for_rotation(&self, now: u64, max_age_secs: u64) -> bool {
        self.pending.is_none()
            && (self.needs_rotation()
                || now.saturating_sub(self.active.created_at()) >= max_age_secs)
    }

    /// A ring where `new` seals and the current active key only verifies, until the unix
    /// second `retire_after`.
    #[must_use]
    pub fn rotated(&self, new: StateKey, retire_after: u64) -> KeyRing {
        self.rotated_arc(Arc::new(new), retire_after)
    }

    fn rotated_arc(&self, new: Arc<StateKey>, retire_after: u64) -> KeyRing {
        let mut verify_only = Vec::with_capacity(self.verify_only.len() + 2);
        verify_only.push((Arc::clone(&self.active), retire_after));
        // A key published but replaced before it sealed here may have sealed elsewhere.
        if let Some(pending) = self.pending.as_ref().filter(|p| p.key.kid() != new.kid()) {
            verify_only.push((Arc::clone(&pending.key), retire_after));
        }
        verify_only.extend(self.verify_only.iter().cloned());
        KeyRing {
            active: new,
            verify_only,
            pending: None,
        }
    }

    /// A ring without the verify-only keys whose retire time is before `now` (unix seconds).
    #[must_use]
    pub fn pruned(&self, now: u64) -> KeyRing {
        KeyRing {
            active: Arc::clone(&self.active),
            verify_only: self
                .verify_only
                .iter()
                .filter(|(_, retire_after)| *retire_after >= now)
                .cloned()
                .collect(),
            pending: self.pending.clone(),
        }
    }

    /// This ring with every key that `held` also has (same kid) taken from `held`: a ring
    /// read back from storage holds new copies of the keys, whose seal counts start at 0, and
    /// a process must keep counting the seals it made under its keys.
    #[must_use]
    pub fn reusing(&self, held: &KeyRing) -> KeyRing {
        let reuse = |key: &Arc<StateKey>| {
            held.find_shared(key.kid())
                .map_or_else(|| Arc::clone(key), Arc::clone)
        };
        KeyRing {
            active: reuse(&self.active),
            verify_only: self
                .verify_only
                .iter()
                .map(|(key, retire_after)| (reuse(key), *retire_after))
                .collect(),
            pending: self.pending.as_ref().map(|p| Pending {
                key: reuse(&p.key),
                ..p.clone()
            }),
        }
    }

    fn find_shared(&self, kid: &str) -> Option<&Arc<StateKey>> {
        std::iter::once(&self.active)
            .chain(self.verify_only.iter().map(|(key, _)| key))
            .chain(self.pending.iter().map(|p| &p.key))
            .find(|key| key.kid() == kid)
    }

    /// Whether both rings hold the same keys (by kid), in the same places, with the same
    /// retire times: whether a worker holding one would seal and open as with the other.
    pub fn same_keys(&self, other: &KeyRing) -> bool {
        let same_pending = match (&self.pending, &other.pending) {
            (None, None) => true,
            (Some(a), Some(b)) => a.key.kid() == b.key.kid() && a.activates_at == b.activates_at,
            _ => false,
        };
        self.active.kid() == other.active.kid()
            && same_pending
            && self.verify_only.len() == other.verify_only.len()
            && self
                .verify_only
                .iter()
                .zip(&other.verify_only)
                .all(|((a, at), (b, bt))| a.kid() == b.kid() && at == bt)
    }

    /// This ring with the keys of `held` that it lacks and that are not retired at `now`,
    /// added as verify-only (`held`'s active key until `now + grace`); `None` when it lacks
    /// none. A share that lost its rings (a Redis restarted without persistence) and was
    /// filled again by another process lacks the keys this process sealed with: adding them
    /// back keeps every state in flight openable.
    #[must_use]
    pub fn with_lost_keys(&self, held: &KeyRing, now: u64, grace_secs: u64) -> Option<KeyRing> {
        let lost: Vec<(Arc<StateKey>, u64)> =
            std::iter::once((&held.active, now.saturating_add(grace_secs)))
                .chain(held.verify_only.iter().map(|(key, at)| (key, *at)))
                .chain(
                    held.pending
                        .iter()
                        .map(|p| (&p.key, now.saturating_add(grace_secs))),
                )
                .filter(|(key, retire_after)| {
                    *retire_after >= now && self.find(key.kid()).is_none()
                })
                .map(|(key, retire_after)| (Arc::clone(key), retire_after))
                .collect();
        if lost.is_empty() {
            return None;
        }
        let mut verify_only = self.verify_only.clone();
        verify_only.extend(lost);
        Some(KeyRing {
            active: Arc::clone(&self.active),
            verify_only,
            pending: self.pending.clone(),
        })
    }

    /// Whether [`KeyRing::pruned`] at `now` would drop anything.
    pub(crate) fn has_retired(&self, now: u64) -> bool {
        self.verify_only
            .iter()
            .any(|(_, retire_after)| *retire_after < now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(kid: &str) -> StateKey {
        StateKey::from_bytes(kid.to_owned(), [1u8; 32])
    }

    #[test]
    fn a_new_ring_finds_only_its_active_key() {
        let ring = KeyRing::new(key("a"));
        assert_eq!(ring.active().kid(), "a");
        assert_eq!(ring.find("a").map(StateKey::kid), Some("a"));
        assert!(ring.find("b").is_none());
        assert!(ring.verify_only().is_empty());
    }

    #[test]
    fn rotation_makes_the_old_key_verify_only_until_its_retire_time() {
        let ring = KeyRing::new(key("a")).rotated(key("b"), 100);
        assert_eq!(ring.active().kid(), "b");
        assert_eq!(ring.find("a").map(StateKey::kid), Some("a"));
        assert_eq!(ring.verify_only()[0].1, 100);

        assert!(!ring.has_retired(100));
        assert!(ring.pruned(100).find("a").is_some());
        assert!(ring.has_retired(101));
        let pruned = ring.pruned(101);
        assert!(pruned.find("a").is_none());
        assert_eq!(pruned.active().kid(), "b");
    }

    #[test]
    fn rotating_twice_keeps_both_old_keys_with_their_own_retire_times() {
        let ring = KeyRing::new(key("a"))
            .rotated(key("b"), 100)
            .rotated(key("c"), 200);
        assert_eq!(ring.active().kid(), "c");
        assert!(ring.find("a").is_some() && ring.find("b").is_some());
        let pruned = ring.pruned(150);
        assert!(pruned.find("a").is_none());
        assert!(pruned.find("b").is_some());
    }

    #[test]
    fn a_ring_needs_rotation_once_its_active_key_made_the_limit_of_seals() {
        let ring = KeyRing::new(key("a"));
        ring.active().add_seals_for_test(ROTATE_AFTER_SEALS - 1);
        assert!(!ring.needs_rotation());
        ring.active().add_seals_for_test(1);
        assert!(ring.needs_rotation());
    }

    #[test]
    fn only_the_active_keys_seals_count_toward_rotation() {
        let old = key("a");
        old.add_seals_for_test(ROTATE_AFTER_SEALS);
        let ring = KeyRing::new(old).rotated(key("b"), 100);
        assert!(!ring.needs_rotation());
    }

    #[test]
    fn a_ring_is_due_for_rotation_when_its_active_key_is_old_enough_or_used_up() {
        let ring = KeyRing::new(key("a").with_created_at(1_000));
        assert!(!ring.due_for_rotation(1_599, 600));
        assert!(ring.due_for_rotation(1_600, 600));
        // A clock that went backwards never makes a key due.
        assert!(!ring.due_for_rotation(0, 600));

        ring.active().add_seals_for_test(ROTATE_AFTER_SEALS);
        assert!(ring.due_for_rotation(1_000, 600));
    }

    #[test]
    fn a_ring_reusing_a_held_one_keeps_the_held_keys_and_their_seal_counts() {
        let held = KeyRing::new(key("a"));
        held.active().add_seals_for_test(7);
        let loaded = KeyRing::new(key("a")).rotated(key("b"), 100);
        let ring = loaded.reusing(&held);
        assert_eq!(ring.active().kid(), "b");
        assert_eq!(ring.find("a").map(StateKey::seals), Some(7));
        assert_eq!(ring.verify_only()[0].1, 100);
    }

    #[test]
    fn rings_with_the_same_kids_and_retire_times_have_the_same_keys() {
        let ring = KeyRing::new(key("a")).rotated(key("b"), 100);
        assert!(ring.same_keys(&KeyRing::new(key("a")).rotated(key("b"), 100)));
        assert!(!ring.same_keys(&KeyRing::new(key("a")).rotated(key("b"), 200)));
        assert!(!ring.same_keys(&KeyRing::new(key("b"))));
        assert!(!ring.same_keys(&KeyRing::new(key("x")).rotated(key("b"), 100)));
    }

    #[test]
    fn keys_held_but_lost_by_the_share_come_back_as_verify_only() {
        let stored = KeyRing::new(key("theirs"));
        let held = KeyRing::new(key("old")).rotated(key("mine"), 500);
        let merged = stored
            .with_lost_keys(&held, 400, 60)
            .expect("keys were lost");
        assert_eq!(merged.active().kid(), "theirs");
        let retire = |kid: &str| {
            merged
                .verify_only()
                .iter()
                .find(|(k, _)| k.kid() == kid)
                .map(|(_, at)| *at)
        };
        assert_eq!(retire("mine"), Some(460));
        assert_eq!(retire("old"), Some(500));
    }

    #[test]
    fn retired_keys_are_not_brought_back_and_a_ring_lacking_nothing_is_left_as_it_is() {
        let held = KeyRing::new(key("old")).rotated(key("mine"), 100);
        let stored = KeyRing::new(key("mine"));
        assert!(stored.with_lost_keys(&held, 101, 60).is_none());
        assert!(held.with_lost_keys(&held, 50, 60).is_none());
    }

    fn pending(kid: &str, activates_at: u64) -> Pending {
        Pending {
            key: Arc::new(key(kid)),
            activates_at,
            retire_previous_after: activates_at + 60,
        }
    }

    #[test]
    fn a_published_key_opens_but_does_not_seal_until_it_is_promoted() {
        let ring = KeyRing::new(key("a")).with_pending(pending("b", 100));
        assert_eq!(ring.active().kid(), "a");
        assert!(ring.find("b").is_some());
        assert!(ring.promoted(99).is_none());
        let promoted = ring.promoted(100).expect("due at 100");
        assert_eq!(promoted.active().kid(), "b");
        assert!(promoted.pending().is_none());
        assert_eq!(promoted.verify_only()[0].0.kid(), "a");
        assert_eq!(promoted.verify_only()[0].1, 160);
    }

    #[test]
    fn a_ring_with_a_published_key_is_not_due_for_another_rotation() {
        let ring = KeyRing::new(key("a").with_created_at(0)).with_pending(pending("b", 100));
        assert!(!ring.due_for_rotation(10_000, 600));
    }

    #[test]
    fn a_published_key_replaced_at_once_keeps_verifying() {
        let ring = KeyRing::new(key("a"))
            .with_pending(pending("b", 100))
            .rotated(key("c"), 500);
        assert_eq!(ring.active().kid(), "c");
        assert!(ring.find("b").is_some() && ring.find("a").is_some());
    }

    #[test]
    fn rotation_leaves_the_original_ring_unchanged() {
        let ring = KeyRing::new(key("a"));
        let _ = ring.rotated(key("b"), 100);
        assert_eq!(ring.active().kid(), "a");
        assert!(ring.find("b").is_none());
    }
}
