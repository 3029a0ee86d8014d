//! [`RedisBuckets`]: a tenant's token buckets kept in Redis, taken from by one Lua script
//! (`take_all.lua`) that reads Redis `TIME`, refills every bucket a request names, and takes a
//! token from each only when each has one. One script call is one round trip and atomic, so
//! the processes of a fleet share each bucket exactly, and one clock (Redis's) refills them.
//!
//! Keys are `{prefix}:rl:{tenant}:tenant`, `…:caller:{hex}` and `…:tool:{hex}`: a slug has no
//! `:`, and the caller or tool, which may hold any bytes, is hex, so no two buckets share a
//! key. The limits travel with every call rather than being stored: a changed limit applies
//! at once to the level a bucket has (a lower burst caps it; a higher one fills at the rate).

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::{RedisError, Script};
use roundtrip_runtime::redis::Redis;

use crate::limits::BucketId;
use crate::model::RateLimit;

/// The script, sent by its SHA-1 (`EVALSHA`), and loaded first where Redis lacks it.
static TAKE_ALL: LazyLock<Script> = LazyLock::new(|| Script::new(include_str!("take_all.lua")));

/// Token buckets in Redis. Cheap to clone: clones share the handle.
#[derive(Debug, Clone)]
pub struct RedisBuckets {
    redis: Arc<Redis>,
}

impl RedisBuckets {
    /// Buckets kept through `redis`, under its prefix.
    pub fn new(redis: Redis) -> RedisBuckets {
        RedisBuckets {
            redis: Arc::new(redis),
        }
    }

    /// The handle, for its failure count.
    pub fn redis(&self) -> &Redis {
        &self.redis
    }

    /// Takes one token from each of `tenant`'s `buckets`, or from none: `Ok(Err(wait))` when
    /// one is empty, with how long until every one has a token. Reads its arguments now; the
    /// future owns what it needs, so it may be awaited anywhere.
    pub fn take_all<'a>(
        &self,
        tenant: &str,
        buckets: impl IntoIterator<Item = (BucketId<'a>, RateLimit)>,
    ) -> impl std::future::Future<Output = Result<Result<(), Duration>, RedisError>> + Send + 'static
    {
        let mut invocation = TAKE_ALL.prepare_invoke();
        for (id, limit) in buckets {
            invocation
                .key(self.redis.key(&bucket_name(tenant, id)))
                .arg(limit.per_second)
                .arg(limit.burst);
        }
        let redis = self.redis.clone();
        async move {
            let wait_ms: u64 = redis
                .call(
                    |mut connection| async move { invocation.invoke_async(&mut connection).await },
                )
                .await?;
            Ok(match wait_ms {
                0 => Ok(()),
                ms => Err(Duration::from_millis(ms)),
            })
        }
    }
}

/// The name of `tenant`'s bucket `id`, before the handle's prefix.
fn bucket_name(tenant: &str, id: BucketId<'_>) -> String {
    let (kind, name) = match id {
        BucketId::Tenant => return format!("rl:{tenant}:tenant"),
        BucketId::Caller(caller) => ("caller", caller),
        BucketId::Tool(tool) => ("tool", tool),
    };
    format!("rl:{tenant}:{kind}:{}", hex::encode(name))
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtrip_runtime::redis::testing::test_redis;

    fn limit(per_second: f64, burst: u32) -> RateLimit {
        RateLimit { per_second, burst }
    }

    #[tokio::test]
    async fn a_burst_is_admitted_whole_then_the_next_waits_for_the_rate() {
        let buckets = RedisBuckets::new(test_redis().await);
        let take = || buckets.take_all("acme", [(BucketId::Tenant, limit(2.0, 3))]);
        for n in 0..3 {
            assert_eq!(take().await.expect("Redis answers"), Ok(()), "request {n}");
        }
        let wait = take()
            .await
            .expect("Redis answers")
            .expect_err("the burst is spent");
        // One token at 2 per second is 500 ms away, less what refilled while the test ran.
        assert!(
            (Duration::from_millis(400)..=Duration::from_millis(500)).contains(&wait),
            "{wait:?}"
        );
    }

    #[tokio::test]
    async fn a_refused_request_takes_from_no_bucket() {
        let buckets = RedisBuckets::new(test_redis().await);
        let roomy = (BucketId::Tenant, limit(0.001, 5));
        let empty = (BucketId::Tool("quiet"), limit(0.001, 1));
        assert_eq!(
            buckets.take_all("acme", [empty]).await.expect("Redis"),
            Ok(())
        );
        let refused = buckets
            .take_all("acme", [roomy, empty])
            .await
            .expect("Redis");
        assert!(refused.is_err(), "the empty bucket refuses");
        for n in 0..5 {
            let taken = buckets.take_all("acme", [roomy]).await.expect("Redis");
            assert_eq!(taken, Ok(()), "the roomy bucket still had its token {n}");
        }
        let spent = buckets.take_all("acme", [roomy]).await.expect("Redis");
        assert!(spent.is_err(), "and no more");
    }

    #[tokio::test]
    async fn tokens_come_back_at_the_rate_as_redis_time_passes() {
        let buckets = RedisBuckets::new(test_redis().await);
        let take = || buckets.take_all("acme", [(BucketId::Tenant, limit(20.0, 1))]);
        assert_eq!(take().await.expect("Redis"), Ok(()));
        let wait = take()
            .await
            .expect("Redis")
            .expect_err("the one token is spent");
        assert!(wait <= Duration::from_millis(50), "{wait:?}");
        tokio::time::sleep(wait + Duration::from_millis(10)).await;
        assert_eq!(
            take().await.expect("Redis"),
            Ok(()),
            "refilled after {wait:?}"
        );
    }

    #[tokio::test]
    async fn each_tenant_caller_and_tool_has_a_bucket_of_its_own() {
        let buckets = RedisBuckets::new(test_redis().await);
        let one = limit(0.001, 1);
        for (tenant, id) in [
            ("acme", BucketId::Tenant),
            ("acme", BucketId::Caller("key:a")),
            ("acme", BucketId::Caller("key:b")),
            ("acme", BucketId::Tool("a")),
            // Not the caller `key:a`, though a name could spell it.
            ("acme", BucketId::Tool("key:a")),
            ("other", BucketId::Tenant),
        ] {
            let taken = buckets.take_all(tenant, [(id, one)]).await.expect("Redis");
            assert_eq!(taken, Ok(()), "{tenant} {id:?} starts full");
        }
    }

    #[tokio::test]
    async fn an_idle_bucket_expires_once_it_would_be_full_again() {
        let redis = test_redis().await;
        let key = redis.key("rl:acme:tenant");
        let buckets = RedisBuckets::new(redis.clone());
        let taken = buckets.take_all("acme", [(BucketId::Tenant, limit(2.0, 4))]);
        assert_eq!(taken.await.expect("Redis"), Ok(()));
        let ttl_ms: i64 = redis
            .call(move |mut c| async move { redis::cmd("PTTL").arg(key).query_async(&mut c).await })
            .await
            .expect("Redis");
        // One token at 2 per second: full again in 500 ms.
        assert!((400..=500).contains(&ttl_ms), "{ttl_ms}");
    }

    #[test]
    fn a_caller_or_tool_name_is_hex_in_its_key() {
        let name = bucket_name("acme", BucketId::Caller("a:b\n"));
        assert_eq!(name, "rl:acme:caller:613a620a");
        assert_eq!(
            bucket_name("acme", BucketId::Tool("é")),
            "rl:acme:tool:c3a9"
        );
        assert_eq!(bucket_name("acme", BucketId::Tenant), "rl:acme:tenant");
    }
}
