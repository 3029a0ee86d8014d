//! Rate limits, enforced in this process: token buckets per tenant, per caller and per tool
//! ([`TenantLimits`]), built from a tenant's [`RateLimits`] and rebuilt (full) when they change.
//! A fleet of processes keeps the same buckets in Redis instead (`crate::redis_limits`); it
//! asks [`TenantLimits::applying`] which of them a request takes a token from.
//!
//! A request takes one token from every bucket that applies, or from none: all of them are
//! checked before any is consumed, so a refused request costs no bucket anything. The buckets
//! are shared by every worker thread of the process (a limit per worker would be a limit times
//! the workers); each is a mutex held for a few arithmetic operations.

use std::borrow::Cow;
use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use roundtrip_runtime::budget::caller_key;
use roundtrip_runtime::tenancy::Principal;

use crate::model::{RateLimit, RateLimits};

/// Callers whose buckets one tenant keeps; beyond it the least useful are forgotten (a
/// forgotten caller starts again with a full bucket, which only ever lets more through).
const MAX_CALLER_BUCKETS: usize = 65_536;

/// One token bucket.
#[derive(Debug)]
pub struct Bucket {
    limit: RateLimit,
    state: Mutex<Level>,
}

#[derive(Debug, Clone, Copy)]
struct Level {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    /// A full bucket for `limit`.
    pub fn new(limit: RateLimit, now: Instant) -> Bucket {
        Bucket {
            limit,
            state: Mutex::new(Level {
                tokens: f64::from(limit.burst),
                at: now,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Level> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The level at `now`, refilled since it was last read.
    fn refill(&self, level: &mut Level, now: Instant) {
        let elapsed = now.saturating_duration_since(level.at).as_secs_f64();
        level.tokens =
            (level.tokens + elapsed * self.limit.per_second).min(f64::from(self.limit.burst));
        level.at = now;
    }

    /// How long until a token is there, if none is now.
    fn wait(&self, level: &Level) -> Option<Duration> {
        (level.tokens < 1.0)
            .then(|| Duration::from_secs_f64((1.0 - level.tokens) / self.limit.per_second))
    }
}

/// Takes one token from each bucket, or from none: `Err` with the longest wait when any is
/// empty.
pub fn take_all(buckets: &[&Bucket], now: Instant) -> Result<(), Duration> {
    let mut levels: Vec<MutexGuard<'_, Level>> = buckets.iter().map(|b| b.lock()).collect();
    let mut wait = None;
    for (bucket, level) in buckets.iter().zip(levels.iter_mut()) {
        bucket.refill(level, now);
        wait = wait.max(bucket.wait(level));
    }
    if let Some(wait) = wait {
        return Err(wait);
    }
    for level in &mut levels {
        level.tokens -= 1.0;
    }
    Ok(())
}

/// Which of a tenant's buckets: its own, a caller's, or a tool's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BucketId<'a> {
    /// Every request to the tenant.
    Tenant,
    /// The requests of one caller (`TenantLimits::caller`).
    Caller(&'a str),
    /// The `tools/call`s of one tool.
    Tool(&'a str),
}

/// One tenant's buckets.
#[derive(Debug, Default)]
pub struct TenantLimits {
    tenant: Option<Bucket>,
    caller: Option<RateLimit>,
    callers: Mutex<HashMap<Arc<str>, Arc<Bucket>>>,
    tools: HashMap<String, Bucket>,
}

impl TenantLimits {
    /// Full buckets for `limits`.
    pub fn new(limits: &RateLimits) -> TenantLimits {
        let now = Instant::now();
        TenantLimits {
            tenant: limits.tenant.map(|l| Bucket::new(l, now)),
            caller: limits.key,
            callers: Mutex::new(HashMap::new()),
            tools: limits
                .tools
                .iter()
                .map(|(name, l)| (name.clone(), Bucket::new(*l, now)))
                .collect(),
        }
    }

    /// Does the tenant limit anything?
    pub fn is_empty(&self) -> bool {
        self.tenant.is_none() && self.caller.is_none() && self.tools.is_empty()
    }

    /// Whether a per-caller (`key`) limit is set.
    pub fn limits_callers(&self) -> bool {
        self.caller.is_some()
    }

    /// Who a request of `principal` from `client` counts against: the runtime's
    /// `budget::caller_key`, which tells anonymous callers apart by address only when a
    /// per-caller limit needs it.
    pub fn caller<'a>(&self, principal: &'a Principal, client: Option<IpAddr>) -> Cow<'a, str> {
        caller_key(principal.id(), client.filter(|_| self.limits_callers()))
    }

    /// The limits a request of `caller` (a `tools/call` of `tool` when given) takes a token
    /// under, each with the bucket it names: what a backend that keeps the buckets elsewhere
    /// (`crate::redis_limits`) needs.
    pub fn applying<'a>(
        &'a self,
        caller: &'a str,
        tool: Option<&'a str>,
    ) -> impl Iterator<Item = (BucketId<'a>, RateLimit)> + 'a {
        let tenant = self.tenant.as_ref().map(|b| (BucketId::Tenant, b.limit));
        let caller = self.caller.map(|limit| (BucketId::Caller(caller), limit));
        let tool = tool.and_then(|name| {
            let (name, bucket) = self.tools.get_key_value(name)?;
            Some((BucketId::Tool(name), bucket.limit))
        });
        tenant.into_iter().chain(caller).chain(tool)
    }

    /// Admits one request of `caller` (a principal id, or `anonymous@<ip>`: the runtime's
    /// `budget::caller_key`), a `tools/call` of `tool` when given;
    /// `Err` with how long to wait.
    pub fn admit(&self, caller: &str, tool: Option<&str>) -> Result<(), Duration> {
        if self.is_empty() {
            return Ok(());
        }
        let now = Instant::now();
        let caller_bucket = self
            .caller
            .map(|limit| self.caller_bucket(caller, limit, now));
        let mut buckets: Vec<&Bucket> = Vec::with_capacity(3);
        buckets.extend(self.tenant.as_ref());
        buckets.extend(caller_bucket.as_deref());
        buckets.extend(tool.and_then(|t| self.tools.get(t)));
        take_all(&buckets, now)
    }

    fn caller_bucket(&self, caller: &str, limit: RateLimit, now: Instant) -> Arc<Bucket> {
        let mut callers = self.callers.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(bucket) = callers.get(caller) {
            return bucket.clone();
        }
        if callers.len() >= MAX_CALLER_BUCKETS {
            // Full buckets say nothing: forget them first, then anything.
            callers.retain(|_, b| b.wait(&b.lock()).is_some() || Arc::strong_count(b) > 1);
            if callers.len() >= MAX_CALLER_BUCKETS {
                callers.clear();
            }
        }
        let bucket = Arc::new(Bucket::new(limit, now));
        callers.insert(Arc::from(caller), bucket.clone());
        bucket
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limit(per_second: f64, burst: u32) -> RateLimit {
        RateLimit { per_second, burst }
    }

    #[test]
    fn a_bucket_lets_its_burst_through_then_waits_for_its_rate() {
        let start = Instant::now();
        let bucket = Bucket::new(limit(2.0, 3), start);
        for _ in 0..3 {
            assert_eq!(take_all(&[&bucket], start), Ok(()));
        }
        let wait = take_all(&[&bucket], start).expect_err("empty");
        assert!((wait.as_secs_f64() - 0.5).abs() < 1e-9, "{wait:?}");
        assert_eq!(
            take_all(&[&bucket], start + Duration::from_millis(500)),
            Ok(())
        );
    }

    #[test]
    fn a_refused_request_consumes_no_bucket() {
        let now = Instant::now();
        let roomy = Bucket::new(limit(1.0, 5), now);
        let empty = Bucket::new(limit(1.0, 1), now);
        take_all(&[&empty], now).expect("the one token");
        assert!(take_all(&[&roomy, &empty], now).is_err());
        for _ in 0..5 {
            assert_eq!(take_all(&[&roomy], now), Ok(()), "roomy kept all five");
        }
    }

    #[test]
    fn each_caller_has_a_bucket_of_its_own() {
        let limits = TenantLimits::new(&RateLimits {
            key: Some(limit(0.001, 1)),
            ..RateLimits::default()
        });
        assert_eq!(limits.admit("key:a", None), Ok(()));
        assert!(limits.admit("key:a", None).is_err());
        assert_eq!(limits.admit("key:b", None), Ok(()));
    }

    #[test]
    fn a_tool_limit_applies_to_that_tool_only() {
        let mut tools = std::collections::BTreeMap::new();
        tools.insert("slow".to_owned(), limit(0.001, 1));
        let limits = TenantLimits::new(&RateLimits {
            tools,
            ..RateLimits::default()
        });
        assert_eq!(limits.admit("a", Some("slow")), Ok(()));
        assert!(limits.admit("b", Some("slow")).is_err());
        assert_eq!(limits.admit("a", Some("echo")), Ok(()));
        assert_eq!(limits.admit("a", None), Ok(()));
    }

    #[test]
    fn a_request_takes_from_the_tenant_its_caller_and_its_limited_tool() {
        let mut tools = std::collections::BTreeMap::new();
        tools.insert("slow".to_owned(), limit(1.0, 1));
        let limits = TenantLimits::new(&RateLimits {
            tenant: Some(limit(10.0, 10)),
            key: Some(limit(2.0, 2)),
            tools,
        });
        let ids = |tool| -> Vec<BucketId<'_>> {
            limits.applying("key:a", tool).map(|(id, _)| id).collect()
        };
        assert_eq!(
            ids(Some("slow")),
            [
                BucketId::Tenant,
                BucketId::Caller("key:a"),
                BucketId::Tool("slow")
            ]
        );
        assert_eq!(
            ids(Some("echo")),
            [BucketId::Tenant, BucketId::Caller("key:a")]
        );
        assert!(TenantLimits::new(&RateLimits::default())
            .applying("key:a", Some("slow"))
            .next()
            .is_none());
    }

    #[test]
    fn the_tenant_limit_counts_every_caller() {
        let limits = TenantLimits::new(&RateLimits {
            tenant: Some(limit(0.001, 2)),
            ..RateLimits::default()
        });
        assert_eq!(limits.admit("a", None), Ok(()));
        assert_eq!(limits.admit("b", None), Ok(()));
        assert!(limits.admit("c", None).is_err());
    }
}
