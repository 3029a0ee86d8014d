//! `roundtrip serve` as a child process, with its data in a directory of the test's, as an
//! operator runs it: for what only a real process shows (its banner, its exit status, a
//! restart over the same data).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// `roundtrip serve` on a free port with one worker and its data in `dir`, logging only
/// warnings, with no demo key or master key from the test's environment: add to it, then
/// spawn it (or run it to see it fail).
pub(crate) fn command(dir: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_roundtrip"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--workers", "1"])
        .env("ROUNDTRIP_DATA_DIR", dir)
        .env("ROUNDTRIP_TENANTS__FOLLOW_MS", "100")
        .env("ROUNDTRIP_LOG", "warn")
        .env_remove("ROUNDTRIP_DEMO_API_KEY")
        .env_remove("ROUNDTRIP_MASTER_KEY")
        .env_remove("ROUNDTRIP_DATABASE_URL")
        .env_remove("RUST_LOG");
    command
}

/// `roundtrip serve` on a free port with its data in `dir`; stopped (SIGTERM) when dropped.
pub(crate) struct Serve {
    child: Child,
    pub(crate) url: String,
    /// What it printed before it listened.
    pub(crate) banner: Vec<String>,
}

impl Serve {
    pub(crate) fn start(dir: &Path) -> Serve {
        Serve::start_command(command(dir))
    }

    /// Spawns `command` (from [`command`], with settings added) and waits until it listens.
    pub(crate) fn start_command(mut command: Command) -> Serve {
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("roundtrip serve starts");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
        let mut banner = Vec::new();
        let mut url = None;
        for line in lines.by_ref() {
            let line = line.expect("a line of the banner");
            if let Some(base) = line.split(" listening on ").nth(1) {
                url = Some(base.to_owned());
            }
            let last = line.contains("admin API");
            banner.push(line);
            if last {
                break;
            }
        }
        // Keep reading stdout so the server never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        Serve {
            child,
            url: url.expect("the listening address"),
            banner,
        }
    }

    pub(crate) fn demo_key(&self) -> Option<String> {
        self.banner
            .iter()
            .find_map(|l| l.split("): ").nth(1).filter(|_| l.contains("demo API key")))
            .map(|k| k.trim().to_owned())
    }

    /// Kills it at once (SIGKILL), as a crash would: nothing is closed gracefully.
    pub(crate) fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    pub(crate) fn stop(mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
