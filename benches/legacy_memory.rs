//! Memory the server holds for legacy sessions, measured on the real binary (one worker):
//!
//! 1. **Idle sessions**: `initialize` over one keep-alive connection, `SESSIONS` times
//!    (default 10,000); RSS growth per session, at half and at all of them.
//! 2. **Open shim flows**: `FLOWS` legacy `tools/call`s (default 10,000, spread over 100
//!    sessions), each a connection whose SSE stream carries the shim's `elicitation/create`
//!    and then waits for the answer. RSS growth per open flow, measured while all are open;
//!    then every leg is answered and every flow must complete with its own greeting
//!    ("lost" counts those that do not).
//!
//! Run: `cargo bench --bench legacy_memory`. Linux only (reads /proc). Both the server and
//! this process need a file descriptor per flow (`ulimit -n`).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use roundtrip::bench::{initialize_body, proc_status_kb};

const TENANT_PATH: &str = "/t/conformance/mcp";
const FLOW_TOOL: &str = "test_input_required_result_elicitation";
const FLOWS_PER_SESSION: usize = 100;

fn main() {
    let sessions = env_usize("SESSIONS", 10_000);
    let flows = env_usize("FLOWS", 10_000);
    let port = free_port();
    let mut server = Server::start(port, sessions + flows);
    let mut conn = Connection::open(port);

    // Warm up: the first sessions and flows pay for one-time allocations.
    for _ in 0..200 {
        conn.initialize();
    }
    let mut warm = Flows::open(port, &mut conn, 200);
    warm.answer_and_finish(&mut conn);
    settle();
    let base = server.rss_kib();

    let half = sessions / 2;
    for _ in 0..half {
        conn.initialize();
    }
    settle();
    let at_half = server.rss_kib();
    for _ in half..sessions {
        conn.initialize();
    }
    settle();
    let at_all = server.rss_kib();

    println!("legacy_memory: one worker");
    println!("  baseline RSS                       {base} KiB");
    println!(
        "  idle sessions  +{half:>6}: RSS {at_half} KiB, {:.0} bytes/session",
        per(at_half.saturating_sub(base), half)
    );
    println!(
        "  idle sessions  +{sessions:>6}: RSS {at_all} KiB, {:.0} bytes/session",
        per(at_all.saturating_sub(base), sessions)
    );

    let started = Instant::now();
    let mut open = Flows::open(port, &mut conn, flows);
    let opened_in = started.elapsed();
    settle();
    let with_flows = server.rss_kib();
    let (completed, lost) = open.answer_and_finish(&mut conn);
    println!(
        "  open shim flows +{flows:>5}: RSS {with_flows} KiB, {:.0} bytes/flow (opened in {:.1} s)",
        per(with_flows.saturating_sub(at_all), flows),
        opened_in.as_secs_f64()
    );
    println!("  flows completed {completed}, lost {lost}");
    server.stop();
    if lost > 0 {
        std::process::exit(1);
    }
}

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn per(kib: u64, n: usize) -> f64 {
    kib as f64 * 1024.0 / n.max(1) as f64
}

fn settle() {
    std::thread::sleep(Duration::from_millis(500));
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

struct Server(Child);

impl Server {
    fn start(port: u16, capacity: usize) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--workers",
                "1",
            ])
            .env("ROUNDTRIP_LOG", "warn")
            .env("ROUNDTRIP_LEGACY__MAX_SESSIONS", capacity.to_string())
            .env(
                "ROUNDTRIP_LEGACY__MAX_SESSIONS_PER_CALLER",
                capacity.to_string(),
            )
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the server starts");
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "server did not listen");
            std::thread::sleep(Duration::from_millis(50));
        }
        Server(child)
    }

    fn rss_kib(&self) -> u64 {
        proc_status_kb(self.0.id(), "VmRSS").expect("the server's VmRSS")
    }

    fn stop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A bench that fails part-way must not leave its server running.
impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The head of an HTTP response.
struct Head {
    status: u16,
    length: Option<usize>,
    session: Option<String>,
}

