//! Rate limits shared by the worker processes of a fleet: [`RedisLimiter`], the runtime's
//! `Limiter` with the registry's limits and their token buckets in Redis, so that N processes
//! admit a limit's worth of requests, not N times it. Chosen when `ROUNDTRIP_REDIS_URL` is
//! set; without it each process keeps its own buckets (`crate::limits`, the registry's
//! `Limiter`).
//!
//! A request no limit applies to (most tenants set none) is admitted on the spot, with no
//! allocation and no round trip; any other is one script call to Redis
//! (`Admission::Pending`). When Redis fails, [`RedisFallback`] decides.
//!
//! Layout, one concern per file:
//! - `buckets`: [`RedisBuckets`], the keys and the Lua script (`take_all.lua`);
//! - `fallback`: [`RedisFallback`] and its paced warnings.

mod buckets;
mod fallback;

use std::net::IpAddr;
use std::sync::Arc;

use roundtrip_runtime::redis::Redis;
use roundtrip_runtime::tenancy::{Admission, Limiter, Principal, Refusal};

pub use buckets::RedisBuckets;
pub use fallback::{Fallback, RedisFallback, RETRY_CLOSED, WARN_EVERY};

use crate::registry::TenantRegistry;

/// The registry's rate limits, their buckets in Redis.
#[derive(Debug)]
pub struct RedisLimiter {
    registry: Arc<TenantRegistry>,
    shared: Arc<Shared>,
}

/// What each request's round trip needs: one `Arc` clone per limited request.
#[derive(Debug)]
struct Shared {
    buckets: RedisBuckets,
    fallback: Fallback,
}

impl RedisLimiter {
    /// The limits of `registry`'s tenants, their buckets kept through `redis`; `fallback`
    /// when Redis fails.
    pub fn new(
        registry: Arc<TenantRegistry>,
        redis: Redis,
        fallback: RedisFallback,
    ) -> RedisLimiter {
        let fallback = Fallback::new(fallback, redis.error_count());
        RedisLimiter {
            registry,
            shared: Arc::new(Shared {
                buckets: RedisBuckets::new(redis),
                fallback,
            }),
        }
    }
}

