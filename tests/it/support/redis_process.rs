//! A Redis server of the test's own, keeping nothing on disk, as the machine's is: for tests
//! that stop and restart Redis, which they must not do to the one every test shares.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `redis-server` on a port of its own; killed when dropped.
pub(crate) struct RedisProcess {
    child: Child,
    pub(crate) port: u16,
}

impl RedisProcess {
    /// Starts one on a free port.
    pub(crate) fn start() -> RedisProcess {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        RedisProcess::start_on(port)
    }

    /// Starts one on `port` (again, after [`RedisProcess::stop`]): empty, as a Redis without
    /// persistence comes back.
    pub(crate) fn start_on(port: u16) -> RedisProcess {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let deadline = Instant::now() + Duration::from_secs(10);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server listens on {port}");
            std::thread::sleep(Duration::from_millis(20));
        }
        RedisProcess { child, port }
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Kills it; returns its port, to start another on.
    pub(crate) fn stop(mut self) -> u16 {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.port
    }
}

impl Drop for RedisProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