fn read_head(reader: &mut impl BufRead) -> Head {
    let mut status = String::new();
    reader.read_line(&mut status).expect("status line");
    let status = status
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status:?}"));
    let mut head = Head {
        status,
        length: None,
        session: None,
    };
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            return head;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        match name.to_ascii_lowercase().as_str() {
            "content-length" => head.length = value.trim().parse().ok(),
            "mcp-session-id" => head.session = Some(value.trim().to_owned()),
            _ => {}
        }
    }
}

fn write_post(stream: &mut TcpStream, port: u16, session: Option<&str>, body: &str) {
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST {TENANT_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
}

/// A keep-alive connection for `initialize` and for answers.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    port: u16,
}

impl Connection {
    fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Connection {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            port,
        }
    }

    /// POSTs `body`; the status, the session header and the body.
    fn post(&mut self, session: Option<&str>, body: &str) -> (Head, Vec<u8>) {
        write_post(&mut self.writer, self.port, session, body);
        let head = read_head(&mut self.reader);
        let mut body = vec![0; head.length.unwrap_or(0)];
        self.reader.read_exact(&mut body).expect("body");
        (head, body)
    }

    fn initialize(&mut self) -> String {
        let (head, _) = self.post(None, &initialize_body());
        assert_eq!(head.status, 200, "initialize failed");
        head.session.expect("an Mcp-Session-Id")
    }
}

/// Shim flows held open: one connection each, its leg read, its answer not yet sent.
struct Flows {
    open: Vec<OpenFlow>,
}

struct OpenFlow {
    reader: BufReader<TcpStream>,
    session: String,
    leg_id: String,
    name: String,
}

impl Flows {
    fn open(port: u16, conn: &mut Connection, n: usize) -> Flows {
        let mut session = String::new();
        let mut open = Vec::with_capacity(n);
        for i in 0..n {
            if i % FLOWS_PER_SESSION == 0 {
                session = conn.initialize();
            }
            let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
            stream.set_nodelay(true).expect("nodelay");
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{FLOW_TOOL}"}}}}"#
            );
            write_post(&mut stream, port, Some(&session), &body);
            let mut reader = BufReader::new(stream);
            let head = read_head(&mut reader);
            assert_eq!(head.status, 200, "flow {i} refused");
            let leg = next_event(&mut reader).unwrap_or_else(|| panic!("flow {i}: no leg"));
            assert_eq!(leg["method"], "elicitation/create", "flow {i}: {leg}");
            let leg_id = leg["id"].as_str().expect("a string leg id").to_owned();
            open.push(OpenFlow {
                reader,
                session: session.clone(),
                leg_id,
                name: format!("flow-{i}"),
            });
        }
        Flows { open }
    }

    /// Answers every leg, then reads every flow's result: (completed, lost).
    fn answer_and_finish(&mut self, conn: &mut Connection) -> (usize, usize) {
        for flow in &self.open {
            let body = format!(
                r#"{{"jsonrpc":"2.0","id":"{}","result":{{"action":"accept","content":{{"name":"{}"}}}}}}"#,
                flow.leg_id, flow.name
            );
            let (head, _) = conn.post(Some(&flow.session), &body);
            assert_eq!(head.status, 202, "answer refused");
        }
        let mut completed = 0;
        for flow in &mut self.open {
            let want = format!("Hello, {}!", flow.name);
            let done = next_event(&mut flow.reader).and_then(|r| {
                r["result"]["content"][0]["text"]
                    .as_str()
                    .map(str::to_owned)
            });
            if done.as_deref() == Some(want.as_str()) {
                completed += 1;
            }
        }
        let lost = self.open.len() - completed;
        self.open.clear();
        (completed, lost)
    }
}

/// The next JSON-RPC message on an SSE stream (chunked transfer encoding), skipping
/// keep-alive comments; `None` when the stream ends.
fn next_event(reader: &mut BufReader<TcpStream>) -> Option<serde_json::Value> {
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        // Chunk sizes and SSE framing lines interleave; only `data:` lines matter here.
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            return serde_json::from_str(data).ok();
        }
    }
}
