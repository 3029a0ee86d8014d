//! `roundtrip serve` as a child process, with its data in a directory of the test's, as an
//! operator runs it: for what only a real process shows (its banner, its exit status, a
//! restart over the same data).

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::Value;

use super::requests::mcp_headers;

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
    /// Its stderr, when captured ([`Serve::start_capturing_stderr`]): read to its end by a
    /// thread of ours, so the server never blocks on a full pipe.
    stderr: Option<(Arc<Mutex<String>>, JoinHandle<()>)>,
}

impl Serve {
    pub(crate) fn start(dir: &Path) -> Serve {
        Serve::start_command(command(dir))
    }

    /// Spawns `command` (from [`command`], with settings added) and waits until it listens.
    pub(crate) fn start_command(command: Command) -> Serve {
        Serve::spawn(command, false)
    }

    /// [`Serve::start_command`], keeping what it writes on stderr (its logs): see
    /// [`Serve::stop_with_stderr`].
    pub(crate) fn start_capturing_stderr(command: Command) -> Serve {
        Serve::spawn(command, true)
    }

    fn spawn(mut command: Command, capture_stderr: bool) -> Serve {
        let stderr = if capture_stderr {
            Stdio::piped()
        } else {
            Stdio::null()
        };
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(stderr)
            .spawn()
            .expect("roundtrip serve starts");
        let stderr = child.stderr.take().map(|pipe| {
            let text = Arc::new(Mutex::new(String::new()));
            let sink = Arc::clone(&text);
            let reader = std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let mut text = sink.lock().expect("stderr lock");
                    text.push_str(&line);
                    text.push('\n');
                }
            });
            (text, reader)
        });
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
            stderr,
        }
    }

    /// POSTs `body` to its demo tenant with `key`; the JSON-RPC reply.
    pub(crate) async fn call_demo(&self, key: &str, body: &Value) -> Value {
        self.call_demo_with(key, body, &[]).await
    }

    /// [`Serve::call_demo`] with more headers.
    pub(crate) async fn call_demo_with(
        &self,
        key: &str,
        body: &Value,
        headers: &[(&str, &str)],
    ) -> Value {
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(20))
            .finish();
        let mut req = client
            .post(format!("{}/t/demo/mcp", self.url))
            .insert_header(("content-type", "application/json"))
            .insert_header(("accept", "application/json, text/event-stream"))
            .insert_header(("authorization", format!("Bearer {key}")));
        for (name, value) in mcp_headers(Some(body)) {
            req = req.insert_header((name, value));
        }
        for (name, value) in headers {
            req = req.insert_header((*name, *value));
        }
        let mut resp = req.send_json(body).await.expect("serve answers");
        let bytes = resp.body().await.expect("a reply body");
        serde_json::from_slice(&bytes).expect("a JSON reply")
    }

    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
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
        self.terminate();
    }

    /// Stops it (SIGTERM) and waits for it to exit: everything it wrote on stderr, started
    /// with [`Serve::start_capturing_stderr`].
    pub(crate) fn stop_with_stderr(mut self) -> String {
        self.terminate();
        let (text, reader) = self.stderr.take().expect("started capturing stderr");
        reader.join().expect("the stderr reader");
        let text = text.lock().expect("stderr lock").clone();
        text
    }

    fn terminate(&mut self) {
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
