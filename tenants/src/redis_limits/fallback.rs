//! What a request is told when its limits cannot be checked because Redis failed (did not
//! answer within its handle's bound, or refused): [`RedisFallback`], the operator's choice,
//! and [`Fallback`], which applies it and says so in the log at most every
//! [`WARN_EVERY`] (every failure is counted by the handle, on `/metrics`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use redis::RedisError;
use roundtrip_runtime::redis::RedisErrorCount;
use roundtrip_runtime::tenancy::Refusal;
use serde::Deserialize;

/// The longest the log goes without a warning while rate limits cannot be checked.
pub const WARN_EVERY: Duration = Duration::from_secs(10);

/// When a request refused because its limits could not be checked may try again.
pub const RETRY_CLOSED: Duration = Duration::from_secs(1);

/// What to do with a request whose limits cannot be checked (`limits.redis_fallback`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RedisFallback {
    /// Admit it: an outage of Redis lifts the limits, and serving goes on.
    #[default]
    Open,
    /// Refuse it (-31503, HTTP 503, `Retry-After: 1`): an outage of Redis stops every
    /// request a limit applies to.
    Closed,
}

/// [`RedisFallback`] applied, its warnings paced.
#[derive(Debug)]
pub struct Fallback {
    mode: RedisFallback,
    errors: RedisErrorCount,
    started: Instant,
    /// When the last warning was logged, in milliseconds since `started`, plus one (0:
    /// never).
    warned: AtomicU64,
}

impl Fallback {
    /// `mode`, reporting `errors` (the handle's count) in its warnings.
    pub fn new(mode: RedisFallback, errors: RedisErrorCount) -> Fallback {
        Fallback {
            mode,
            errors,
            started: Instant::now(),
            warned: AtomicU64::new(0),
        }
    }

    /// The verdict on a request of `tenant` whose limits failed to be checked with `error`.
    pub fn verdict(&self, tenant: &str, error: &RedisError) -> Result<(), Refusal> {
        if self.may_warn() {
            tracing::warn!(
                tenant,
                fallback = ?self.mode,
                redis_errors = self.errors.get(),
                error = %error,
                "rate limits could not be checked in Redis; until it answers, requests are {}",
                match self.mode {
                    RedisFallback::Open => "admitted",
                    RedisFallback::Closed => "refused",
                }
            );
        }
        match self.mode {
            RedisFallback::Open => Ok(()),
            RedisFallback::Closed => Err(Refusal::Unavailable(RETRY_CLOSED)),
        }
    }

    /// Whether this failure is the one to log: the first, or the first [`WARN_EVERY`] after
    /// the last logged. One caller wins a race.
    fn may_warn(&self) -> bool {
        let now = u64::try_from(self.started.elapsed().as_millis())
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let last = self.warned.load(Ordering::Relaxed);
        let due = last == 0 || now.saturating_sub(last) >= WARN_EVERY.as_millis() as u64;
        due && self
            .warned
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused() -> RedisError {
        RedisError::from(std::io::Error::from(std::io::ErrorKind::ConnectionRefused))
    }

    #[test]
    fn open_admits_and_closed_refuses_for_a_second() {
        let errors = RedisErrorCount::default();
        let open = Fallback::new(RedisFallback::Open, errors.clone());
        assert_eq!(open.verdict("acme", &refused()), Ok(()));
        let closed = Fallback::new(RedisFallback::Closed, errors);
        assert_eq!(
            closed.verdict("acme", &refused()),
            Err(Refusal::Unavailable(Duration::from_secs(1)))
        );
    }

    #[test]
    fn a_burst_of_failures_is_one_warning() {
        let fallback = Fallback::new(RedisFallback::Open, RedisErrorCount::default());
        assert!(fallback.may_warn(), "the first failure is logged");
        assert!(!fallback.may_warn(), "the next, right after, is not");
    }

    #[test]
    fn the_fallback_is_named_in_lowercase_in_the_settings() {
        #[derive(Deserialize)]
        struct Settings {
            redis_fallback: RedisFallback,
        }
        let read = |v: &str| {
            serde_json::from_value::<Settings>(serde_json::json!({ "redis_fallback": v }))
                .map(|s| s.redis_fallback)
        };
        assert_eq!(read("open").ok(), Some(RedisFallback::Open));
        assert_eq!(read("closed").ok(), Some(RedisFallback::Closed));
        assert!(read("Closed ").is_err());
    }
}