impl Limiter for RedisLimiter {
    fn admit(
        &self,
        tenant: &str,
        principal: &Principal,
        client: Option<IpAddr>,
        tool: Option<&str>,
    ) -> Admission {
        let Some(limits) = self.registry.rate_limits(tenant) else {
            return Admission::Admitted;
        };
        let caller = limits.caller(principal, client);
        let mut applying = limits.applying(&caller, tool).peekable();
        // A tenant that limits only some tools, asked for something else.
        if applying.peek().is_none() {
            return Admission::Admitted;
        }
        let taken = self.shared.buckets.take_all(tenant, applying);
        let shared = self.shared.clone();
        let tenant = tenant.to_owned();
        Admission::Pending(Box::pin(async move {
            match taken.await {
                Ok(verdict) => verdict.map_err(Refusal::OverLimit),
                Err(error) => shared.fallback.verdict(&tenant, &error),
            }
        }))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::time::Duration;

    use roundtrip_runtime::handler::Catalog;

    use super::*;
    use crate::catalogs::CatalogSource;
    use crate::model::{AuthMode, RateLimit, RateLimits, Slug, TenantSpec};
    use crate::store::{SqlStore, Store};
    use roundtrip_runtime::redis::testing::{connect, unique_prefix, SpareRedis};

    /// One catalog, `none`, with nothing in it.
    #[derive(Debug)]
    struct NoCatalogs;

    impl CatalogSource for NoCatalogs {
        fn names(&self) -> Vec<String> {
            vec!["none".to_owned()]
        }

        fn build(&self, _name: &str) -> Option<Catalog> {
            Some(Catalog::builder().build())
        }
    }

    /// A registry (over a store in `dir`) with the anonymous tenant `acme`, limited by
    /// `limits`, and `free`, limited by nothing.
    async fn registry(dir: &tempfile::TempDir, limits: RateLimits) -> Arc<TenantRegistry> {
        let url = format!("sqlite://{}/store.db", dir.path().display());
        let store = SqlStore::open(&url).await.expect("the store opens");
        let mut spec = TenantSpec::new("Acme", vec!["none".into()], AuthMode::Anonymous);
        spec.rate_limits = limits;
        let acme = Slug::parse("acme").expect("a slug");
        store.create_tenant(&acme, &spec).await.expect("acme");
        let free = TenantSpec::new("Free", vec!["none".into()], AuthMode::Anonymous);
        let slug = Slug::parse("free").expect("a slug");
        store.create_tenant(&slug, &free).await.expect("free");
        let registry = Arc::new(TenantRegistry::new(Arc::new(store), Arc::new(NoCatalogs)));
        registry.load().await.expect("the tenants load");
        registry
    }

    fn tenant_limit(burst: u32) -> RateLimits {
        RateLimits {
            tenant: Some(RateLimit {
                per_second: 0.001,
                burst,
            }),
            ..RateLimits::default()
        }
    }

    async fn verdict(limiter: &RedisLimiter, tenant: &str, tool: Option<&str>) -> Admission {
        let anonymous = Principal::anonymous();
        match limiter.admit(tenant, &anonymous, None, tool) {
            Admission::Pending(verdict) => verdict.await.into(),
            decided => decided,
        }
    }

    #[tokio::test]
    async fn two_workers_sharing_redis_admit_the_limit_between_them() {
        let dir = tempfile::tempdir().expect("a directory");
        let registry = registry(&dir, tenant_limit(5)).await;
        // Two processes: a connection each to the one Redis, under the fleet's prefix.
        let prefix = unique_prefix();
        let workers = [
            RedisLimiter::new(
                registry.clone(),
                connect(&prefix).await,
                RedisFallback::Closed,
            ),
            RedisLimiter::new(registry, connect(&prefix).await, RedisFallback::Closed),
        ];
        let mut admitted = 0;
        for n in 0..10 {
            match verdict(&workers[n % 2], "acme", None).await {
                Admission::Admitted => admitted += 1,
                Admission::Refused(Refusal::OverLimit(_)) => {}
                other => panic!("request {n}: {other:?}"),
            }
        }
        assert_eq!(admitted, 5);
    }

    #[tokio::test]
    async fn a_request_no_limit_applies_to_is_admitted_without_asking_redis() {
        let dir = tempfile::tempdir().expect("a directory");
        let mut tools = BTreeMap::new();
        tools.insert(
            "quiet".to_owned(),
            RateLimit {
                per_second: 1.0,
                burst: 1,
            },
        );
        let only_a_tool = RateLimits {
            tools,
            ..RateLimits::default()
        };
        let registry = registry(&dir, only_a_tool).await;
        let spare = SpareRedis::start();
        let limiter = RedisLimiter::new(registry, spare.connect().await, RedisFallback::Closed);
        spare.stop();
        let anonymous = Principal::anonymous();
        for (tenant, tool) in [
            ("free", Some("quiet")),
            ("acme", None),
            ("acme", Some("echo")),
        ] {
            let admission = limiter.admit(tenant, &anonymous, None, tool);
            assert!(
                matches!(admission, Admission::Admitted),
                "{tenant} {tool:?}: {admission:?}"
            );
        }
        let asked = limiter.admit("acme", &anonymous, None, Some("quiet"));
        assert!(matches!(asked, Admission::Pending(_)), "{asked:?}");
    }

    #[tokio::test]
    async fn with_redis_gone_fail_open_admits_and_the_failure_is_counted() {
        let dir = tempfile::tempdir().expect("a directory");
        let registry = registry(&dir, tenant_limit(1)).await;
        let spare = SpareRedis::start();
        let redis = spare.connect().await;
        let errors = redis.error_count();
        let limiter = RedisLimiter::new(registry, redis, RedisFallback::Open);
        spare.stop();
        for _ in 0..3 {
            let admission = verdict(&limiter, "acme", None).await;
            assert!(matches!(admission, Admission::Admitted), "{admission:?}");
        }
        assert_eq!(errors.get(), 3);
    }

    #[tokio::test]
    async fn with_redis_gone_fail_closed_refuses_for_a_second_and_the_failure_is_counted() {
        let dir = tempfile::tempdir().expect("a directory");
        let registry = registry(&dir, tenant_limit(100)).await;
        let spare = SpareRedis::start();
        let redis = spare.connect().await;
        let errors = redis.error_count();
        let limiter = RedisLimiter::new(registry, redis, RedisFallback::Closed);
        spare.stop();
        let admission = verdict(&limiter, "acme", None).await;
        assert!(
            matches!(
                admission,
                Admission::Refused(Refusal::Unavailable(d)) if d == Duration::from_secs(1)
            ),
            "{admission:?}"
        );
        assert_eq!(errors.get(), 1);
    }
}
