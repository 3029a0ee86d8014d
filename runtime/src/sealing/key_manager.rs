//! The `KeyManager` actor: the one owner of every tenant's key ring in this process, and its
//! messages.
//!
//! It is **not** on the request path. A cross-Arbiter `send` costs about 16 µs, so workers
//! never ask it for a key they have (the one exception: the first request of a tenant created
//! after the worker started, which waits for [`EnsureTenant`] once): each worker [`Subscribe`]s once, gets the current [`KeyRings`]
//! snapshot, and is pushed a new snapshot ([`KeyRingsChanged`]) whenever a ring changes. Rings
//! are immutable and shared by `Arc`, so a snapshot is a pointer copy, and a worker seals and
//! opens with no lock and no hop.
//!
//! One per process, started on its own Arbiter. Rings are kept in a [`KeyShare`], wrapped
//! under the [`MasterKey`], so other processes, and this one after a restart, see the same
//! keys. Share calls are async and may fail; they run on this actor's Arbiter only.
//!
//! **No interleaving.** Every change of a ring (create, rotate, prune) loads the stored ring,
//! decides, and stores it compare-and-swap (see `vault`). Handlers that touch the share
//! return an [`AtomicResponse`], and the tick runs its work with `ctx.wait`: either way the
//! actor handles no other message until the share has answered and the outcome is applied,
//! so one rotation never interleaves with another, or with an ensure, in this process.
//! Between processes, the compare-and-swap keeps any key another process stored.
//!
//! **When the share fails** (unreachable, or a ring that does not unwrap): the manager keeps
//! the rings it holds and keeps serving them, logs the failure at `warn` (never a key), and
//! counts it ([`ShareHealth`], on `/metrics` and `/readyz`). Nothing is adopted that was not stored: a rotation whose
//! new ring could not be stored changes nothing here, so no worker seals with a key other
//! processes cannot load. The tick retries a due rotation at its next run; a tenant whose
//! ring could not be read at all gets none, and its requests are retried on the next ask.
//!
//! **Rotation is automatic**, because AES-GCM with random nonces is only safe for about 2^32
//! seals per key and clients can make us seal as often as they like:
//! - by use: a worker that sees [`KeyRing::needs_rotation`] after sealing (the active key
//!   made [`ROTATE_AFTER_SEALS`](super::ROTATE_AFTER_SEALS) seals) `do_send`s a [`Rotate`]
//!   with `if_kid` set, and does not wait for it. `if_kid` makes the request idempotent: when
//!   many workers ask at once, the first rotates and the rest find the kid already gone and
//!   change nothing;
//! - by age: a timer every [`KeyManagerConfig::tick_every`] rotates every tenant whose active
//!   key is older than [`KeyManagerConfig::rotate_every`] (6 h by default), and, as a
//!   backstop for a lost request, every tenant whose key is used up. The same tick prunes
//!   retired keys.
//!
//! Either way the new ring reaches the workers by the usual push; nothing on the request path
//! waits for a rotation. Until the push arrives a worker keeps sealing with the old key, one
//! reason the seal limit sits well below the 2^32 bound.
//!
//! Rotation keeps the previous key as verify-only for a grace period, so every state sealed
//! under it before the rotation still opens until it would have expired anyway. The grace is
//! the policy's `ttl + clock_skew`, unless the tenant has its own (a tenant with a longer
//! state TTL needs a longer grace): the wiring registers those at start-up with
//! [`SetTenantGrace`], and a [`Rotate`] may pass one.
//!
//! Seal counts are per process (see `codec`); a ring read back from the share keeps the
//! counts of the keys this process already holds ([`KeyRing::reusing`]).
//!
//! **Other processes' changes** reach this one by [`Refresh`]: sent when another process
//! announces a change (`crate::redis::follow_key_rings`), and by a worker that meets a token
//! under a kid it lacks (at most one read of the share per tenant per
//! [`UNKNOWN_KID_REFRESH_EVERY`]); and by the periodic refresh of every held ring
//! ([`KeyManagerConfig::refresh_every`]), for an announcement that was lost. A share that lost
//! a ring (a Redis restarted empty) gets the held keys back at the next load.
//!
//! **Publish, then activate**: with an [`KeyManagerConfig::activation_delay`], a rotation
//! stores the new key as pending (it opens at once, seals later) and every manager promotes it
//! by the clock when its time comes, so no worker seals under a key another has not heard of.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use actix::{
    Actor, ActorFutureExt, AsyncContext, AtomicResponse, Context, Handler, Message, WeakRecipient,
    WrapFuture,
};

use super::claims::unix_secs;
use super::codec::StateKey;
use super::keyring::{KeyRing, KeyRings, Pending};
use super::master_key::MasterKey;
use super::policy::SealPolicy;
use super::share::{KeyShare, ShareError};
use super::vault::{Next, RingError, Updated, Vault};

/// How often, by default, the `KeyManager` rotates keys that are too old or too used and
/// prunes retired ones ([`KeyManagerConfig::tick_every`]).
pub const TICK_EVERY: Duration = Duration::from_secs(60);

/// The default tick under its first name, from when the tick only pruned.
pub const PRUNE_EVERY: Duration = TICK_EVERY;

/// How old, by default, a tenant's active key may get before it is replaced
/// ([`KeyManagerConfig::rotate_every`]).
pub const ROTATE_EVERY: Duration = Duration::from_secs(6 * 60 * 60);

/// How a [`KeyManager`] rotates keys, beyond what its [`SealPolicy`] says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyManagerConfig {
    /// Rotate a tenant's active key once it is this old. Default [`ROTATE_EVERY`] (6 h).
    /// Checked on the tick, so a key lives up to `tick_every` longer. Keep it well above the
    /// grace: every rotation leaves the old key verifying for the grace, so a ring holds about
    /// `grace / rotate_every + 1` keys.
    pub rotate_every: Duration,
    /// How often the manager checks keys for rotation and prunes retired ones. Default
    /// [`TICK_EVERY`] (60 s); anything under 10 ms counts as 10 ms.
    pub tick_every: Duration,
    /// Reload every held ring from the share this often (on the tick), so a change another
    /// process made reaches this one even when its announcement was lost. `None` (the
    /// default) never does: right for a share only this process writes.
    pub refresh_every: Option<Duration>,
    /// How long a rotated-in key is published before it seals (publish-then-activate): long
    /// enough for every process of the fleet to hear of it, so none meets a token under a key
    /// it lacks. Zero (the default) seals with it at once: right for a share only this
    /// process uses.
    pub activation_delay: Duration,
}

/// The shortest tick: a zero interval would spin the manager's thread.
const MIN_TICK: Duration = Duration::from_millis(10);

impl Default for KeyManagerConfig {
    fn default() -> Self {
        KeyManagerConfig {
            rotate_every: ROTATE_EVERY,
            tick_every: TICK_EVERY,
            refresh_every: None,
            activation_delay: Duration::ZERO,
        }
    }
}

/// How the share is doing, as `/metrics` and `/readyz` read it: how many reads and writes
/// failed since the manager started, why the last call failed if no call succeeded since
/// (the share is down), and how many rings were reloaded, by reason. The wiring takes it
/// before starting the manager. Cheap to clone; reading a count is one atomic load.
#[derive(Debug, Clone, Default)]
pub struct ShareHealth(Arc<HealthInner>);

#[derive(Debug, Default)]
struct HealthInner {
    failures: AtomicU64,
    failing: Mutex<Option<String>>,
    refreshes: [AtomicU64; RefreshReason::COUNT],
}

impl ShareHealth {
    /// Failed reads and writes so far.
    pub fn failures(&self) -> u64 {
        self.0.failures.load(Ordering::Relaxed)
    }

    /// Why the share's last call failed, while no call has succeeded since: the share is
    /// down, and the manager serves the rings it holds.
    pub fn failing(&self) -> Option<String> {
        self.lock().clone()
    }

