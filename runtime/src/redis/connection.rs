//! The [`Redis`] handle: one connection per process, shared by every backend that keeps
//! something in Redis.
//!
//! Calls come from several runtimes (the KeyManager's Arbiter, each HTTP worker's), but the
//! connection's driver task lives on the runtime that opened it, so every call is run there
//! (a [`Handle`] taken at [`Redis::connect`]), and awaited for at most [`CALL_TIMEOUT`]: a
//! Redis that does not answer fails the call, it never holds the caller. The connection
//! reconnects on its own after Redis comes back; until then calls fail fast, and each
//! failure is counted ([`RedisErrorCount`], on `/metrics`).
//!
//! Every key is under one prefix (`roundtrip:` by default), so fleets, or tests, that share
//! a Redis do not see each other's keys.

use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::{Client, RedisError};
use tokio::runtime::Handle;

/// The longest a call to Redis is waited for before it counts as failed.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(2);

/// How long one attempt to (re)connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// The prefix of every key and channel, unless [`Redis::with_prefix`] sets another.
const DEFAULT_PREFIX: &str = "roundtrip";

/// `ROUNDTRIP_REDIS_URL` is not a Redis URL. Never carries the URL, which may hold a
/// password.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a Redis URL (redis://[:password@]host[:port][/db] or unix:///path)")]
pub struct RedisUrlError;

/// How many calls to Redis failed (unreachable, timed out, or refused) since start. Cheap to
/// clone; reading it is one atomic load.
#[derive(Debug, Clone, Default)]
pub struct RedisErrorCount(Arc<AtomicU64>);

impl RedisErrorCount {
    /// The count so far.
    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }

    fn add(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A process's connection to Redis. Cheap to clone: clones share the connection.
#[derive(Clone)]
pub struct Redis {
    client: Client,
    connection: ConnectionManager,
    runtime: Handle,
    prefix: Arc<str>,
    errors: RedisErrorCount,
}

impl std::fmt::Debug for Redis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the client: its connection info may hold a password.
        f.debug_struct("Redis")
            .field("prefix", &self.prefix)
            .field("errors", &self.errors.get())
            .finish_non_exhaustive()
    }
}

impl Redis {
    /// Checks that `url` is a Redis URL, without connecting: for validating settings.
    pub fn check_url(url: &str) -> Result<(), RedisUrlError> {
        Client::open(url).map(drop).map_err(|_| RedisUrlError)
    }

    /// Connects to the Redis at `url`, on the current runtime, which must keep running while
    /// the handle is used (the server's main one). Fails if Redis cannot be reached now.
    pub async fn connect(url: &str) -> Result<Redis, RedisError> {
        let client = Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(CALL_TIMEOUT))
            // Retry reconnecting briefly per call; the next call tries again.
            .set_number_of_retries(1)
            .set_max_delay(Duration::from_millis(200));
        let connection = tokio::time::timeout(
            CALL_TIMEOUT,
            ConnectionManager::new_with_config(client.clone(), config),
        )
        .await
        .map_err(|_| timed_out())??;
        Ok(Redis {
            client,
            connection,
            runtime: Handle::current(),
            prefix: Arc::from(DEFAULT_PREFIX),
            errors: RedisErrorCount::default(),
        })
    }

    /// The same connection, its keys and channels under `prefix` instead of `roundtrip`.
    pub fn with_prefix(self, prefix: &str) -> Redis {
        Redis {
            prefix: Arc::from(prefix),
            ..self
        }
    }

    /// The count of failed calls, to read while the handle is in use.
    pub fn error_count(&self) -> RedisErrorCount {
        self.errors.clone()
    }

    /// The key or channel `name` under this handle's prefix: `{prefix}:{name}`.
    pub fn key(&self, name: &str) -> String {
        format!("{}:{name}", self.prefix)
    }

    /// The address of this host on its route to Redis: the one the other workers of a fleet,
    /// which reach the same Redis, most likely reach this one at. No packet is sent (a UDP
    /// socket is only connected, which picks the route). `None` for a Redis on a Unix socket.
    pub fn local_ip_toward(&self) -> Option<std::net::IpAddr> {
        use std::net::{ToSocketAddrs, UdpSocket};
        let redis::ConnectionAddr::Tcp(host, port) = self.client.get_connection_info().addr()
        else {
            return None;
        };
        let target = (host.as_str(), *port).to_socket_addrs().ok()?.next()?;
        let any = if target.is_ipv4() {
            "0.0.0.0:0"
        } else {
            "[::]:0"
        };
        let socket = UdpSocket::bind(any).ok()?;
        socket.connect(target).ok()?;
        Some(socket.local_addr().ok()?.ip())
    }

    /// A client to open connections of its own with (a subscription needs one).
    pub fn client(&self) -> &Client {
        &self.client
    }

    /// Counts a failure seen outside [`Redis::call`] (by a subscription).
    pub fn count_error(&self) {
        self.errors.add();
    }

    /// Runs `work` with the shared connection on the runtime that opened it, and waits at
    /// most [`CALL_TIMEOUT`]. A failure of any kind is counted.
    pub async fn call<T, F, Fut>(&self, work: F) -> Result<T, RedisError>
    where
        T: Send + 'static,
        F: FnOnce(ConnectionManager) -> Fut,
        Fut: Future<Output = Result<T, RedisError>> + Send + 'static,
    {
        let task = self.runtime.spawn(work(self.connection.clone()));
        let outcome = match tokio::time::timeout(CALL_TIMEOUT, task).await {
            Ok(Ok(outcome)) => outcome,
            Ok(Err(join)) => Err(RedisError::from(std::io::Error::other(join))),
            Err(_) => Err(timed_out()),
        };
        if outcome.is_err() {
            self.errors.add();
        }
        outcome
    }
}

/// The error of a Redis call or connection that took longer than allowed.
pub(crate) fn timed_out() -> RedisError {
    RedisError::from(std::io::Error::from(std::io::ErrorKind::TimedOut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_redis_url_passes_the_check_and_anything_else_fails_it_without_echoing_it() {
        assert_eq!(Redis::check_url("redis://127.0.0.1:6379/0"), Ok(()));
        assert_eq!(Redis::check_url("redis://:pw@host"), Ok(()));
        let err = Redis::check_url("http://:hunter2@host").unwrap_err();
        assert!(!err.to_string().contains("hunter2"));
        assert_eq!(Redis::check_url("not a url"), Err(RedisUrlError));
    }
}
