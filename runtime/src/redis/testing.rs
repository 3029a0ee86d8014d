//! Redis for tests, in this crate and in the crates built on it (feature `testing`): the
//! machine's Redis (`ROUNDTRIP_TEST_REDIS_URL`, default `redis://127.0.0.1:6379`) under a
//! prefix of each test's own, and [`SpareRedis`], a server a test starts, stops and starts
//! again, to see what a Redis that went away (or came back empty) does.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::connection::Redis;

/// A prefix no other test (of this run or an earlier one) uses.
pub fn unique_prefix() -> String {
    format!("roundtrip-test-{:016x}", rand::random::<u64>())
}

/// The machine's Redis under `prefix`, opened on the current runtime.
pub async fn connect(prefix: &str) -> Redis {
    let url = std::env::var("ROUNDTRIP_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    Redis::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("the test Redis at {url} answers: {e}"))
        .with_prefix(prefix)
}

/// The machine's Redis under a prefix of its own.
pub async fn test_redis() -> Redis {
    connect(&unique_prefix()).await
}

/// A `redis-server` of the test's own, keeping nothing on disk; killed by
/// [`SpareRedis::stop`] or when dropped.
#[derive(Debug)]
pub struct SpareRedis {
    child: Child,
    port: u16,
}

impl SpareRedis {
    /// Starts one on a free port and waits until it listens.
    pub fn start() -> SpareRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        SpareRedis::start_on(port)
    }

    /// Starts one on `port` (again, after [`SpareRedis::stop`]): empty, as a Redis without
    /// persistence comes back.
    pub fn start_on(port: u16) -> SpareRedis {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let spare = SpareRedis { child, port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server listens on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        spare
    }

    /// Its URL.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// A handle to it, opened on the current runtime.
    pub async fn connect(&self) -> Redis {
        Redis::connect(&self.url())
            .await
            .expect("the spare Redis answers")
    }

    /// Kills it: every call through a handle to it fails from now on. Returns its port, to
    /// start another on.
    pub fn stop(self) -> u16 {
        self.port
    }
}

impl Drop for SpareRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
