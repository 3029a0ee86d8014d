//! Redis for the tests: the machine's (`ROUNDTRIP_TEST_REDIS_URL`, default
//! `redis://127.0.0.1:6379`) under a prefix of each test's own, and [`SpareRedis`], a server
//! a test starts and stops to see what a Redis that went away does.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use roundtrip_runtime::redis::Redis;

/// A prefix no other test uses.
pub(super) fn unique_prefix() -> String {
    format!("roundtrip-test-{:016x}", rand::random::<u64>())
}

/// The machine's Redis under `prefix`.
pub(super) async fn connect(prefix: &str) -> Redis {
    let url = std::env::var("ROUNDTRIP_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    Redis::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("the test Redis at {url} answers: {e}"))
        .with_prefix(prefix)
}

/// The machine's Redis under a prefix of its own.
pub(super) async fn test_redis() -> Redis {
    connect(&unique_prefix()).await
}

/// A `redis-server` of the test's own on a free port, keeping nothing on disk; killed by
/// [`SpareRedis::stop`] or when dropped.
pub(super) struct SpareRedis {
    child: Child,
    port: u16,
}

impl SpareRedis {
    /// Starts it and waits until it listens.
    pub(super) fn start() -> SpareRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
            ])
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

    /// A handle to it.
    pub(super) async fn connect(&self) -> Redis {
        Redis::connect(&format!("redis://127.0.0.1:{}", self.port))
            .await
            .expect("the spare Redis answers")
    }

    /// Kills it: every call through a handle to it fails from now on.
    pub(super) fn stop(self) {}
}

impl Drop for SpareRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
