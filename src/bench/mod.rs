//! The load driver behind `roundtrip bench`: N concurrent clients, each on its own keep-alive
//! connection, drive one MCP endpoint for a fixed time and check every answer.
//!
//! It is a library so that the integration tests can run it against an in-process server
//! (a smoke run per mode, correctness only) and the CLI can run it against any URL, including
//! the peers of `bench/peers.sh`. Every client runs on the current thread (the driver is meant
//! to be pinned to one core, beside a server pinned to another); [`run`] must be awaited inside
//! an actix `System`, which `awc` (the legacy mode's client) needs. The modern modes speak
//! HTTP/1.1 through a lean connection of their own (`connection.rs` says why).
//!
//! What the driver does not do: retry, or panic on a bad answer. A failed check is counted by
//! kind and the client goes on with its next request (a failed round 1 ends its flow).
//!
//! The soak (`soak/`) is the other kind of run: not as fast as it goes, but a fixed rate of
//! mixed traffic for a long time, sampled per interval; it shares the connection, the bodies
//! and checks, and the legacy client with the modes here.

mod connection;
mod flow;
mod legacy;
pub mod soak;
mod stats;

use std::rc::Rc;
use std::time::{Duration, Instant};

use actix_web::web::Bytes;

pub use flow::{
    Bodies, CheckError, ResultTypeCheck, MRTR_GREETING, MRTR_KEY, MRTR_TOOL, PROTOCOL_VERSION,
};
pub use legacy::{answer_body, call_body, check_leg, initialize_body, SseReader, LEGACY_VERSION};
use stats::{cpu_secs, Recorder};
pub use stats::{proc_status_kb, Latency, Report, ServerMemory};

/// What each client sends. A workload is one variant here and one arm in
/// `Client::iteration`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mode {
    /// One `tools/call` of `echo` per iteration.
    Call,
    /// One sealed two-round MRTR flow of `greet` per iteration: round 1 must be
    /// input-required with a `requestState`, round 2 carries that state and the answer back.
    Mrtr,
    /// Calls and flows alternately (half the clients start with a flow).
    Mix,
    /// Legacy shim flows: each client holds a 2025-11-25 session; per iteration a `greet`
    /// call whose elicitation arrives on the call's SSE stream, is answered by POST (after
    /// `hold`), and whose greeting then ends the stream.
    Legacy,
    /// Mixed traffic at a fixed rate for a long time, reported per interval.
    // Run by `soak::run`; as a workload of `run` it is the soak's calibration: echo calls at
    // full speed, as `Call`. (A comment, not a doc comment: clap shows doc comments in --help.)
    Soak,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Call => "call",
            Mode::Mrtr => "mrtr",
            Mode::Mix => "mix",
            Mode::Legacy => "legacy",
            Mode::Soak => "soak",
        }
    }
}

/// One driver run.
#[derive(Debug, Clone)]
pub struct BenchConfig {
    /// The MCP endpoint, plain HTTP/1.1, e.g. `http://127.0.0.1:8080/t/demo/mcp`.
    pub url: String,
    pub mode: Mode,
    /// Concurrent clients, one connection each.
    pub connections: usize,
    /// The measured window.
    pub duration: Duration,
    /// Load before the window, not counted (connections open, caches warm).
    pub warmup: Duration,
    /// Sent as `Authorization: Bearer <key>`.
    pub api_key: Option<String>,
    /// What `echo` is asked to echo.
    pub text: String,
    pub result_type: ResultTypeCheck,
    /// The server process whose RSS and CPU the report includes.
    pub server_pid: Option<u32>,
    /// One request's time limit; past it the request counts as a transport error.
    pub timeout: Duration,
    /// Legacy mode: how long a client waits before answering the elicitation, holding its
    /// flow (and SSE stream) open meanwhile.
    pub hold: Duration,
}

/// What every client shares: the target, the bodies, the clock.
struct Plan {
    url: String,
    mode: Mode,
    authorization: Option<String>,
    bodies: Bodies,
    result_type: ResultTypeCheck,
    timeout: Duration,
    hold: Duration,
    measure_from: Instant,
    end: Instant,
}

