//! Memory the server holds for legacy sessions, measured on the real binary (one worker):
//!
//! 1. **Idle sessions**: `initialize` over one HTTP/1.1 keep-alive connection, `SESSIONS`
//!    times (default 10,000); RSS growth per session, at half and at all of them.
//! 2. **Open shim flows**: `FLOWS` legacy `tools/call`s (default 10,000, spread over 100
//!    sessions), each an SSE stream that carries the shim's `elicitation/create` and then waits
//!    for the answer. RSS growth per open flow, measured while all are open; then every leg is
//!    answered and every flow must complete with its own greeting ("lost" counts those that
//!    do not; the bench exits 1 if any is lost).
//!
//! `LEGACY_MEMORY_TRANSPORT` picks how the flows travel:
//! - `http1`: a TCP connection per flow (a legacy client without HTTP/2 can do no better);
//! - `h2c`: HTTP/2 cleartext with prior knowledge, `H2C_STREAMS` flows (default 100) as streams
//!   of each connection; sessions and answers travel on those connections too;
//! - unset or `both`: `http1`, then `h2c`, each on a server of its own so that neither run
//!   inherits the other's freed memory.
//!
//! Run: `cargo bench --bench legacy_memory`. Linux only (reads /proc). Over HTTP/1.1 both the
//! server and this process need a file descriptor per flow (`ulimit -n`).

mod h2c;
mod http1;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use roundtrip::bench::proc_status_kb;

const TENANT_PATH: &str = "/t/conformance/mcp";
const FLOW_TOOL: &str = "test_input_required_result_elicitation";
const FLOWS_PER_SESSION: usize = 100;
/// Flows opened and finished before the baseline: the first ones pay one-time allocations.
const WARM_UP: usize = 200;

/// How the shim flows reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    Http1,
    H2c,
}

impl Transport {
    /// The transports `LEGACY_MEMORY_TRANSPORT` asks for (both when unset).
    fn from_env() -> Vec<Transport> {
        match std::env::var("LEGACY_MEMORY_TRANSPORT").as_deref() {
            Ok("http1") => vec![Transport::Http1],
            Ok("h2c") => vec![Transport::H2c],
            Ok("both") | Err(_) => vec![Transport::Http1, Transport::H2c],
            Ok(other) => panic!("LEGACY_MEMORY_TRANSPORT is http1, h2c or both, not {other:?}"),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Transport::Http1 => "http1",
            Transport::H2c => "h2c",
        }
    }
}

/// What the bench does with `FLOWS` shim flows.
struct FlowPlan {
    port: u16,
    flows: usize,
    /// Over h2c: how many flows share a connection.
    streams_per_connection: usize,
}

/// The outcome of holding the flows open, measuring, then finishing them.
struct FlowRun {
    /// How long opening every flow (up to its leg) took.
    opened_in: Duration,
    /// The server's RSS while every flow was open.
    rss_kib: u64,
    completed: usize,
    lost: usize,
}

fn main() {
    let sessions = env_usize("SESSIONS", 10_000);
    let flows = env_usize("FLOWS", 10_000);
    let streams_per_connection = env_usize("H2C_STREAMS", 100).max(1);
    let mut lost = 0;
    for transport in Transport::from_env() {
        lost += run(transport, sessions, flows, streams_per_connection);
    }
    if lost > 0 {
        std::process::exit(1);
    }
}

/// One server, its idle sessions, then the flows over `transport`: how many flows were lost.
fn run(
    transport: Transport,
    sessions: usize,
    flows: usize,
    streams_per_connection: usize,
) -> usize {
    let port = free_port();
    let mut server = Server::start(port, sessions + flows + WARM_UP);
    let mut conn = http1::Connection::open(port);

    for _ in 0..WARM_UP {
        conn.initialize();
    }
    let warm_up = FlowPlan {
        port,
        flows: WARM_UP,
        streams_per_connection,
    };
    hold_flows(transport, &warm_up, &mut conn, || 0);
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

    println!("legacy_memory: one worker, flows over {}", transport.name());
    println!("  baseline RSS                       {base} KiB");
    println!(
        "  idle sessions  +{half:>6}: RSS {at_half} KiB, {:.0} bytes/session",
        per(at_half.saturating_sub(base), half)
    );
    println!(
        "  idle sessions  +{sessions:>6}: RSS {at_all} KiB, {:.0} bytes/session",
        per(at_all.saturating_sub(base), sessions)
    );

    let plan = FlowPlan {
        port,
        flows,
        streams_per_connection,
    };
    let held = hold_flows(transport, &plan, &mut conn, || server.rss_kib());
    let growth = per(held.rss_kib.saturating_sub(at_all), flows);
    let layout = match transport {
        Transport::Http1 => format!("{flows} connections"),
        Transport::H2c => format!(
            "{} connections of {streams_per_connection} streams",
            flows.div_ceil(streams_per_connection)
        ),
    };
    println!(
        "  open shim flows +{flows:>5}: RSS {} KiB, {growth:.0} bytes/flow ({:.1} KiB), {layout} (opened in {:.1} s)",
        held.rss_kib,
        growth / 1024.0,
        held.opened_in.as_secs_f64()
    );
    println!("  flows completed {}, lost {}", held.completed, held.lost);
    server.stop();
    held.lost
}

/// Opens `plan.flows` flows over `transport`, calls `measure` once all are open (after a
/// settle), then answers and finishes every one. `conn` begins the HTTP/1.1 flows' sessions.
fn hold_flows(
    transport: Transport,
    plan: &FlowPlan,
    conn: &mut http1::Connection,
    measure: impl FnOnce() -> u64,
) -> FlowRun {
    match transport {
        Transport::Http1 => http1::hold_flows(plan, conn, measure),
        Transport::H2c => h2c::hold_flows(plan, measure),
    }
}

/// The legacy `tools/call` of flow `i` (no modern envelope).
fn call_body(i: usize) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":{{"name":"{FLOW_TOOL}"}}}}"#
    )
}

/// The client's answer to leg `leg_id`: the name the flow's greeting must carry.
fn answer_body(leg_id: &str, name: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":"{leg_id}","result":{{"action":"accept","content":{{"name":"{name}"}}}}}}"#
    )
}

/// The name flow `i` answers with.
fn flow_name(i: usize) -> String {
    format!("flow-{i}")
}

/// Whether `response` is the final result greeting `name`.
fn greets(response: Option<&serde_json::Value>, name: &str) -> bool {
    let text = response.and_then(|r| r["result"]["content"][0]["text"].as_str());
    text == Some(format!("Hello, {name}!").as_str())
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

const SETTLE: Duration = Duration::from_millis(500);

fn settle() {
    std::thread::sleep(SETTLE);
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
            // Each session holds this many flows at once; said here, not left to the default.
            .env(
                "ROUNDTRIP_LEGACY__MAX_REQUESTS_PER_SESSION",
                FLOWS_PER_SESSION.to_string(),
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