    /// Rings reloaded from the share so far for `reason`.
    pub fn refreshes(&self, reason: RefreshReason) -> u64 {
        self.0.refreshes[reason as usize].load(Ordering::Relaxed)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<String>> {
        self.0.failing.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts one more failure, for `why`; returns the new count.
    fn failed(&self, why: String) -> u64 {
        *self.lock() = Some(why);
        self.0
            .failures
            .fetch_add(1, Ordering::Relaxed)
            .saturating_add(1)
    }

    /// A call succeeded: the share is up.
    fn answered(&self) {
        let mut failing = self.lock();
        if failing.is_some() {
            tracing::info!("the requestState key share answers again");
            *failing = None;
        }
    }

    fn refreshed(&self, reason: RefreshReason) {
        self.0.refreshes[reason as usize].fetch_add(1, Ordering::Relaxed);
    }
}

/// Why a ring was reloaded from the share.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RefreshReason {
    /// Another process announced that it changed the ring.
    Announced,
    /// The periodic refresh, the fallback for a lost announcement.
    Periodic,
    /// A worker met a token sealed under a kid it does not hold.
    UnknownKid,
}

impl RefreshReason {
    const COUNT: usize = 3;

    /// Every reason, for `/metrics`.
    pub const ALL: [RefreshReason; RefreshReason::COUNT] = [
        RefreshReason::Announced,
        RefreshReason::Periodic,
        RefreshReason::UnknownKid,
    ];

    /// The `reason` label on `/metrics`.
    pub fn label(self) -> &'static str {
        match self {
            RefreshReason::Announced => "announced",
            RefreshReason::Periodic => "periodic",
            RefreshReason::UnknownKid => "unknown_kid",
        }
    }
}

/// How often, at most, a tenant's ring is reloaded because a worker met an unknown kid: a
/// client can present any kid, and must not make the manager read the share per request.
pub const UNKNOWN_KID_REFRESH_EVERY: Duration = Duration::from_secs(1);

/// Work on the share that owns what it needs, so it runs without borrowing the manager; the
/// manager applies its outcome when it is done.
type ShareWork<T> = Pin<Box<dyn Future<Output = T>>>;

/// Owns the key rings of every tenant and tells subscribers when they change.
///
/// Start one per process on its own Arbiter, before the HTTP server:
/// `KeyManager::start_in_arbiter(&arbiter.handle(), move |_| KeyManager::new(policy, share, master))`.
pub struct KeyManager {
    policy: SealPolicy,
    config: KeyManagerConfig,
    vault: Vault,
    /// Copy-on-write: changed with `Arc::make_mut`, so handing out a snapshot is free and a
    /// change copies the map (of `Arc`s) only while an older snapshot is still held.
    rings: KeyRings,
    /// Tenants whose rotated-out keys must verify longer (or shorter) than the policy's
    /// `ttl + clock_skew`, set by [`SetTenantGrace`].
    tenant_grace: HashMap<String, Duration>,
    /// Held weakly: a subscriber whose owner let it go (its HTTP worker stopped) stops and
    /// is forgotten at the next broadcast.
    subscribers: Vec<WeakRecipient<KeyRingsChanged>>,
    /// The share's failures and reloads.
    health: ShareHealth,
    /// When each tenant's ring was last reloaded for an unknown kid.
    kid_refreshed_at: HashMap<String, Instant>,
    /// The unix second of the last periodic refresh.
    refreshed_at: u64,
    /// The published keys a wake-up is scheduled for.
    activations: HashSet<String>,
}

impl KeyManager {
    /// A manager with no rings yet and the default [`KeyManagerConfig`]. `policy` sets how
    /// long a rotated-out key keeps verifying (`ttl + clock_skew`) unless the tenant has its
    /// own grace; `share` is where rings are loaded from and stored to, each key wrapped
    /// under `master`.
    pub fn new(policy: SealPolicy, share: Arc<dyn KeyShare>, master: MasterKey) -> KeyManager {
        KeyManager::with_config(policy, KeyManagerConfig::default(), share, master)
    }

    /// [`KeyManager::new`] with rotation settings of your own.
    pub fn with_config(
        policy: SealPolicy,
        config: KeyManagerConfig,
        share: Arc<dyn KeyShare>,
        master: MasterKey,
    ) -> KeyManager {
        KeyManager {
            policy,
            config,
            vault: Vault::new(share, master),
            rings: KeyRings::default(),
            tenant_grace: HashMap::new(),
            subscribers: Vec::new(),
            health: ShareHealth::default(),
            kid_refreshed_at: HashMap::new(),
            refreshed_at: unix_secs(SystemTime::now()),
            activations: HashSet::new(),
        }
    }

    /// How the share is doing, to read while the manager runs.
    pub fn share_health(&self) -> ShareHealth {
        self.health.clone()
    }

    /// Running `decide` on `tenant`'s ring through [`Vault::update`]. It is given the stored
    /// ring; if the share lacks keys held here (it lost its rings and another process filled
    /// it again) or has no ring at all, it is given the held keys too, and what it decides is
    /// written even if it keeps it: the share gets back every key a state in flight may need.
    fn update_work(
        &self,
        tenant: &str,
        mut decide: impl FnMut(Option<KeyRing>) -> Next + 'static,
    ) -> ShareWork<Result<Updated, RingError>> {
        let vault = self.vault.clone();
        let held = self.rings.get(tenant).cloned();
        let tenant = tenant.to_owned();
        let now = unix_secs(SystemTime::now());
        let grace = self.grace_for(&tenant, None).as_secs();
        Box::pin(async move {
            vault
                .update(&tenant, |stored| {
                    // A published key whose time has come seals, here as everywhere.
                    let stored = stored.map(|ring| ring.promoted_or_same(now));
                    let (current, restored) = match (stored, held.as_deref()) {
                        (Some(stored), Some(held)) => match stored.with_lost_keys(held, now, grace)
                        {
                            Some(merged) => (Some(merged), true),
                            None => (Some(stored), false),
                        },
                        (stored @ Some(_), None) => (stored, false),
                        (None, held) => (held.cloned(), held.is_some()),
                    };
                    match decide(current) {
                        Next::Keep(ring) if restored => Next::Write(ring),
                        next => next,
                    }
                })
                .await
        })
    }

    /// Reloading `tenant`'s ring from the share (and giving the share back any key it lost).
    fn refresh_work(&self, tenant: &str) -> ShareWork<Result<Updated, RingError>> {
        let now = unix_secs(SystemTime::now());
        self.update_work(tenant, move |current| match current {
            Some(ring) => Next::Keep(ring),
            None => Next::Write(fresh_ring(now)),
        })
    }

    /// Finding `tenant`'s ring in the share, or storing a new one with a fresh key there.
    fn ensure_work(&self, tenant: &str) -> ShareWork<Result<Updated, RingError>> {
        let now = unix_secs(SystemTime::now());
        self.update_work(tenant, move |current| match current {
            Some(ring) => Next::Keep(ring),
            None => Next::Write(fresh_ring(now)),
        })
    }

    /// Applies what [`KeyManager::ensure_work`] found: the tenant's ring, held and pushed.
    fn ensured(
        &mut self,
        tenant: &str,
        outcome: Result<Updated, RingError>,
    ) -> Result<Arc<KeyRing>, RingError> {
        let updated = outcome.map_err(|error| self.failed(tenant, error))?;
        self.health.answered();
        if updated.wrote {
            tracing::info!(
                tenant,
                kid = updated.ring.active().kid(),
                "created requestState key ring"
            );
        }
        let ring = self.adopt(tenant, updated.ring);
        self.broadcast();
        Ok(ring)
    }

    /// How long `tenant`'s rotated-out key keeps verifying: its registered grace, else the
    /// policy's `ttl + clock_skew`; a longer `requested` one wins. Never shorter than the
    /// default, so a caller cannot cut off tokens that are still live.
    fn grace_for(&self, tenant: &str, requested: Option<Duration>) -> Duration {
        let default = self
            .tenant_grace
            .get(tenant)
            .copied()
            .unwrap_or_else(|| self.policy.ttl.saturating_add(self.policy.clock_skew));
        requested.map_or(default, |grace| grace.max(default))
    }