/// Runs the clients for `warmup + duration` and reports the measured window.
pub async fn run(config: &BenchConfig) -> Report {
    let pid = config.server_pid;
    let rss_before = pid.and_then(|p| proc_status_kb(p, "VmRSS"));
    let start = Instant::now();
    let plan = Rc::new(Plan {
        url: config.url.clone(),
        mode: config.mode,
        authorization: config.api_key.as_ref().map(|k| format!("Bearer {k}")),
        bodies: Bodies::new(&config.text),
        result_type: config.result_type,
        timeout: config.timeout,
        hold: config.hold,
        measure_from: start + config.warmup,
        end: start + config.warmup + config.duration,
    });
    let clients: Vec<_> = (0..config.connections.max(1))
        .map(|index| actix_rt::spawn(Client::new(plan.clone(), index).run()))
        .collect();

    actix_rt::time::sleep_until(plan.measure_from.into()).await;
    let cpu_from = (pid.and_then(|p| cpu_secs(&p.to_string())), cpu_secs("self"));
    let window_start = Instant::now();
    actix_rt::time::sleep_until(plan.end.into()).await;
    let cpu_to = (pid.and_then(|p| cpu_secs(&p.to_string())), cpu_secs("self"));
    let window = window_start.elapsed().as_secs_f64();

    let mut total = Recorder::new();
    for client in futures_util::future::join_all(clients).await {
        match client {
            Ok(recorder) => total.merge(recorder),
            Err(e) => total.error("client_panic", || e.to_string()),
        }
    }
    let server_memory = pid.map(|p| ServerMemory {
        rss_before_kb: rss_before,
        rss_after_kb: proc_status_kb(p, "VmRSS"),
        peak_kb: proc_status_kb(p, "VmHWM"),
    });
    let measured = config.duration.as_secs_f64().max(f64::EPSILON);
    let delta = |from: Option<f64>, to: Option<f64>| Some(to? - from?);
    let server_cpu = delta(cpu_from.0, cpu_to.0);
    let driver_cpu = delta(cpu_from.1, cpu_to.1);
    let errors = total.errors.values().sum();
    Report {
        mode: config.mode.as_str().to_owned(),
        url: config.url.clone(),
        connections: config.connections.max(1),
        duration_secs: measured,
        requests: total.requests,
        calls: total.calls,
        flows: total.flows,
        errors,
        errors_by_kind: total
            .errors
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        first_error: total.first_error.clone(),
        requests_per_sec: total.requests as f64 / measured,
        flows_per_sec: total.flows as f64 / measured,
        latency: Latency::of(&total.latency),
        flow_latency: Latency::of(&total.flow_latency),
        server_pid: pid,
        server_memory,
        server_cpu_us_per_request: server_cpu
            .filter(|_| total.requests > 0)
            .map(|s| s * 1e6 / total.requests as f64),
        server_cpu_pct: server_cpu.map(|s| 100.0 * s / window),
        driver_cpu_pct: driver_cpu.map(|s| 100.0 * s / window),
    }
}

/// One client: one connection, one request at a time.
struct Client {
    plan: Rc<Plan>,
    /// The modern modes' connection.
    connection: connection::Connection,
    /// The legacy mode's client (it reads streamed SSE bodies).
    legacy: legacy::LegacyHttp,
    next_id: u64,
    turn: usize,
    recorder: Recorder,
    /// Legacy mode: this client's `Mcp-Session-Id`, once `initialize` succeeded.
    session: Option<String>,
}

/// A request's timing: counted only if it started and ended inside the measured window.
struct Timed<T> {
    started: Instant,
    ended: Instant,
    outcome: Result<T, CheckError>,
}

impl Client {
    fn new(plan: Rc<Plan>, index: usize) -> Client {
        let legacy =
            legacy::LegacyHttp::new(&plan.url, plan.authorization.as_deref(), plan.timeout);
        let connection =
            connection::Connection::new(&plan.url, plan.authorization.as_deref(), plan.timeout);
        Client {
            plan,
            connection,
            legacy,
            // Distinct ids per client make a crossed-wire answer visible as an id error.
            next_id: (index as u64) << 32,
            turn: index,
            recorder: Recorder::new(),
            session: None,
        }
    }

    async fn run(mut self) -> Recorder {
        while Instant::now() < self.plan.end {
            self.iteration().await;
        }
        self.recorder
    }

