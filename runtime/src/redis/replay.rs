//! [`RedisReplayCache`]: the record of single-use states, shared by every worker, so that a
//! state that completed a call on one worker is refused on every other.
//!
//! A claim is one `SET {prefix}:replay:{digest} 1 NX EXAT {expiry}`: atomic, so of two workers
//! claiming the same state at once exactly one gets it, and Redis forgets the entry when the
//! token could no longer open anyway. A release (the run did not complete) is a `DEL`, sent
//! off without waiting. Redis bounds the record's memory, not this process; an unreachable
//! Redis refuses the claim ([`ClaimRefused::Unavailable`]): a single-use tool must not run a
//! state twice because the record could not be asked.

use async_trait::async_trait;

use super::connection::Redis;
use crate::sealing::{ClaimRefused, ReplayCache, StateDigest};

/// The single-use record in Redis. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisReplayCache {
    redis: Redis,
}

impl RedisReplayCache {
    /// A record over `redis`'s connection, under its prefix.
    pub fn new(redis: Redis) -> RedisReplayCache {
        RedisReplayCache { redis }
    }

    fn key(&self, digest: &StateDigest) -> String {
        self.redis.key(&format!("replay:{}", hex::encode(digest)))
    }
}

#[async_trait(?Send)]
impl ReplayCache for RedisReplayCache {
    async fn claim(
        &self,
        digest: &StateDigest,
        expires_at: u64,
        now: u64,
    ) -> Result<(), ClaimRefused> {
        let key = self.key(digest);
        // Kept at least a second, and until the last second the token opens.
        let expire_at = expires_at.max(now).saturating_add(1);
        let set: Option<String> = self
            .redis
            .call(|mut conn| async move {
                redis::cmd("SET")
                    .arg(&key)
                    .arg(1)
                    .arg("NX")
                    .arg("EXAT")
                    .arg(expire_at)
                    .query_async(&mut conn)
                    .await
            })
            .await
            .map_err(|error| {
                tracing::warn!(%error, "could not claim a single-use state in Redis");
                ClaimRefused::Unavailable
            })?;
        match set {
            Some(_) => Ok(()),
            None => Err(ClaimRefused::Replayed),
        }
    }

    fn release(&self, digest: &StateDigest) {
        let key = self.key(digest);
        let redis = self.redis.clone();
        actix_rt::spawn(async move {
            let released = redis
                .call(|mut conn| async move {
                    redis::cmd("DEL")
                        .arg(&key)
                        .query_async::<i64>(&mut conn)
                        .await
                })
                .await;
            if let Err(error) = released {
                // The state stays used up until it expires: safe, if unkind to a retry.
                tracing::warn!(%error, "could not release a single-use state in Redis");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::redis::testing::{test_redis, SpareRedis};
    use crate::sealing::state_digest;

    const NOW: u64 = 2_000_000_000;

    #[actix_rt::test]
    async fn a_state_is_claimed_once_across_workers() {
        let redis = test_redis().await;
        let one = RedisReplayCache::new(redis.clone());
        let other = RedisReplayCache::new(redis);
        let digest = state_digest("token");
        let now = crate::sealing::unix_secs(std::time::SystemTime::now());
        assert_eq!(one.claim(&digest, now + 60, now).await, Ok(()));
        assert_eq!(
            other.claim(&digest, now + 60, now).await,
            Err(ClaimRefused::Replayed)
        );
        assert_eq!(
            one.claim(&state_digest("another"), now + 60, now).await,
            Ok(())
        );
    }

    #[actix_rt::test]
    async fn a_released_claim_can_be_claimed_again_on_another_worker() {
        let redis = test_redis().await;
        let one = RedisReplayCache::new(redis.clone());
        let other = RedisReplayCache::new(redis);
        let digest = state_digest("token");
        let now = crate::sealing::unix_secs(std::time::SystemTime::now());
        one.claim(&digest, now + 60, now).await.unwrap();
        one.release(&digest);
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while other.claim(&digest, now + 60, now).await.is_err() {
            assert!(
                std::time::Instant::now() < deadline,
                "the release never landed"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[actix_rt::test]
    async fn a_claim_is_forgotten_once_its_token_could_no_longer_open() {
        let redis = test_redis().await;
        let cache = RedisReplayCache::new(redis.clone());
        let digest = state_digest("token");
        cache.claim(&digest, NOW, NOW).await.unwrap();
        let key = cache.key(&digest);
        let expires: i64 = redis
            .call(|mut conn| async move {
                redis::cmd("EXPIRETIME")
                    .arg(&key)
                    .query_async(&mut conn)
                    .await
            })
            .await
            .unwrap();
        assert_eq!(expires, i64::try_from(NOW + 1).unwrap());
    }

    #[actix_rt::test]
    async fn an_unreachable_redis_refuses_the_claim() {
        let server = SpareRedis::start();
        let cache = RedisReplayCache::new(Redis::connect(&server.url()).await.unwrap());
        drop(server);
        assert_eq!(
            cache.claim(&state_digest("token"), NOW, NOW).await,
            Err(ClaimRefused::Unavailable)
        );
    }
}