    /// Giving `tenant` a new active key in the share at unix second `now`, unless `if_kid`
    /// is set and is no longer the stored active kid; the old key verifies for `grace`.
    fn rotate_work(
        &self,
        tenant: &str,
        if_kid: Option<String>,
        grace: Duration,
        now: u64,
    ) -> ShareWork<Result<Updated, RingError>> {
        let log_tenant = tenant.to_owned();
        let delay = self.config.activation_delay.as_secs();
        // The share is the truth: another process may have rotated since we last looked. A
        // share that lost the ring gets ours back, rotated.
        self.update_work(tenant, move |current| match (current, if_kid.as_deref()) {
            // Already rotated, by an earlier request or another process: keep it.
            (Some(current), Some(wanted)) if current.active().kid() != wanted => {
                Next::Keep(current)
            }
            // A rotation is under way: its key is published and seals soon.
            (Some(current), _) if current.pending().is_some() => Next::Keep(current),
            (Some(current), _) => {
                let old = current.active();
                tracing::info!(
                    tenant = %log_tenant,
                    retired_kid = old.kid(),
                    age_secs = now.saturating_sub(old.created_at()),
                    seals = old.seals(),
                    "rotating requestState key"
                );
                if delay == 0 {
                    let retire_after = now.saturating_add(grace.as_secs());
                    return Next::Write(current.rotated(fresh_key(now), retire_after).pruned(now));
                }
                let activates_at = now.saturating_add(delay);
                Next::Write(current.pruned(now).with_pending(Pending {
                    key: Arc::new(fresh_key(activates_at)),
                    activates_at,
                    retire_previous_after: activates_at.saturating_add(grace.as_secs()),
                }))
            }
            (None, _) => Next::Write(fresh_ring(now)),
        })
    }

    /// Storing `tenant`'s ring without the keys retired before unix second `now`.
    fn prune_work(&self, tenant: &str, now: u64) -> ShareWork<Result<Updated, RingError>> {
        self.update_work(tenant, move |current| match current {
            Some(ring) if ring.has_retired(now) => Next::Write(ring.pruned(now)),
            Some(ring) => Next::Keep(ring),
            None => Next::Write(fresh_ring(now)),
        })
    }

    /// Applies a rotation's outcome: the active kid after it, and whether the held rings
    /// changed. Does not broadcast.
    fn rotated(
        &mut self,
        tenant: &str,
        outcome: Result<Updated, RingError>,
    ) -> Result<(String, bool), RingError> {
        let updated = outcome.map_err(|error| self.failed(tenant, error))?;
        let kid = match updated.ring.pending() {
            Some(pending) => pending.key.kid().to_owned(),
            None => updated.ring.active().kid().to_owned(),
        };
        if updated.wrote {
            tracing::info!(tenant, kid = %kid, "rotated requestState key");
        }
        Ok((kid, self.apply(tenant, updated)))
    }

    /// Holds what the share now has for `tenant` if it differs from what is held; returns
    /// whether it did.
    fn apply(&mut self, tenant: &str, updated: Updated) -> bool {
        self.health.answered();
        let differs = self
            .rings
            .get(tenant)
            .is_none_or(|held| !held.same_keys(&updated.ring));
        if updated.wrote || differs {
            self.adopt(tenant, updated.ring);
            return true;
        }
        false
    }

    /// Holds `ring` as `tenant`'s, keeping the held copies (and seal counts) of its keys.
    fn adopt(&mut self, tenant: &str, ring: KeyRing) -> Arc<KeyRing> {
        let ring = ring.promoted_or_same(unix_secs(SystemTime::now()));
        let ring = match self.rings.get(tenant) {
            Some(held) => ring.reusing(held),
            None => ring,
        };
        let ring = Arc::new(ring);
        Arc::make_mut(&mut self.rings).insert(tenant.to_owned(), Arc::clone(&ring));
        ring
    }

    /// Counts and logs a failure of the share; the held rings stay as they are.
    fn failed(&mut self, tenant: &str, error: RingError) -> RingError {
        let failures = self.health.failed(ErrorChain(&error).to_string());
        tracing::warn!(
            tenant,
            error = %ErrorChain(&error),
            failures,
            "the requestState key share failed; serving the key rings held"
        );
        error
    }

    /// The periodic work at unix second `now`, one tenant after another: rotating every held
    /// key that is older than `rotate_every` or used up, pruning retired keys, and, every
    /// `refresh_every`, reloading the other rings. Stops at the first tenant the share is
    /// unavailable for.
    fn tick_work(&mut self, now: u64) -> ShareWork<Vec<(String, Result<Updated, RingError>)>> {
        let max_age = self.config.rotate_every.as_secs();
        let refresh = self
            .config
            .refresh_every
            .is_some_and(|every| now.saturating_sub(self.refreshed_at) >= every.as_secs().max(1));
        if refresh {
            self.refreshed_at = now;
        }
        let work: Vec<(String, ShareWork<Result<Updated, RingError>>)> = self
            .rings
            .iter()
            .filter_map(|(tenant, ring)| {
                let work = if ring.due_for_rotation(now, max_age) {
                    let kid = ring.active().kid().to_owned();
                    let grace = self.grace_for(tenant, None);
                    self.rotate_work(tenant, Some(kid), grace, now)
                } else if ring.has_retired(now) {
                    self.prune_work(tenant, now)
                } else if refresh {
                    self.health.refreshed(RefreshReason::Periodic);
                    self.refresh_work(tenant)
                } else {
                    return None;
                };
                Some((tenant.clone(), work))
            })
            .collect();
        Box::pin(async move {
            let mut outcomes = Vec::with_capacity(work.len());
            for (tenant, work) in work {
                let outcome = work.await;
                // An unreachable share fails every tenant alike, each after its own timeout:
                // the rest wait for the next tick rather than hold the manager that long.
                let unreachable =
                    matches!(outcome, Err(RingError::Share(ShareError::Unavailable(_))));
                outcomes.push((tenant, outcome));
                if unreachable {
                    break;
                }
            }
            outcomes
        })
    }

    /// Applies the tick's outcomes, prunes what is held, and broadcasts once if anything
    /// changed.
    fn ticked(&mut self, now: u64, outcomes: Vec<(String, Result<Updated, RingError>)>) {
        let mut changed = false;
        for (tenant, outcome) in outcomes {
            match outcome {
                Ok(updated) => changed |= self.apply(&tenant, updated),
                Err(error) => {
                    self.failed(&tenant, error);
                }
            }
        }
        // Also when the share could not take the pruned ring: a retired key opens nothing.
        changed |= self.prune_held(now);
        changed |= self.promote_held(now);
        if changed {
            self.broadcast();
        }
    }

    /// Drops the verify-only keys retired before unix second `now` from the held rings;
    /// returns whether any went. Does not broadcast.
    fn prune_held(&mut self, now: u64) -> bool {
        let stale: Vec<String> = self
            .rings
            .iter()
            .filter(|(_, ring)| ring.has_retired(now))
            .map(|(tenant, _)| tenant.clone())
            .collect();
        if stale.is_empty() {
            return false;
        }
        let rings = Arc::make_mut(&mut self.rings);
        for tenant in &stale {
            if let Some(ring) = rings.get_mut(tenant) {
                *ring = Arc::new(ring.pruned(now));
            }
        }
        tracing::debug!(tenants = stale.len(), "pruned retired requestState keys");
        true
    }

    /// Has every held ring whose published key's time has come seal with it; returns whether
    /// any did. Does not broadcast. No write: every process promotes alike, by the clock.
    fn promote_held(&mut self, now: u64) -> bool {
        let due: Vec<(String, KeyRing)> = self
            .rings
            .iter()
            .filter_map(|(tenant, ring)| Some((tenant.clone(), ring.promoted(now)?)))
            .collect();
        if due.is_empty() {
            return false;
        }
        let rings = Arc::make_mut(&mut self.rings);
        for (tenant, ring) in due {
            tracing::info!(
                tenant,
                kid = ring.active().kid(),
                "requestState key activated"
            );
            rings.insert(tenant, Arc::new(ring));
        }
        true
    }

    /// Wakes the manager when each held ring's published key is due to seal, so it seals on
    /// time rather than at the next tick.
    fn schedule_activations(&mut self, ctx: &mut Context<Self>) {
        let now = unix_secs(SystemTime::now());
        for ring in self.rings.values() {
            let Some(pending) = ring.pending() else {
                continue;
            };
            if !self.activations.insert(pending.key.kid().to_owned()) {
                continue;
            }
            let wait = Duration::from_secs(pending.activates_at.saturating_sub(now));
            ctx.run_later(wait, |act, _| {
                let now = unix_secs(SystemTime::now());
                if act.promote_held(now) {
                    act.broadcast();
                }
                let rings = &act.rings;
                act.activations.retain(|kid| {
                    rings
                        .values()
                        .any(|r| r.pending().is_some_and(|p| p.key.kid() == kid))
                });
            });
        }
    }

