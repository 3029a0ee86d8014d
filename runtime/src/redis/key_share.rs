//! [`RedisKeyShare`]: tenants' wrapped key rings in Redis, shared by every worker of a fleet.
//!
//! A ring is a hash, `{prefix}:key-ring:{tenant}`, with two fields: `version` (a counter,
//! from one) and `ring` (the [`WrappedRing`] as JSON; every key in it is wrapped under the master
//! key, so Redis never holds one in the clear). A store is one Lua script, so it is atomic: it
//! writes only if `version` is still the one read (none, for a new ring), and in the same
//! step publishes the tenant's slug on `{prefix}:key-rings`, which every worker's
//! `follow_key_rings` hears and answers by reloading that ring. A worker that missed the
//! message (it was reconnecting) still gets the change at its periodic refresh.
//!
//! Redis that keeps nothing on disk loses every ring when it restarts; the `KeyManager`s then
//! store back the rings they hold (see `key_manager`), so no state in flight is lost.

use async_trait::async_trait;
use redis::Script;

use super::connection::Redis;
use crate::sealing::{KeyShare, ShareError, Stored, Version, WrappedRing};

/// The channel a changed ring's tenant is published on, under the prefix.
pub(crate) const RINGS_CHANNEL: &str = "key-rings";

/// Compare-and-swap of one ring, and the announcement of the change.
/// KEYS: the ring's hash, the channel. ARGV: the version expected (`""`: none), the new ring,
/// the tenant. Returns the new version, or -1 when the stored version is not the one
/// expected (nothing written, nothing published).
const STORE: &str = r"
local current = redis.call('HGET', KEYS[1], 'version')
if current == false then current = '' end
if current ~= ARGV[1] then return -1 end
local next = (tonumber(current) or 0) + 1
redis.call('HSET', KEYS[1], 'version', next, 'ring', ARGV[2])
redis.call('PUBLISH', KEYS[2], ARGV[3])
return next
";

/// Key rings in Redis. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisKeyShare {
    redis: Redis,
    store: Script,
}

impl RedisKeyShare {
    /// A share over `redis`'s connection, under its prefix.
    pub fn new(redis: Redis) -> RedisKeyShare {
        RedisKeyShare {
            redis,
            store: Script::new(STORE),
        }
    }

    fn ring_key(&self, tenant: &str) -> String {
        self.redis.key(&format!("key-ring:{tenant}"))
    }
}

fn unavailable(e: redis::RedisError) -> ShareError {
    ShareError::Unavailable(Box::new(e))
}

