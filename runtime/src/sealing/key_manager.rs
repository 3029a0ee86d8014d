//! The `KeyManager` actor: the one owner of every tenant's key ring in this process, and its
//! messages.
//!
//! It is **not** on the request path. A cross-Arbiter `send` costs about 16 µs, so workers
//! never ask it for a key: each worker [`Subscribe`]s once, gets the current [`KeyRings`]
//! snapshot, and is pushed a new snapshot ([`KeyRingsChanged`]) whenever a ring changes. Rings
//! are immutable and shared by `Arc`, so a snapshot is a pointer copy, and a worker seals and
//! opens with no lock and no hop.
//!
//! One per process, started on its own Arbiter. Every handler is synchronous, so a rotation
//! (load, rotate, prune, store, broadcast) never interleaves with another message. Changes go
//! through the [`KeyShare`] so other processes see the same keys.
//!
//! Rotation keeps the previous key as verify-only for `ttl + clock_skew`: every state sealed
//! under it before the rotation still opens until it would have expired anyway. A timer
//! prunes retired keys every [`PRUNE_EVERY`].

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use actix::{Actor, AsyncContext, Context, Handler, Message, Recipient};

use super::claims::unix_secs;
use super::codec::StateKey;
use super::keyring::{KeyRing, KeyRings};
use super::policy::SealPolicy;
use super::share::KeyShare;

/// How often retired verify-only keys are pruned.
pub const PRUNE_EVERY: Duration = Duration::from_secs(60);

/// Owns the key rings of every tenant and tells subscribers when they change.
///
/// Start one per process on its own Arbiter, before the HTTP server:
/// `KeyManager::start_in_arbiter(&arbiter.handle(), move |_| KeyManager::new(policy, share))`.
pub struct KeyManager {
    policy: SealPolicy,
    share: Box<dyn KeyShare>,
    /// Copy-on-write: changed with `Arc::make_mut`, so handing out a snapshot is free and a
    /// change copies the map (of `Arc`s) only while an older snapshot is still held.
    rings: KeyRings,
    subscribers: Vec<Recipient<KeyRingsChanged>>,
}

impl KeyManager {
    /// A manager with no rings yet. `policy` sets how long a rotated-out key keeps verifying
    /// (`ttl + clock_skew`); `share` is where rings are loaded from and stored to.
    pub fn new(policy: SealPolicy, share: Box<dyn KeyShare>) -> KeyManager {
        KeyManager {
            policy,
            share,
            rings: KeyRings::default(),
            subscribers: Vec::new(),
        }
    }

    /// The tenant's ring: the one held, else the shared one, else a new one with a fresh key.
    fn ensure(&mut self, tenant: &str) -> Arc<KeyRing> {
        if let Some(ring) = self.rings.get(tenant) {
            return Arc::clone(ring);
        }
        let ring = self.share.load(tenant).unwrap_or_else(|| {
            let ring = KeyRing::new(StateKey::generate());
            self.share.store(tenant, &ring);
            tracing::info!(
                tenant,
                kid = ring.active().kid(),
                "created requestState key ring"
            );
            ring
        });
        let ring = Arc::new(ring);
        Arc::make_mut(&mut self.rings).insert(tenant.to_owned(), Arc::clone(&ring));
        self.broadcast();
        ring
    }

    /// Gives `tenant` a new active key at unix second `now`; returns its kid.
    fn rotate(&mut self, tenant: &str, now: u64) -> String {
        let current = self
            .share
            .load(tenant)
            .or_else(|| self.rings.get(tenant).map(|ring| KeyRing::clone(ring)));
        let new_key = StateKey::generate();
        let kid = new_key.kid().to_owned();
        let grace = self.policy.ttl.saturating_add(self.policy.clock_skew);
        let ring = match current {
            Some(ring) => ring
                .rotated(new_key, now.saturating_add(grace.as_secs()))
                .pruned(now),
            None => KeyRing::new(new_key),
        };
        self.share.store(tenant, &ring);
        Arc::make_mut(&mut self.rings).insert(tenant.to_owned(), Arc::new(ring));
        tracing::info!(tenant, kid = %kid, "rotated requestState key");
        self.broadcast();
        kid
    }