    /// Pushes the current snapshot to every live subscriber, forgetting the dead ones.
    fn broadcast(&mut self) {
        let rings = &self.rings;
        self.subscribers
            .retain(|subscriber| match subscriber.upgrade() {
                Some(live) if live.connected() => {
                    live.do_send(KeyRingsChanged(Arc::clone(rings)));
                    true
                }
                _ => false,
            });
    }
}

/// A new key, stamped as made at unix second `now`.
fn fresh_key(now: u64) -> StateKey {
    StateKey::generate().with_created_at(now)
}

/// A ring of one new key, made at unix second `now`.
fn fresh_ring(now: u64) -> KeyRing {
    KeyRing::new(fresh_key(now))
}

/// An error and its causes, `: `-separated, for a log line.
struct ErrorChain<'a>(&'a (dyn std::error::Error + 'static));

impl fmt::Display for ErrorChain<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)?;
        let mut source = self.0.source();
        while let Some(cause) = source {
            write!(f, ": {cause}")?;
            source = cause.source();
        }
        Ok(())
    }
}

impl fmt::Debug for KeyManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyManager")
            .field("policy", &self.policy)
            .field("config", &self.config)
            .field("tenants", &self.rings.len())
            .field("tenant_grace", &self.tenant_grace)
            .field("subscribers", &self.subscribers.len())
            .field("share_failures", &self.health.failures())
            .finish_non_exhaustive()
    }
}

impl Actor for KeyManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(self.config.tick_every.max(MIN_TICK), |act, ctx| {
            let now = unix_secs(SystemTime::now());
            // `wait`: no message is handled until the tick's share work is done and applied.
            ctx.wait(
                act.tick_work(now)
                    .into_actor(act)
                    .map(move |outcomes, act, ctx| {
                        act.ticked(now, outcomes);
                        act.schedule_activations(ctx);
                    }),
            );
        });
    }
}

/// Makes sure `tenant` has a ring (loading it from the share, or storing a new one with a
/// fresh key there) and returns it. Fails only when the tenant has no ring held and the share
/// could not give or take one.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Arc<KeyRing>, RingError>")]
pub struct EnsureTenant {
    /// The tenant slug.
    pub tenant: String,
}

impl Handler<EnsureTenant> for KeyManager {
    type Result = AtomicResponse<Self, Result<Arc<KeyRing>, RingError>>;

    fn handle(&mut self, msg: EnsureTenant, _ctx: &mut Self::Context) -> Self::Result {
        if let Some(ring) = self.rings.get(&msg.tenant) {
            return AtomicResponse::new(Box::pin(actix::fut::ready(Ok(Arc::clone(ring)))));
        }
        let work = self.ensure_work(&msg.tenant);
        AtomicResponse::new(Box::pin(work.into_actor(self).map(
            move |outcome, act, ctx| {
                let ensured = act.ensured(&msg.tenant, outcome);
                act.schedule_activations(ctx);
                ensured
            },
        )))
    }
}

/// Gives `tenant` a new active key; the previous one keeps verifying for the grace. Returns
/// the tenant's active kid afterwards. A tenant with no ring gets a fresh one. Fails, and
/// changes nothing here, when the share could not store the new ring.
///
/// A worker that finds [`KeyRing::needs_rotation`] after sealing should `do_send` this with
/// `if_kid: Some(<the kid it sealed with>)` and `grace: None`, and never wait for the reply.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<String, RingError>")]
pub struct Rotate {
    /// The tenant slug.
    pub tenant: String,
    /// Rotate only if this is still the tenant's active kid; otherwise change nothing (it was
    /// already rotated, e.g. at the request of another worker). `None` rotates regardless.
    pub if_kid: Option<String>,
    /// How long the rotated-out key keeps verifying. `None` is the tenant's grace from
    /// [`SetTenantGrace`], else the policy's `ttl + clock_skew`. A grace shorter than that
    /// default is raised to it, so live tokens are never cut off.
    pub grace: Option<Duration>,
}

impl Handler<Rotate> for KeyManager {
    type Result = AtomicResponse<Self, Result<String, RingError>>;

    fn handle(&mut self, msg: Rotate, _ctx: &mut Self::Context) -> Self::Result {
        let grace = self.grace_for(&msg.tenant, msg.grace);
        let now = unix_secs(SystemTime::now());
        let work = self.rotate_work(&msg.tenant, msg.if_kid, grace, now);
        AtomicResponse::new(Box::pin(work.into_actor(self).map(
            move |outcome, act, ctx| {
                let (kid, changed) = act.rotated(&msg.tenant, outcome)?;
                if changed {
                    act.broadcast();
                    act.schedule_activations(ctx);
                }
                Ok(kid)
            },
        )))
    }
}

/// Reloads `tenant`'s ring from the share, holds it and pushes it to the workers if it
/// changed, and returns it; `None` for a tenant this process holds no ring of (it loads one
/// at its first request). Sent by `follow_key_rings` when another process announces a
/// change, and by a worker that met a token sealed under a kid it does not hold.
///
/// For an unknown kid the share is read at most once per [`UNKNOWN_KID_REFRESH_EVERY`] per
/// tenant, and not at all if the held ring already has the kid (another request's refresh
/// found it): the ring held is returned instead.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Result<Option<Arc<KeyRing>>, RingError>")]
pub struct Refresh {
    /// The tenant slug.
    pub tenant: String,
    /// Why; for [`RefreshReason::UnknownKid`], the kid the worker met.
    pub reason: RefreshReason,
    /// The kid met, with [`RefreshReason::UnknownKid`].
    pub kid: Option<String>,
}

impl Handler<Refresh> for KeyManager {
    type Result = AtomicResponse<Self, Result<Option<Arc<KeyRing>>, RingError>>;

    fn handle(&mut self, msg: Refresh, _ctx: &mut Self::Context) -> Self::Result {
        let held = self.rings.get(&msg.tenant).cloned();
        let answer = |ring| AtomicResponse::new(Box::pin(actix::fut::ready(Ok(ring))));
        let Some(ring) = held else {
            return answer(None);
        };
        if msg.reason == RefreshReason::UnknownKid {
            let has_kid = msg
                .kid
                .as_deref()
                .is_some_and(|kid| ring.find(kid).is_some());
            let recently = self
                .kid_refreshed_at
                .get(&msg.tenant)
                .is_some_and(|at| at.elapsed() < UNKNOWN_KID_REFRESH_EVERY);
            if has_kid || recently {
                return answer(Some(ring));
            }
            self.kid_refreshed_at
                .insert(msg.tenant.clone(), Instant::now());
        }
        self.health.refreshed(msg.reason);
        let work = self.refresh_work(&msg.tenant);
        AtomicResponse::new(Box::pin(work.into_actor(self).map(
            move |outcome, act, ctx| {
                let updated = outcome.map_err(|error| act.failed(&msg.tenant, error))?;
                if act.apply(&msg.tenant, updated) {
                    act.broadcast();
                    act.schedule_activations(ctx);
                }
                Ok(act.rings.get(&msg.tenant).cloned())
            },
        )))
    }
}

/// Sets how long `tenant`'s rotated-out keys keep verifying, for every later rotation of
/// that tenant (automatic or by [`Rotate`] without a grace): its own state TTL plus the clock
/// skew, for a tenant whose TTL differs from the policy's. Send it at start-up, before the
/// first rotation.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct SetTenantGrace {
    /// The tenant slug.
    pub tenant: String,
    /// How long a rotated-out key keeps verifying.
    pub grace: Duration,
}

impl Handler<SetTenantGrace> for KeyManager {
    type Result = ();

    fn handle(&mut self, msg: SetTenantGrace, _ctx: &mut Self::Context) {
        self.tenant_grace.insert(msg.tenant, msg.grace);
    }
}

/// Registers a recipient for every future [`KeyRingsChanged`]; returns the current snapshot.
///
/// The same snapshot is also pushed to the recipient at once, ahead of any later change. The
/// reply and the pushes travel separately (a reply future vs. the mailbox), so a push can be
/// handled before the reply: a subscriber should treat the **latest `KeyRingsChanged`** as
/// the truth and use the reply only if no push has arrived yet.
#[derive(Debug, Message)]
#[rtype(result = "KeyRings")]
pub struct Subscribe(pub WeakRecipient<KeyRingsChanged>);

impl Handler<Subscribe> for KeyManager {
    type Result = KeyRings;

    fn handle(&mut self, msg: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        if let Some(live) = msg.0.upgrade() {
            live.do_send(KeyRingsChanged(Arc::clone(&self.rings)));
            self.subscribers.push(msg.0);
        }
        Arc::clone(&self.rings)
    }
}

