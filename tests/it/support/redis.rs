//! Redis for the tests: the machine's (`ROUNDTRIP_TEST_REDIS_URL`, default
//! `redis://127.0.0.1:6379`) under a prefix of each test's own, and [`SpareRedis`], a server
//! a test starts and stops to see what a Redis that went away does.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use roundtrip_runtime::redis::Redis;

/// A prefix no other test (of this run or an earlier one) uses.
pub(crate) fn unique_prefix() -> String {
    static PREFIXES: AtomicUsize = AtomicUsize::new(0);
    let n = PREFIXES.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("roundtrip-it-{}-{nanos}-{n}", std::process::id())
}

/// The machine's Redis under `prefix`, opened on the current runtime.
pub(crate) async fn connect(prefix: &str) -> Redis {
    let url = std::env::var("ROUNDTRIP_TEST_REDIS_URL")
        .unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned());
    Redis::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("the test Redis at {url} answers: {e}"))
        .with_prefix(prefix)
}

/// A `redis-server` of the test's own on a free port, keeping nothing on disk; killed by
/// [`SpareRedis::stop`] or when dropped.
pub(crate) struct SpareRedis {
    child: Child,
    port: u16,
}

impl SpareRedis {
    /// Starts it and waits until it listens.
    pub(crate) fn start() -> SpareRedis {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        SpareRedis::start_on(port)
    }

    /// Starts it on `port` (again, after [`SpareRedis::stop`]): empty, as a Redis without
    /// persistence comes back.
    pub(crate) fn start_on(port: u16) -> SpareRedis {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
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

    /// A handle to it, opened on the current runtime.
    pub(crate) async fn connect(&self) -> Redis {
        Redis::connect(&self.url())
            .await
            .expect("the spare Redis answers")
    }

    /// Its URL.
    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills it: every call through a handle to it fails from now on. Returns its port, to
    /// start another on.
    pub(crate) fn stop(self) -> u16 {
        self.port
    }
}

impl Drop for SpareRedis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