    /// Drops the verify-only keys retired before unix second `now`; broadcasts if any went.
    fn prune(&mut self, now: u64) {
        let stale: Vec<String> = self
            .rings
            .iter()
            .filter(|(_, ring)| ring.has_retired(now))
            .map(|(tenant, _)| tenant.clone())
            .collect();
        if stale.is_empty() {
            return;
        }
        let rings = Arc::make_mut(&mut self.rings);
        for tenant in &stale {
            if let Some(ring) = rings.get_mut(tenant) {
                let pruned = ring.pruned(now);
                self.share.store(tenant, &pruned);
                *ring = Arc::new(pruned);
            }
        }
        tracing::debug!(tenants = stale.len(), "pruned retired requestState keys");
        self.broadcast();
    }

    /// Pushes the current snapshot to every live subscriber, forgetting the dead ones.
    fn broadcast(&mut self) {
        self.subscribers.retain(Recipient::connected);
        for subscriber in &self.subscribers {
            subscriber.do_send(KeyRingsChanged(Arc::clone(&self.rings)));
        }
    }
}

impl fmt::Debug for KeyManager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyManager")
            .field("policy", &self.policy)
            .field("tenants", &self.rings.len())
            .field("subscribers", &self.subscribers.len())
            .finish_non_exhaustive()
    }
}

impl Actor for KeyManager {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        ctx.run_interval(PRUNE_EVERY, |act, _ctx| {
            act.prune(unix_secs(SystemTime::now()));
        });
    }
}

/// Makes sure `tenant` has a ring (creating one with a fresh key if needed) and returns it.
#[derive(Debug, Clone, Message)]
#[rtype(result = "Arc<KeyRing>")]
pub struct EnsureTenant {
    /// The tenant slug.
    pub tenant: String,
}

impl Handler<EnsureTenant> for KeyManager {
    type Result = Arc<KeyRing>;

    fn handle(&mut self, msg: EnsureTenant, _ctx: &mut Self::Context) -> Self::Result {
        self.ensure(&msg.tenant)
    }
}

/// Gives `tenant` a new active key; the previous one keeps verifying for `ttl + skew`.
/// Returns the new kid.
#[derive(Debug, Clone, Message)]
#[rtype(result = "String")]
pub struct Rotate {
    /// The tenant slug.
    pub tenant: String,
}

impl Handler<Rotate> for KeyManager {
    type Result = String;