/// The current snapshot of every tenant's ring.
#[derive(Debug, Clone, Copy, Message)]
#[rtype(result = "KeyRings")]
pub struct Snapshot;

impl Handler<Snapshot> for KeyManager {
    type Result = KeyRings;

    fn handle(&mut self, _msg: Snapshot, _ctx: &mut Self::Context) -> Self::Result {
        Arc::clone(&self.rings)
    }
}

/// Pushed to every subscriber after any ring changes: the new snapshot, whole.
#[derive(Debug, Clone, Message)]
#[rtype(result = "()")]
pub struct KeyRingsChanged(pub KeyRings);

#[cfg(test)]
mod tests {
    use actix::Recipient;

    use super::*;
    use crate::sealing::codec::ROTATE_AFTER_SEALS;
    use crate::sealing::share::{LocalKeyShare, Stored, Version};
    use crate::sealing::wrapped::{UnwrapError, WrappedRing};
    use actix::{ActorContext, Arbiter};
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
    use tokio::time::timeout;

    const WAIT: Duration = Duration::from_secs(5);
    /// The default policy's `ttl + clock_skew`.
    const GRACE: Duration = Duration::from_secs(300 + 30);
    const HOUR: u64 = 3_600;

    /// A subscriber that forwards every snapshot to the test; stops after the first one if
    /// `one_shot`.
    struct Collector {
        tx: UnboundedSender<KeyRings>,
        one_shot: bool,
    }

    impl Actor for Collector {
        type Context = Context<Self>;
    }

    impl Handler<KeyRingsChanged> for Collector {
        type Result = ();

        fn handle(&mut self, msg: KeyRingsChanged, ctx: &mut Self::Context) {
            let _ = self.tx.send(msg.0);
            if self.one_shot {
                ctx.stop();
            }
        }
    }

    fn collector(one_shot: bool) -> (Recipient<KeyRingsChanged>, UnboundedReceiver<KeyRings>) {
        let (tx, rx) = unbounded_channel();
        (Collector { tx, one_shot }.start().recipient(), rx)
    }

    /// `tenant`'s ring, ensured through the actor.
    async fn ensured(km: &actix::Addr<KeyManager>, tenant: &str) -> Arc<KeyRing> {
        let ensure = EnsureTenant {
            tenant: tenant.to_owned(),
        };
        km.send(ensure).await.unwrap().unwrap()
    }

    /// The active kid of `tenant`'s ring, ensured through the actor.
    async fn ensured_kid(km: &actix::Addr<KeyManager>, tenant: &str) -> String {
        ensured(km, tenant).await.active().kid().to_owned()
    }

    async fn next(rx: &mut UnboundedReceiver<KeyRings>) -> KeyRings {
        timeout(WAIT, rx.recv()).await.unwrap().unwrap()
    }

    fn manager() -> KeyManager {
        KeyManager::new(
            SealPolicy::default(),
            Arc::new(LocalKeyShare::new()),
            MasterKey::generate(),
        )
    }

    /// What the handlers do, called directly: the share work, then applying its outcome.
    impl KeyManager {
        async fn ensure(&mut self, tenant: &str) -> Arc<KeyRing> {
            if let Some(ring) = self.rings.get(tenant) {
                return Arc::clone(ring);
            }
            let outcome = self.ensure_work(tenant).await;
            self.ensured(tenant, outcome).unwrap()
        }

        async fn rotate(
            &mut self,
            tenant: &str,
            if_kid: Option<&str>,
            grace: Duration,
            now: u64,
        ) -> String {
            let outcome = self
                .rotate_work(tenant, if_kid.map(str::to_owned), grace, now)
                .await;
            let (kid, changed) = self.rotated(tenant, outcome).unwrap();
            if changed {
                self.broadcast();
            }
            kid
        }

        async fn tick(&mut self, now: u64) {
            let outcomes = self.tick_work(now).await;
            self.ticked(now, outcomes);
        }
    }

    #[actix_rt::test]
    async fn subscriber_gets_the_snapshot_then_is_pushed_each_change() {
        let arbiter = Arbiter::new();
        let km = KeyManager::start_in_arbiter(&arbiter.handle(), |_| manager());
        let (recipient, mut rx) = collector(false);

        let snapshot = km.send(Subscribe(recipient.downgrade())).await.unwrap();
        assert!(snapshot.is_empty());
        assert!(next(&mut rx).await.is_empty());

        let ring = ensured(&km, "acme").await;
        let pushed = next(&mut rx).await;
        assert_eq!(pushed["acme"].active().kid(), ring.active().kid());

        let old_kid = ring.active().kid().to_owned();
        let new_kid = rotate_now(&km).await;
        assert_ne!(new_kid, old_kid);
        let pushed = next(&mut rx).await;
        assert_eq!(pushed["acme"].active().kid(), new_kid);
        assert!(pushed["acme"].find(&old_kid).is_some());

        let snapshot = km.send(Snapshot).await.unwrap();
        assert_eq!(snapshot["acme"].active().kid(), new_kid);
        arbiter.stop();
    }