    async fn iteration(&mut self) {
        self.turn += 1;
        match self.plan.mode {
            Mode::Call | Mode::Soak => self.call().await,
            Mode::Mrtr => self.flow().await,
            Mode::Mix if self.turn.is_multiple_of(2) => self.call().await,
            Mode::Mix => self.flow().await,
            Mode::Legacy => self.legacy_flow().await,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn in_window(&self, started: Instant, ended: Instant) -> bool {
        started >= self.plan.measure_from && ended <= self.plan.end
    }

    /// Counts a request: latency when it passed, its kind when it failed (whenever it
    /// happened: an error in the warm-up is still an error).
    fn count<T>(&mut self, timed: Timed<T>) -> Option<T> {
        match timed.outcome {
            Ok(value) => {
                if self.in_window(timed.started, timed.ended) {
                    self.recorder.request(timed.ended - timed.started);
                }
                Some(value)
            }
            Err(e) => {
                self.recorder.error(e.kind(), || e.to_string());
                None
            }
        }
    }

    async fn call(&mut self) {
        let id = self.id();
        let body = self.plan.bodies.call(id);
        let timed = self.post("echo", body).await;
        let plan = self.plan.clone();
        let checked = Timed {
            started: timed.started,
            ended: timed.ended,
            outcome: timed.outcome.and_then(|(status, body)| {
                flow::check_complete(status, &body, id, &plan.bodies.text, plan.result_type)
            }),
        };
        let in_window = self.in_window(checked.started, checked.ended);
        if self.count(checked).is_some() && in_window {
            self.recorder.calls += 1;
        }
    }

    async fn flow(&mut self) {
        let id1 = self.id();
        let body = self.plan.bodies.round1(id1);
        let r1 = self.post(MRTR_TOOL, body).await;
        let started = r1.started;
        let round1 = Timed {
            started: r1.started,
            ended: r1.ended,
            outcome: r1
                .outcome
                .and_then(|(status, body)| flow::check_round1(status, &body, id1)),
        };
        let Some(state) = self.count(round1) else {
            return;
        };
        let id2 = self.id();
        let body = self.plan.bodies.round2(id2, &state);
        let r2 = self.post(MRTR_TOOL, body).await;
        let round2 = Timed {
            started: r2.started,
            ended: r2.ended,
            outcome: r2.outcome.and_then(|(status, body)| {
                flow::check_complete(status, &body, id2, MRTR_GREETING, ResultTypeCheck::Required)
            }),
        };
        let ended = round2.ended;
        if self.count(round2).is_some() && self.in_window(started, ended) {
            self.recorder.flow(ended - started);
        }
    }

    /// One legacy shim flow; the session is opened first if the client has none. Two
    /// requests are timed (the call up to its elicitation, and the answer) and the flow as a
    /// whole (with `hold`).
    async fn legacy_flow(&mut self) {
        let session = match self.session.clone() {
            Some(session) => session,
            None => match self.legacy.initialize().await {
                Ok(session) => {
                    self.session = Some(session.clone());
                    session
                }
                Err(e) => return self.legacy_failed(e).await,
            },
        };
        let id = self.id();
        let started = Instant::now();
        match self.legacy.call(&session, id, self.plan.hold).await {
            Ok((call, answer)) => {
                let ended = Instant::now();
                if self.in_window(started, ended) {
                    self.recorder.request(call);
                    self.recorder.request(answer);
                    self.recorder.flow(ended - started);
                }
            }
            Err(e) => self.legacy_failed(e).await,
        }
    }

    /// Counts a failed legacy step. A session the server no longer knows (404) is dropped,
    /// so the next flow begins a new one; a broken connection is not spun on.
    async fn legacy_failed(&mut self, e: CheckError) {
        if matches!(e, CheckError::Status(404)) {
            self.session = None;
        }
        let transport = matches!(e, CheckError::Transport(_));
        self.recorder.error(e.kind(), || e.to_string());
        if transport && Instant::now() < self.plan.end {
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// POSTs `body` with the MCP headers of a `tools/call` of `name`.
    async fn post(&mut self, name: &str, body: String) -> Timed<(u16, Bytes)> {
        let started = Instant::now();
        let outcome = self.connection.post(name, &body).await;
        let ended = Instant::now();
        if matches!(outcome, Err(CheckError::Transport(_))) && ended < self.plan.end {
            // A refused or broken connection fails fast: do not spin on it.
            actix_rt::time::sleep(Duration::from_millis(10)).await;
        }
        Timed {
            started,
            ended,
            outcome,
        }
    }
}

/// Parses `10s`, `500ms`, `2m` or a bare number of seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (number, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1e-3)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('m') {
        (n, 60.0)
    } else {
        (s, 1.0)
    };
    let value: f64 = number
        .trim()
        .parse()
        .map_err(|_| format!("not a duration: {s:?} (try 10s, 500ms, 2m)"))?;
    if !(value.is_finite() && value >= 0.0) {
        return Err(format!("not a duration: {s:?}"));
    }
    Ok(Duration::from_secs_f64(value * scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_with_and_without_units() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("1.5"), Ok(Duration::from_millis(1500)));
        assert!(parse_duration("soon").is_err());
        assert!(parse_duration("-1s").is_err());
    }
}