#[async_trait]
impl KeyShare for RedisKeyShare {
    async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
        let key = self.ring_key(tenant);
        let (version, ring): (Option<String>, Option<String>) = self
            .redis
            .call(|mut conn| async move {
                redis::cmd("HMGET")
                    .arg(&key)
                    .arg("version")
                    .arg("ring")
                    .query_async(&mut conn)
                    .await
            })
            .await
            .map_err(unavailable)?;
        let (Some(version), Some(ring)) = (version, ring) else {
            return Ok(None);
        };
        let version = version
            .parse::<u64>()
            .map_err(|e| ShareError::Malformed(Box::new(e)))?;
        let ring: WrappedRing =
            serde_json::from_str(&ring).map_err(|e| ShareError::Malformed(Box::new(e)))?;
        Ok(Some(Stored {
            ring,
            version: Version(version),
        }))
    }

    async fn store(
        &self,
        tenant: &str,
        ring: &WrappedRing,
        expected: Option<Version>,
    ) -> Result<Version, ShareError> {
        let text = serde_json::to_string(ring).map_err(|e| ShareError::Malformed(Box::new(e)))?;
        let script = self.store.clone();
        let ring_key = self.ring_key(tenant);
        let channel = self.redis.key(RINGS_CHANNEL);
        let expected = expected.map_or_else(String::new, |Version(v)| v.to_string());
        let tenant = tenant.to_owned();
        let written: i64 = self
            .redis
            .call(|mut conn| async move {
                script
                    .key(ring_key)
                    .key(channel)
                    .arg(expected)
                    .arg(text)
                    .arg(tenant)
                    .invoke_async(&mut conn)
                    .await
            })
            .await
            .map_err(unavailable)?;
        u64::try_from(written)
            .map(Version)
            .map_err(|_| ShareError::Conflict)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::testing::{test_redis, SpareRedis};
    use crate::sealing::{KeyRing, MasterKey, StateKey};

    fn wrapped() -> WrappedRing {
        WrappedRing::wrap(
            "acme",
            &KeyRing::new(StateKey::generate()),
            &MasterKey::generate(),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn a_stored_ring_loads_back_with_its_version_for_its_tenant_only() {
        let share = RedisKeyShare::new(test_redis().await);
        assert!(share.load("acme").await.unwrap().is_none());
        let ring = wrapped();
        let version = share.store("acme", &ring, None).await.unwrap();
        let loaded = share.load("acme").await.unwrap().unwrap();
        assert_eq!(loaded.ring, ring);
        assert_eq!(loaded.version, version);
        assert!(share.load("other").await.unwrap().is_none());
    }

    #[tokio::test]
    async fn two_connections_with_one_prefix_share_rings_and_another_prefix_does_not() {
        let redis = test_redis().await;
        let other_worker = RedisKeyShare::new(crate::redis::testing::connect(&redis.key("")).await);
        let one = RedisKeyShare::new(redis.clone().with_prefix(&redis.key("")));
        one.store("acme", &wrapped(), None).await.unwrap();
        assert!(other_worker.load("acme").await.unwrap().is_some());
        assert!(RedisKeyShare::new(redis)
            .load("acme")
            .await
            .unwrap()
            .is_none());
    }

    #[tokio::test]
    async fn storing_at_the_loaded_version_replaces_the_ring_and_changes_the_version() {
        let share = RedisKeyShare::new(test_redis().await);
        let first = share.store("acme", &wrapped(), None).await.unwrap();
        let next = wrapped();
        let second = share.store("acme", &next, Some(first)).await.unwrap();
        assert_ne!(first, second);
        assert_eq!(share.load("acme").await.unwrap().unwrap().ring, next);
    }

    #[tokio::test]
    async fn storing_at_a_stale_version_is_a_conflict_and_changes_nothing() {
        let share = RedisKeyShare::new(test_redis().await);
        let first = share.store("acme", &wrapped(), None).await.unwrap();
        let theirs = wrapped();
        share.store("acme", &theirs, Some(first)).await.unwrap();
        assert!(matches!(
            share.store("acme", &wrapped(), Some(first)).await,
            Err(ShareError::Conflict)
        ));
        assert_eq!(share.load("acme").await.unwrap().unwrap().ring, theirs);
    }

    #[tokio::test]
    async fn creating_a_ring_that_exists_is_a_conflict() {
        let share = RedisKeyShare::new(test_redis().await);
        share.store("acme", &wrapped(), None).await.unwrap();
        assert!(matches!(
            share.store("acme", &wrapped(), None).await,
            Err(ShareError::Conflict)
        ));
    }

    #[tokio::test]
    async fn redis_holds_no_key_in_the_clear() {
        let redis = test_redis().await;
        let share = RedisKeyShare::new(redis.clone());
        let key = StateKey::generate();
        let secret = *key.secret_bytes();
        let ring = WrappedRing::wrap("acme", &KeyRing::new(key), &MasterKey::generate()).unwrap();
        share.store("acme", &ring, None).await.unwrap();
        let hash_key = redis.key("key-ring:acme");
        let stored: Vec<u8> = redis
            .call(|mut conn| async move {
                redis::cmd("HGET")
                    .arg(&hash_key)
                    .arg("ring")
                    .query_async(&mut conn)
                    .await
            })
            .await
            .unwrap();
        use base64::Engine as _;
        for encoded in [
            base64::engine::general_purpose::STANDARD.encode(secret),
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(secret),
        ] {
            assert!(!String::from_utf8_lossy(&stored).contains(&encoded));
        }
        assert!(!stored.windows(secret.len()).any(|w| w == secret));
    }

    #[tokio::test]
    async fn a_store_announces_the_tenant_on_the_rings_channel() {
        use futures_util::StreamExt as _;
        let redis = test_redis().await;
        let mut pubsub = redis.client().get_async_pubsub().await.unwrap();
        pubsub.subscribe(redis.key(RINGS_CHANNEL)).await.unwrap();
        let share = RedisKeyShare::new(redis);
        share.store("acme", &wrapped(), None).await.unwrap();
        let message = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            pubsub.on_message().next(),
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(message.get_payload::<String>().unwrap(), "acme");
    }

    #[tokio::test]
    async fn a_redis_that_went_away_makes_the_share_unavailable_and_is_counted() {
        let server = SpareRedis::start();
        let redis = Redis::connect(&server.url()).await.unwrap();
        let share = RedisKeyShare::new(redis.clone());
        share.store("acme", &wrapped(), None).await.unwrap();
        drop(server);
        assert!(matches!(
            share.load("acme").await,
            Err(ShareError::Unavailable(_))
        ));
        assert!(redis.error_count().get() >= 1);
    }
}