    #[actix_rt::test]
    async fn ensuring_a_known_tenant_returns_its_ring_and_pushes_nothing() {
        let km = manager().start();
        let (recipient, mut rx) = collector(false);
        km.send(Subscribe(recipient.downgrade())).await.unwrap();
        next(&mut rx).await;
        let tenant = "acme".to_owned();
        let first = ensured(&km, &tenant).await;
        next(&mut rx).await;
        let again = ensured(&km, &tenant).await;
        assert!(Arc::ptr_eq(&first, &again));
        // Pushes arrive in order: the next one must be the rotation's, not a second ensure's.
        let kid = km
            .send(Rotate {
                tenant,
                if_kid: None,
                grace: None,
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(next(&mut rx).await["acme"].active().kid(), kid);
    }

    #[actix_rt::test]
    async fn a_tenant_already_in_the_share_is_loaded_not_recreated() {
        let ring = KeyRing::new(StateKey::generate());
        let mut km = manager();
        km.vault.replace("acme", &ring).await.unwrap();
        assert_eq!(km.ensure("acme").await.active().kid(), ring.active().kid());
    }

    #[actix_rt::test]
    async fn rotation_keeps_the_old_key_for_ttl_plus_skew_then_prune_drops_it() {
        let mut km = manager();
        let old_kid = km.ensure("acme").await.active().kid().to_owned();
        let new_kid = km.rotate("acme", None, GRACE, 1_000).await;
        let grace = GRACE.as_secs();

        km.tick(1_000 + grace).await;
        let ring = &km.rings["acme"];
        assert_eq!(ring.active().kid(), new_kid);
        assert!(ring.find(&old_kid).is_some());

        km.tick(1_000 + grace + 1).await;
        assert!(km.rings["acme"].find(&old_kid).is_none());
        assert!(km
            .vault
            .load("acme")
            .await
            .unwrap()
            .unwrap()
            .find(&old_kid)
            .is_none());
    }

    #[actix_rt::test]
    async fn rotation_prunes_keys_already_retired() {
        let mut km = manager();
        let first = km.ensure("acme").await.active().kid().to_owned();
        let second = km.rotate("acme", None, GRACE, 1_000).await;
        km.rotate("acme", None, GRACE, 1_000 + 331).await;
        let ring = &km.rings["acme"];
        assert!(ring.find(&first).is_none());
        assert!(ring.find(&second).is_some());
    }

    #[actix_rt::test]
    async fn rotating_an_unknown_tenant_creates_its_ring() {
        let mut km = manager();
        let kid = km.rotate("new", None, GRACE, 1_000).await;
        assert_eq!(km.ensure("new").await.active().kid(), kid);
    }

    #[actix_rt::test]
    async fn subscribers_whose_actor_stopped_are_forgotten() {
        let mut km = manager();
        let (recipient, mut rx) = collector(true);
        km.subscribers.push(recipient.downgrade());
        km.ensure("acme").await;
        next(&mut rx).await;
        timeout(WAIT, async {
            while recipient.connected() {
                actix_rt::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        km.broadcast();
        assert!(km.subscribers.is_empty());
    }

    #[actix_rt::test]
    async fn a_subscriber_whose_owner_let_it_go_is_forgotten() {
        let mut km = manager();
        let (recipient, _rx) = collector(false);
        km.subscribers.push(recipient.downgrade());
        drop(recipient);
        timeout(WAIT, async {
            while km.subscribers[0].upgrade().is_some() {
                actix_rt::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        km.broadcast();
        assert!(km.subscribers.is_empty());
    }

    fn manager_rotating_every(rotate_every: Duration) -> KeyManager {
        let config = KeyManagerConfig {
            rotate_every,
            ..KeyManagerConfig::default()
        };
        KeyManager::with_config(
            SealPolicy::default(),
            config,
            Arc::new(LocalKeyShare::new()),
            MasterKey::generate(),
        )
    }

    #[actix_rt::test]
    async fn the_tick_rotates_a_key_once_it_is_six_hours_old_by_default() {
        let mut km = manager();
        let first = km.ensure("acme").await;
        let t0 = first.active().created_at();

        km.tick(t0 + 6 * HOUR - 1).await;
        assert_eq!(km.rings["acme"].active().kid(), first.active().kid());

        km.tick(t0 + 6 * HOUR).await;
        let ring = Arc::clone(&km.rings["acme"]);
        assert_ne!(ring.active().kid(), first.active().kid());
        assert_eq!(ring.active().created_at(), t0 + 6 * HOUR);
        let (old, retire) = &ring.verify_only()[0];
        assert_eq!(old.kid(), first.active().kid());
        assert_eq!(*retire, t0 + 6 * HOUR + GRACE.as_secs());
        let stored = km.vault.load("acme").await.unwrap().unwrap();
        assert_eq!(stored.active().kid(), ring.active().kid());

        // The new key is young: later ticks leave it alone until it too is six hours old.
        km.tick(t0 + 12 * HOUR - 1).await;
        assert_eq!(km.rings["acme"].active().kid(), ring.active().kid());
    }

    #[actix_rt::test]
    async fn rotate_every_sets_the_age_at_which_the_tick_rotates() {
        let mut km = manager_rotating_every(Duration::from_secs(600));
        let first = km.ensure("acme").await;
        let t0 = first.active().created_at();
        km.tick(t0 + 599).await;
        assert_eq!(km.rings["acme"].active().kid(), first.active().kid());
        km.tick(t0 + 600).await;
        assert_ne!(km.rings["acme"].active().kid(), first.active().kid());
    }

    #[actix_rt::test]
    async fn the_tick_rotates_a_used_up_key_however_young() {
        let mut km = manager();
        let first = km.ensure("acme").await;
        let t0 = first.active().created_at();
        first.active().add_seals_for_test(ROTATE_AFTER_SEALS - 1);
        km.tick(t0).await;
        assert_eq!(km.rings["acme"].active().kid(), first.active().kid());

        first.active().add_seals_for_test(1);
        km.tick(t0).await;
        let ring = &km.rings["acme"];
        assert_ne!(ring.active().kid(), first.active().kid());
        assert!(!ring.needs_rotation());
        assert!(ring.find(first.active().kid()).is_some());
    }

    #[actix_rt::test]
    async fn a_tick_that_rotates_many_tenants_pushes_one_snapshot_and_an_idle_tick_none() {
        let mut km = manager();
        let (recipient, mut rx) = collector(false);
        km.subscribers.push(recipient.downgrade());
        let a = km.ensure("a").await;
        let b = km.ensure("b").await;
        next(&mut rx).await;
        next(&mut rx).await;

        let t0 = a.active().created_at().max(b.active().created_at());
        km.tick(t0).await;
        km.tick(t0 + 6 * HOUR).await;
        let pushed = next(&mut rx).await;
        assert_ne!(pushed["a"].active().kid(), a.active().kid());
        assert_ne!(pushed["b"].active().kid(), b.active().kid());
        km.tick(t0 + 6 * HOUR + 60).await;
        assert!(timeout(Duration::from_millis(100), rx.recv())
            .await
            .is_err());
    }

    #[actix_rt::test]
    async fn rotate_with_if_kid_rotates_only_while_that_kid_is_still_active() {
        let mut km = manager();
        let old_kid = km.ensure("acme").await.active().kid().to_owned();
        let new_kid = km.rotate("acme", Some(&old_kid), GRACE, 1_000).await;
        assert_ne!(new_kid, old_kid);
        let ring = Arc::clone(&km.rings["acme"]);

        assert_eq!(
            km.rotate("acme", Some(&old_kid), GRACE, 1_001).await,
            new_kid
        );
        assert!(Arc::ptr_eq(&ring, &km.rings["acme"]));
        assert_eq!(ring.verify_only().len(), 1);

        assert_ne!(
            km.rotate("acme", Some(&new_kid), GRACE, 1_002).await,
            new_kid
        );
    }

    #[actix_rt::test]
    async fn many_workers_asking_to_rotate_the_same_key_cause_one_rotation() {
        let km = manager().start();
        let tenant = "acme".to_owned();
        let old_kid = ensured_kid(&km, &tenant).await;
        let asks = (0..8).map(|_| {
            km.send(Rotate {
                tenant: tenant.clone(),
                if_kid: Some(old_kid.clone()),
                grace: None,
            })
        });
        let kids: Vec<String> = futures_util::future::join_all(asks)
            .await
            .into_iter()
            .map(|kid| kid.unwrap().unwrap())
            .collect();
        assert_ne!(kids[0], old_kid);
        assert!(kids.iter().all(|kid| *kid == kids[0]), "{kids:?}");
        let ring = &km.send(Snapshot).await.unwrap()["acme"];
        assert_eq!(ring.active().kid(), kids[0]);
        assert_eq!(ring.verify_only().len(), 1);
    }

    #[actix_rt::test]
    async fn a_rotation_another_process_already_stored_is_adopted_not_repeated() {
        let mut km = manager();
        let old_kid = km.ensure("acme").await.active().kid().to_owned();
        let theirs = km
            .vault
            .load("acme")
            .await
            .unwrap()
            .unwrap()
            .rotated(StateKey::generate(), 2_000);
        km.vault.replace("acme", &theirs).await.unwrap();

        let kid = km.rotate("acme", Some(&old_kid), GRACE, 1_000).await;
        assert_eq!(kid, theirs.active().kid());
        assert_eq!(km.rings["acme"].active().kid(), kid);
        assert!(km.rings["acme"].find(&old_kid).is_some());
    }

    #[actix_rt::test]
    async fn a_rotate_with_a_longer_grace_keeps_the_old_key_that_long() {
        let km = manager().start();
        let tenant = "acme".to_owned();
        ensured(&km, &tenant).await;
        let before = unix_secs(SystemTime::now());
        km.send(Rotate {
            tenant,
            if_kid: None,
            grace: Some(Duration::from_secs(2 * HOUR)),
        })
        .await
        .unwrap()
        .unwrap();
        let after = unix_secs(SystemTime::now());
        let retire = km.send(Snapshot).await.unwrap()["acme"].verify_only()[0].1;
        assert!((before + 2 * HOUR..=after + 2 * HOUR).contains(&retire));
    }

    #[actix_rt::test]
    async fn a_requested_grace_can_lengthen_but_never_shorten_the_tenants_default() {
        let mut km = manager();
        let hour = Duration::from_secs(HOUR);
        assert_eq!(km.grace_for("acme", None), GRACE);
        assert_eq!(km.grace_for("acme", Some(Duration::from_secs(10))), GRACE);
        assert_eq!(km.grace_for("acme", Some(hour)), hour);

        km.tenant_grace.insert("acme".to_owned(), 2 * hour);
        assert_eq!(km.grace_for("acme", None), 2 * hour);
        assert_eq!(km.grace_for("acme", Some(hour)), 2 * hour);
        assert_eq!(km.grace_for("other", None), GRACE);
    }

    #[actix_rt::test]
    async fn the_tick_rotates_an_old_key_with_the_grace_set_for_its_tenant() {
        let old = KeyRing::new(StateKey::generate().with_created_at(0));
        let old_kid = old.active().kid().to_owned();
        let config = KeyManagerConfig {
            tick_every: Duration::from_millis(20),
            ..KeyManagerConfig::default()
        };
        let km = KeyManager::with_config(
            SealPolicy::default(),
            config,
            Arc::new(LocalKeyShare::new()),
            MasterKey::generate(),
        );
        km.vault.replace("acme", &old).await.unwrap();
        let km = km.start();
        let (recipient, mut rx) = collector(false);
        km.send(Subscribe(recipient.downgrade())).await.unwrap();
        km.send(SetTenantGrace {
            tenant: "acme".to_owned(),
            grace: Duration::from_secs(2 * HOUR),
        })
        .await
        .unwrap();
        let before = unix_secs(SystemTime::now());
        ensured(&km, "acme").await;

        // No request asks for it: the tick alone rotates the key made in 1970.
        let rotated = loop {
            let snapshot = next(&mut rx).await;
            if let Some(ring) = snapshot.get("acme") {
                if ring.active().kid() != old_kid {
                    break Arc::clone(ring);
                }
            }
        };
        let after = unix_secs(SystemTime::now());
        let (key, retire) = &rotated.verify_only()[0];
        assert_eq!(key.kid(), old_kid);
        assert!((before + 2 * HOUR..=after + 2 * HOUR).contains(retire));
    }

    /// A share that can be taken down: every call fails while it is.
    #[derive(Clone, Default)]
    struct Flaky {
        inner: LocalKeyShare,
        down: Arc<std::sync::atomic::AtomicBool>,
    }

    impl Flaky {
        fn set_down(&self, down: bool) {
            self.down.store(down, std::sync::atomic::Ordering::SeqCst);
        }

        fn check(&self) -> Result<(), ShareError> {
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(ShareError::Unavailable("the test took it down".into()));
            }
            Ok(())
        }
    }

    #[async_trait::async_trait]
    impl KeyShare for Flaky {
        async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
            self.check()?;
            self.inner.load(tenant).await
        }

        async fn store(
            &self,
            tenant: &str,
            ring: &WrappedRing,
            expected: Option<Version>,
        ) -> Result<Version, ShareError> {
            self.check()?;
            self.inner.store(tenant, ring, expected).await
        }
    }

    fn manager_over(share: impl KeyShare, master: &MasterKey) -> KeyManager {
        KeyManager::new(SealPolicy::default(), Arc::new(share), master.clone())
    }

    #[actix_rt::test]
    async fn a_rotation_the_share_cannot_store_fails_changes_nothing_and_is_counted() {
        let share = Flaky::default();
        let km = manager_over(share.clone(), &MasterKey::generate());
        let failures = km.share_health();
        let km = km.start();
        let tenant = "acme".to_owned();
        let kid = ensured_kid(&km, &tenant).await;
        share.set_down(true);
        let rotated = km
            .send(Rotate {
                tenant,
                if_kid: None,
                grace: None,
            })
            .await
            .unwrap();
        assert!(matches!(
            rotated,
            Err(RingError::Share(ShareError::Unavailable(_)))
        ));
        assert_eq!(km.send(Snapshot).await.unwrap()["acme"].active().kid(), kid);
        assert_eq!(failures.failures(), 1);
    }

    #[actix_rt::test]
    async fn while_the_share_is_down_held_rings_are_served_and_a_due_rotation_waits_for_it() {
        let share = Flaky::default();
        let mut km = manager_over(share.clone(), &MasterKey::generate());
        let first = km.ensure("acme").await;
        let t0 = first.active().created_at();
        share.set_down(true);

        assert!(Arc::ptr_eq(&km.ensure("acme").await, &first));
        km.tick(t0 + 6 * HOUR).await;
        assert_eq!(km.rings["acme"].active().kid(), first.active().kid());
        assert_eq!(km.health.failures(), 1);

        share.set_down(false);
        km.tick(t0 + 6 * HOUR + 60).await;
        let ring = &km.rings["acme"];
        assert_ne!(ring.active().kid(), first.active().kid());
        assert_eq!(
            km.vault.load("acme").await.unwrap().unwrap().active().kid(),
            ring.active().kid()
        );
    }

    #[actix_rt::test]
    async fn a_tick_stops_at_the_first_tenant_the_share_is_unavailable_for() {
        let share = Flaky::default();
        let mut km = manager_over(share.clone(), &MasterKey::generate());
        let a = km.ensure("a").await;
        km.ensure("b").await;
        share.set_down(true);
        km.tick(a.active().created_at() + 7 * HOUR).await;
        assert_eq!(km.health.failures(), 1);
    }

    #[actix_rt::test]
    async fn a_new_tenant_gets_no_ring_while_the_share_is_down() {
        let share = Flaky::default();
        share.set_down(true);
        let km = manager_over(share, &MasterKey::generate()).start();
        let ensured = km
            .send(EnsureTenant {
                tenant: "acme".to_owned(),
            })
            .await
            .unwrap();
        assert!(ensured.is_err());
        assert!(km.send(Snapshot).await.unwrap().is_empty());
    }

    #[actix_rt::test]
    async fn a_ring_stored_under_another_master_key_is_an_error_and_is_not_replaced() {
        let share = LocalKeyShare::new();
        let mut first = manager_over(share.clone(), &MasterKey::generate());
        let kid = first.ensure("acme").await.active().kid().to_owned();

        let other = manager_over(share.clone(), &MasterKey::generate()).start();
        let ensured = other
            .send(EnsureTenant {
                tenant: "acme".to_owned(),
            })
            .await
            .unwrap();
        assert!(matches!(
            ensured,
            Err(RingError::Unwrap(UnwrapError::WrongMasterKey { .. }))
        ));
        assert_eq!(
            first
                .vault
                .load("acme")
                .await
                .unwrap()
                .unwrap()
                .active()
                .kid(),
            kid,
            "the stored ring is left as it was"
        );
    }

    #[actix_rt::test]
    async fn a_new_manager_over_the_same_share_and_master_key_holds_the_same_keys() {
        let share = LocalKeyShare::new();
        let master = MasterKey::generate();
        let mut before = manager_over(share.clone(), &master);
        let ring = before.ensure("acme").await;
        let mut after = manager_over(share, &master);
        let again = after.ensure("acme").await;
        assert_eq!(again.active().kid(), ring.active().kid());
        assert_eq!(again.active().secret_bytes(), ring.active().secret_bytes());
        assert_eq!(again.active().created_at(), ring.active().created_at());
    }

    #[actix_rt::test]
    async fn two_managers_rotating_at_once_lose_neither_new_key() {
        let share = LocalKeyShare::new();
        let master = MasterKey::generate();
        let (one_arbiter, other_arbiter) = (Arbiter::new(), Arbiter::new());
        let (s1, m1) = (share.clone(), master.clone());
        let one =
            KeyManager::start_in_arbiter(&one_arbiter.handle(), move |_| manager_over(s1, &m1));
        let (s2, m2) = (share.clone(), master.clone());
        let other =
            KeyManager::start_in_arbiter(&other_arbiter.handle(), move |_| manager_over(s2, &m2));
        let ensure = |tenant: &str| EnsureTenant {
            tenant: tenant.to_owned(),
        };
        one.send(ensure("acme")).await.unwrap().unwrap();
        other.send(ensure("acme")).await.unwrap().unwrap();
        let rotate = || Rotate {
            tenant: "acme".to_owned(),
            if_kid: None,
            grace: None,
        };
        let (a, b) = futures_util::future::join(one.send(rotate()), other.send(rotate())).await;
        let (a, b) = (a.unwrap().unwrap(), b.unwrap().unwrap());
        assert_ne!(a, b);
        let stored = manager_over(share, &master).ensure("acme").await;
        assert!(stored.find(&a).is_some(), "{a} was lost");
        assert!(stored.find(&b).is_some(), "{b} was lost");
        one_arbiter.stop();
        other_arbiter.stop();
    }

    #[actix_rt::test]
    async fn a_ring_read_back_from_the_share_keeps_counting_the_seals_made_here() {
        let mut km = manager();
        let first = km.ensure("acme").await;
        let t0 = first.active().created_at();
        km.rotate("acme", None, GRACE, t0).await;
        let active = Arc::clone(&km.rings["acme"]);
        active.active().add_seals_for_test(5);
        // The tick prunes the retired key through the share, and holds the ring it read back.
        km.tick(t0 + GRACE.as_secs() + 1).await;
        let ring = &km.rings["acme"];
        assert!(ring.find(first.active().kid()).is_none());
        assert_eq!(ring.active().kid(), active.active().kid());
        assert_eq!(ring.active().seals(), 5);
    }

    /// Rotates acme's key at once through the actor; the kid it names.
    async fn rotate_now(km: &actix::Addr<KeyManager>) -> String {
        km.send(Rotate {
            tenant: "acme".into(),
            if_kid: None,
            grace: None,
        })
        .await
        .unwrap()
        .unwrap()
    }

    /// Waits until `km` holds `kid` as acme's active key; panics with `why` after [`WAIT`].
    async fn until_active(km: &actix::Addr<KeyManager>, kid: &str, why: &str) {
        let deadline = Instant::now() + WAIT;
        while km.send(Snapshot).await.unwrap()["acme"].active().kid() != kid {
            assert!(Instant::now() < deadline, "{why}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    fn refresh(tenant: &str, reason: RefreshReason, kid: Option<&str>) -> Refresh {
        Refresh {
            tenant: tenant.to_owned(),
            reason,
            kid: kid.map(str::to_owned),
        }
    }

    /// Two managers over one share, as two processes: `one` and `other`, started.
    fn two_managers(
        config: KeyManagerConfig,
    ) -> (actix::Addr<KeyManager>, actix::Addr<KeyManager>) {
        let share = LocalKeyShare::new();
        let master = MasterKey::generate();
        let start = |share: LocalKeyShare| {
            KeyManager::with_config(
                SealPolicy::default(),
                config.clone(),
                Arc::new(share),
                master.clone(),
            )
            .start()
        };
        (start(share.clone()), start(share))
    }

    #[actix_rt::test]
    async fn a_refresh_adopts_a_rotation_another_process_stored_and_pushes_it() {
        let (one, other) = two_managers(KeyManagerConfig::default());
        let before = ensured_kid(&other, "acme").await;
        assert_eq!(ensured_kid(&one, "acme").await, before);
        let (recipient, mut rx) = collector(false);
        other.send(Subscribe(recipient.downgrade())).await.unwrap();
        next(&mut rx).await;
        let rotated = rotate_now(&one).await;

        let ring = other
            .send(refresh("acme", RefreshReason::Announced, None))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(ring.active().kid(), rotated);
        assert!(ring.find(&before).is_some());
        assert_eq!(next(&mut rx).await["acme"].active().kid(), rotated);
    }

    #[actix_rt::test]
    async fn a_refresh_of_a_tenant_not_held_loads_nothing() {
        let km = manager().start();
        let refreshed = km
            .send(refresh("acme", RefreshReason::Announced, None))
            .await
            .unwrap()
            .unwrap();
        assert!(refreshed.is_none());
        assert!(km.send(Snapshot).await.unwrap().is_empty());
    }

    #[actix_rt::test]
    async fn the_periodic_refresh_adopts_another_process_rotation_with_no_announcement() {
        let config = KeyManagerConfig {
            tick_every: Duration::from_millis(20),
            refresh_every: Some(Duration::from_secs(1)),
            ..KeyManagerConfig::default()
        };
        let (one, other) = two_managers(config);
        ensured(&other, "acme").await;
        ensured(&one, "acme").await;
        let rotated = rotate_now(&one).await;
        until_active(
            &other,
            &rotated,
            "the rotation never reached the other manager",
        )
        .await;
    }

    #[actix_rt::test]
    async fn an_unknown_kid_reloads_the_ring_once_and_finds_a_key_rotated_elsewhere() {
        let (one, other) = two_managers(KeyManagerConfig::default());
        ensured(&other, "acme").await;
        ensured(&one, "acme").await;
        let rotated = rotate_now(&one).await;
        let ring = other
            .send(refresh("acme", RefreshReason::UnknownKid, Some(&rotated)))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert!(ring.find(&rotated).is_some());
    }

    #[actix_rt::test]
    async fn unknown_kids_reload_a_tenants_ring_at_most_once_a_second() {
        let share = Flaky::default();
        let km = manager_over(share.clone(), &MasterKey::generate());
        let health = km.share_health();
        let km = km.start();
        ensured(&km, "acme").await;
        for _ in 0..3 {
            km.send(refresh("acme", RefreshReason::UnknownKid, Some("forged")))
                .await
                .unwrap()
                .unwrap();
        }
        assert_eq!(health.refreshes(RefreshReason::UnknownKid), 1);
    }

    #[actix_rt::test]
    async fn a_kid_the_held_ring_has_is_answered_without_asking_the_share() {
        let share = Flaky::default();
        let km = manager_over(share.clone(), &MasterKey::generate());
        let health = km.share_health();
        let km = km.start();
        let kid = ensured_kid(&km, "acme").await;
        share.set_down(true);
        let ring = km
            .send(refresh("acme", RefreshReason::UnknownKid, Some(&kid)))
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        assert_eq!(ring.active().kid(), kid);
        assert_eq!(health.failures(), 0);
    }

    #[actix_rt::test]
    async fn the_share_is_failing_from_a_failed_call_until_the_next_answered_one() {
        let share = Flaky::default();
        let km = manager_over(share.clone(), &MasterKey::generate());
        let health = km.share_health();
        let km = km.start();
        ensured(&km, "acme").await;
        assert_eq!(health.failing(), None);
        share.set_down(true);
        let refreshed = km
            .send(refresh("acme", RefreshReason::Announced, None))
            .await
            .unwrap();
        assert!(refreshed.is_err());
        assert!(health.failing().is_some());
        share.set_down(false);
        km.send(refresh("acme", RefreshReason::Announced, None))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(health.failing(), None);
    }

    fn manager_publishing_first(delay: Duration, tick_every: Duration) -> KeyManager {
        KeyManager::with_config(
            SealPolicy::default(),
            KeyManagerConfig {
                activation_delay: delay,
                tick_every,
                ..KeyManagerConfig::default()
            },
            Arc::new(LocalKeyShare::new()),
            MasterKey::generate(),
        )
    }

    #[actix_rt::test]
    async fn with_an_activation_delay_a_rotation_publishes_the_key_and_seals_with_it_when_due() {
        let mut km = manager_publishing_first(Duration::from_secs(5), TICK_EVERY);
        let old = km.ensure("acme").await.active().kid().to_owned();
        let t0 = unix_secs(SystemTime::now());
        let new = km.rotate("acme", None, GRACE, t0).await;
        assert_ne!(new, old);
        let ring = Arc::clone(&km.rings["acme"]);
        assert_eq!(ring.active().kid(), old, "the old key still seals");
        assert!(ring.find(&new).is_some(), "the published key already opens");

        km.tick(t0 + 4).await;
        assert_eq!(km.rings["acme"].active().kid(), old);
        km.tick(t0 + 5).await;
        let ring = &km.rings["acme"];
        assert_eq!(ring.active().kid(), new);
        assert_eq!(ring.verify_only()[0].0.kid(), old);
        assert_eq!(ring.verify_only()[0].1, t0 + 5 + GRACE.as_secs());
    }

    #[actix_rt::test]
    async fn a_rotation_asked_while_one_is_under_way_names_the_published_key_and_changes_nothing() {
        let mut km = manager_publishing_first(Duration::from_secs(5), TICK_EVERY);
        km.ensure("acme").await;
        let t0 = unix_secs(SystemTime::now());
        let first = km.rotate("acme", None, GRACE, t0).await;
        let again = km.rotate("acme", None, GRACE, t0 + 1).await;
        assert_eq!(again, first);
        assert!(!km.rings["acme"].due_for_rotation(t0 + 7 * HOUR, 6 * HOUR));
    }

    #[actix_rt::test]
    async fn a_published_key_starts_sealing_on_time_without_waiting_for_the_tick() {
        let km =
            manager_publishing_first(Duration::from_secs(1), Duration::from_secs(3_600)).start();
        let old = ensured_kid(&km, "acme").await;
        let new = rotate_now(&km).await;
        assert_eq!(km.send(Snapshot).await.unwrap()["acme"].active().kid(), old);
        until_active(&km, &new, "the published key never activated").await;
    }

    #[actix_rt::test]
    async fn a_ring_loaded_with_a_published_key_already_due_is_held_with_it_sealing() {
        let share = LocalKeyShare::new();
        let master = MasterKey::generate();
        let vault = Vault::new(Arc::new(share.clone()), master.clone());
        let now = unix_secs(SystemTime::now());
        let ring = KeyRing::new(fresh_key(now - 100)).with_pending(Pending {
            key: Arc::new(fresh_key(now - 10)),
            activates_at: now - 10,
            retire_previous_after: now + 300,
        });
        let published = ring.pending().unwrap().key.kid().to_owned();
        vault.replace("acme", &ring).await.unwrap();
        let mut km = manager_over(share, &master);
        assert_eq!(km.ensure("acme").await.active().kid(), published);
    }
}