    fn handle(&mut self, msg: Rotate, _ctx: &mut Self::Context) -> Self::Result {
        self.rotate(&msg.tenant, unix_secs(SystemTime::now()))
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
pub struct Subscribe(pub Recipient<KeyRingsChanged>);

impl Handler<Subscribe> for KeyManager {
    type Result = KeyRings;

    fn handle(&mut self, msg: Subscribe, _ctx: &mut Self::Context) -> Self::Result {
        msg.0.do_send(KeyRingsChanged(Arc::clone(&self.rings)));
        self.subscribers.push(msg.0);
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
#[allow(clippy::unwrap_used)] // tests: a panic is the failure report
mod tests {
    use super::*;
    use crate::sealing::share::LocalKeyShare;
    use actix::{ActorContext, Arbiter};
    use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
    use tokio::time::timeout;

    const WAIT: Duration = Duration::from_secs(5);

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

    async fn next(rx: &mut UnboundedReceiver<KeyRings>) -> KeyRings {
        timeout(WAIT, rx.recv()).await.unwrap().unwrap()
    }

    fn manager() -> KeyManager {
        KeyManager::new(SealPolicy::default(), Box::new(LocalKeyShare::new()))
    }

    #[actix_rt::test]
    async fn subscriber_gets_the_snapshot_then_is_pushed_each_change() {
        let arbiter = Arbiter::new();
        let km = KeyManager::start_in_arbiter(&arbiter.handle(), |_| manager());
        let (recipient, mut rx) = collector(false);

        let snapshot = km.send(Subscribe(recipient)).await.unwrap();
        assert!(snapshot.is_empty());
        assert!(next(&mut rx).await.is_empty());

        let ring = km
            .send(EnsureTenant {
                tenant: "acme".to_owned(),
            })
            .await
            .unwrap();
        let pushed = next(&mut rx).await;
        assert_eq!(pushed["acme"].active().kid(), ring.active().kid());

        let old_kid = ring.active().kid().to_owned();
        let new_kid = km
            .send(Rotate {
                tenant: "acme".to_owned(),
            })
            .await
            .unwrap();
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
        km.send(Subscribe(recipient)).await.unwrap();
        next(&mut rx).await;
        let tenant = "acme".to_owned();
        let first = km
            .send(EnsureTenant {
                tenant: tenant.clone(),
            })
            .await
            .unwrap();
        next(&mut rx).await;
        let again = km
            .send(EnsureTenant {
                tenant: tenant.clone(),
            })
            .await
            .unwrap();
        assert!(Arc::ptr_eq(&first, &again));
        // Pushes arrive in order: the next one must be the rotation's, not a second ensure's.
        let kid = km.send(Rotate { tenant }).await.unwrap();
        assert_eq!(next(&mut rx).await["acme"].active().kid(), kid);
    }

    #[test]
    fn a_tenant_already_in_the_share_is_loaded_not_recreated() {
        let ring = KeyRing::new(StateKey::generate());
        let mut share = LocalKeyShare::new();
        share.store("acme", &ring);
        let mut km = KeyManager::new(SealPolicy::default(), Box::new(share));
        assert_eq!(km.ensure("acme").active().kid(), ring.active().kid());
    }

    #[test]
    fn rotation_keeps_the_old_key_for_ttl_plus_skew_then_prune_drops_it() {
        let mut km = manager();
        let old_kid = km.ensure("acme").active().kid().to_owned();
        let new_kid = km.rotate("acme", 1_000);
        let grace = 300 + 30;

        km.prune(1_000 + grace);
        let ring = &km.rings["acme"];
        assert_eq!(ring.active().kid(), new_kid);
        assert!(ring.find(&old_kid).is_some());

        km.prune(1_000 + grace + 1);
        assert!(km.rings["acme"].find(&old_kid).is_none());
        assert!(km.share.load("acme").unwrap().find(&old_kid).is_none());
    }

    #[test]
    fn rotation_prunes_keys_already_retired() {
        let mut km = manager();
        let first = km.ensure("acme").active().kid().to_owned();
        let second = km.rotate("acme", 1_000);
        km.rotate("acme", 1_000 + 331);
        let ring = &km.rings["acme"];
        assert!(ring.find(&first).is_none());
        assert!(ring.find(&second).is_some());
    }

    #[test]
    fn rotating_an_unknown_tenant_creates_its_ring() {
        let mut km = manager();
        let kid = km.rotate("new", 1_000);
        assert_eq!(km.ensure("new").active().kid(), kid);
    }

    #[actix_rt::test]
    async fn subscribers_whose_actor_stopped_are_forgotten() {
        let mut km = manager();
        let (recipient, mut rx) = collector(true);
        km.subscribers.push(recipient);
        km.ensure("acme");
        next(&mut rx).await;
        timeout(WAIT, async {
            while km.subscribers[0].connected() {
                actix_rt::task::yield_now().await;
            }
        })
        .await
        .unwrap();
        km.broadcast();
        assert!(km.subscribers.is_empty());
    }
}
