//! [`follow_key_rings`]: hears the announcements `RedisKeyShare` publishes when a process
//! stores a ring, and has this process's `KeyManager` reload that ring at once, so a key
//! rotated on one worker opens on every worker within milliseconds rather than at the next
//! periodic refresh.
//!
//! Pub/sub delivers at most once, and nothing while the subscription is down: a lost
//! announcement is caught by the KeyManager's periodic refresh, and a worker that meets a
//! token under a kid it does not hold reloads the ring before refusing it. So this is the fast
//! path, never the only one. The subscription has its own connection (a subscribed connection
//! can send no other command); when it drops, it is counted and opened again, one second
//! later at most.

use std::time::Duration;

use actix::Recipient;
use futures_util::StreamExt as _;

use super::connection::{timed_out, Redis, CALL_TIMEOUT};
use super::key_share::RINGS_CHANNEL;
use crate::sealing::{Refresh, RefreshReason};

/// How long to wait before subscribing again after the subscription failed.
const RESUBSCRIBE_AFTER: Duration = Duration::from_secs(1);

/// Follows the announcements of changed key rings on `redis` for as long as the future runs,
/// sending `key_manager` a [`Refresh`] for each. Spawn it on the KeyManager's Arbiter, so it
/// stops with it.
pub async fn follow_key_rings(redis: Redis, key_manager: Recipient<Refresh>) {
    let channel = redis.key(RINGS_CHANNEL);
    loop {
        match subscribe(&redis, &channel).await {
            Ok(pubsub) => {
                tracing::debug!("following key ring announcements");
                let mut messages = pubsub.into_on_message();
                while let Some(message) = messages.next().await {
                    let Ok(tenant) = message.get_payload::<String>() else {
                        continue;
                    };
                    if !key_manager.connected() {
                        return;
                    }
                    key_manager.do_send(Refresh {
                        tenant,
                        reason: RefreshReason::Announced,
                        kid: None,
                    });
                }
                redis.count_error();
                tracing::warn!(
                    "the key ring announcements' subscription dropped; subscribing again"
                );
            }
            Err(error) => {
                redis.count_error();
                tracing::warn!(%error, "could not subscribe to key ring announcements; retrying");
            }
        }
        if !key_manager.connected() {
            return;
        }
        tokio::time::sleep(RESUBSCRIBE_AFTER).await;
    }
}

async fn subscribe(redis: &Redis, channel: &str) -> Result<redis::aio::PubSub, redis::RedisError> {
    let mut pubsub = tokio::time::timeout(CALL_TIMEOUT, redis.client().get_async_pubsub())
        .await
        .map_err(|_| timed_out())??;
    tokio::time::timeout(CALL_TIMEOUT, pubsub.subscribe(channel))
        .await
        .map_err(|_| timed_out())??;
    Ok(pubsub)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Instant;

    use actix::{Actor, Arbiter};

    use super::*;
    use crate::redis::testing::test_redis;
    use crate::redis::RedisKeyShare;
    use crate::sealing::{
        EnsureTenant, KeyManager, KeyManagerConfig, MasterKey, Rotate, SealPolicy, Snapshot,
    };

    /// A KeyManager over `redis` on an Arbiter of its own, following the announcements, as
    /// one worker process has it.
    fn worker(redis: &Redis, master: &MasterKey) -> (actix::Addr<KeyManager>, Arbiter) {
        let arbiter = Arbiter::new();
        let (share, master) = (RedisKeyShare::new(redis.clone()), master.clone());
        let km = KeyManager::start_in_arbiter(&arbiter.handle(), move |_| {
            KeyManager::with_config(
                SealPolicy::default(),
                KeyManagerConfig::default(),
                Arc::new(share),
                master,
            )
        });
        arbiter.spawn(follow_key_rings(redis.clone(), km.clone().recipient()));
        (km, arbiter)
    }

    async fn active_kid(km: &actix::Addr<KeyManager>) -> Option<String> {
        let rings = km.send(Snapshot).await.unwrap();
        rings.get("acme").map(|ring| ring.active().kid().to_owned())
    }

    #[actix_rt::test]
    async fn a_rotation_on_one_worker_reaches_another_by_its_announcement() {
        let redis = test_redis().await;
        let master = MasterKey::generate();
        let (one, one_arbiter) = worker(&redis, &master);
        let (other, other_arbiter) = worker(&redis, &master);
        let ensure = || EnsureTenant {
            tenant: "acme".into(),
        };
        one.send(ensure()).await.unwrap().unwrap();
        other.send(ensure()).await.unwrap().unwrap();
        // Both subscriptions are up before the rotation is announced.
        tokio::time::sleep(Duration::from_millis(200)).await;

        let rotated = one
            .send(Rotate {
                tenant: "acme".into(),
                if_kid: None,
                grace: None,
            })
            .await
            .unwrap()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(5);
        while active_kid(&other).await.as_deref() != Some(rotated.as_str()) {
            assert!(Instant::now() < deadline, "the announcement never arrived");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        one_arbiter.stop();
        other_arbiter.stop();
    }

    #[actix_rt::test]
    async fn a_ring_redis_lost_is_stored_back_by_the_next_refresh_with_the_keys_held() {
        let redis = test_redis().await;
        let master = MasterKey::generate();
        let (km, arbiter) = worker(&redis, &master);
        let held = km
            .send(EnsureTenant {
                tenant: "acme".into(),
            })
            .await
            .unwrap()
            .unwrap();
        let ring_key = redis.key("key-ring:acme");
        redis
            .call(|mut conn| async move {
                redis::cmd("DEL")
                    .arg(&ring_key)
                    .query_async::<i64>(&mut conn)
                    .await
            })
            .await
            .unwrap();

        km.send(Refresh {
            tenant: "acme".into(),
            reason: RefreshReason::Announced,
            kid: None,
        })
        .await
        .unwrap()
        .unwrap();
        let stored = crate::sealing::KeyShare::load(&RedisKeyShare::new(redis.clone()), "acme")
            .await
            .unwrap()
            .expect("the ring is back");
        let ring = stored.ring.unwrap("acme", &master).unwrap();
        assert_eq!(ring.active().kid(), held.active().kid());
        arbiter.stop();
    }
}
