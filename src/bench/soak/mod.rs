//! `roundtrip bench --mode soak`: mixed traffic at a fixed rate for a long time, reported per
//! interval, to show the server neither errs nor grows under sustained use.
//!
//! Workers (`--connections`) take turns from one schedule: each turn is charged its number
//! of requests against `--rate` before it starts (a turn waits for its slot; a worker that
//! fell behind catches up at once, but never by more than a second's worth). The traffic is
//! in `traffic.rs`. At the end of every `--interval` a sample is taken: requests, expected
//! and unexpected errors, p99 latency, and the server's VmRSS (`--server-pid`). The report
//! adds the verdict on RSS after warm-up: flat when its largest sample is within 10% of the
//! first.
//!
//! The rate is given (`--rate`) or calibrated by the command (`--calibrate`: a short `call`
//! run at full speed, then half of its throughput), see `commands/bench.rs`.

mod report;
mod traffic;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use report::Tally;
pub use report::{Point, RssFlatness, Sample, SoakReport, RSS_FLAT_PCT};
use traffic::{Shared, Totals, Worker};

use super::flow::Bodies;
use super::stats::proc_status_kb;

/// One soak run.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// The MCP endpoint of a tenant serving `echo` and `greet` (the demo tenant's catalog).
    pub url: String,
    /// Workers, each with its own connections.
    pub connections: usize,
    /// Requests per second aimed at (a flow's rounds count one each).
    pub rate: f64,
    /// The echo throughput the rate was calibrated from, if it was.
    pub calibrated_peak: Option<f64>,
    /// The run after warm-up.
    pub duration: Duration,
    pub warmup: Duration,
    pub interval: Duration,
    pub api_key: Option<String>,
    /// What `echo` is asked to echo.
    pub text: String,
    pub server_pid: Option<u32>,
    /// One request's time limit.
    pub timeout: Duration,
}

/// How far behind its schedule the run may fall before it stops catching up.
const MAX_CATCH_UP: Duration = Duration::from_secs(1);

/// Runs the soak: `warmup + duration` of traffic, a sample per interval. Must be awaited
/// inside an actix `System`.
pub async fn run(config: &SoakConfig) -> SoakReport {
    let start = Instant::now();
    let end = start + config.warmup + config.duration;
    let shared = Rc::new(Shared {
        url: config.url.clone(),
        authorization: config.api_key.as_ref().map(|k| format!("Bearer {k}")),
        timeout: config.timeout,
        bodies: Bodies::new(&config.text),
        tally: RefCell::new(Tally::new()),
        totals: RefCell::new(Totals::default()),
        open_listens: Cell::new(0),
        hostile: Cell::new(0),
        oversized: traffic::oversized_body(),
    });
    let per_request = Duration::from_secs_f64(1.0 / config.rate.max(f64::MIN_POSITIVE));
    let schedule = Rc::new(Cell::new(start));
    let workers: Vec<_> = (0..config.connections.max(1))
        .map(|index| {
            let worker = Worker::new(shared.clone(), index);
            actix_rt::spawn(drive(worker, schedule.clone(), per_request, end))
        })
        .collect();

    let mut samples = Vec::new();
    let mut whole = Tally::new();
    let mut next = start + config.interval;
    loop {
        let at = next.min(end);
        actix_rt::time::sleep_until(at.into()).await;
        let tally = shared.tally.replace(Tally::new());
        let t = at - start;
        let warmup = t <= config.warmup;
        let rss = config.server_pid.and_then(|p| proc_status_kb(p, "VmRSS"));
        let sample = Sample::of(&tally, t, warmup, rss);
        println!("{}", sample.line());
        samples.push(sample);
        if !warmup {
            // Same bounds on both sides: adding cannot fail.
            let _ = whole.latency.add(&tally.latency);
        }
        if at >= end {
            break;
        }
        next += config.interval;
    }
    futures_util::future::join_all(workers).await;
    // Turns that ended after the last sample.
    let late = shared.tally.replace(Tally::new());
    if let Some(last) = samples.last_mut() {
        last.requests += late.requests;
        last.expected_errors += late.expected_errors;
        last.unexpected_errors += late.unexpected;
    }

    let totals = shared.totals.replace(Totals::default());
    let sum = |f: fn(&Sample) -> u64| samples.iter().map(f).sum::<u64>();
    SoakReport {
        mode: "soak",
        url: config.url.clone(),
        rate: config.rate,
        calibrated_peak: config.calibrated_peak,
        duration_secs: config.duration.as_secs_f64(),
        warmup_secs: config.warmup.as_secs_f64(),
        interval_secs: config.interval.as_secs_f64(),
        total_requests: sum(|s| s.requests),
        expected_errors: sum(|s| s.expected_errors),
        unexpected_errors: sum(|s| s.unexpected_errors),
        unexpected_by_kind: totals
            .unexpected
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        first_unexpected: totals.first_unexpected,
        traffic: totals
            .traffic
            .iter()
            .map(|(k, v)| ((*k).to_owned(), *v))
            .collect(),
        p99_ms: (!whole.latency.is_empty())
            .then(|| whole.latency.value_at_quantile(0.99) as f64 / 1e6),
        p99_over_time: samples
            .iter()
            .map(|s| Point {
                t_secs: s.t_secs,
                value: s.p99_ms,
            })
            .collect(),
        rss_over_time: samples
            .iter()
            .filter_map(|s| {
                Some(Point {
                    t_secs: s.t_secs,
                    value: s.rss_kb?,
                })
            })
            .collect(),
        rss_after_warmup: RssFlatness::of(&samples),
        intervals: samples,
    }
}

/// One worker's turns until `end`, each started at its slot of the shared schedule.
async fn drive(
    mut worker: Worker,
    schedule: Rc<Cell<Instant>>,
    per_request: Duration,
    end: Instant,
) {
    loop {
        let kind = worker.next_kind();
        let now = Instant::now();
        let at = schedule
            .get()
            .max(now.checked_sub(MAX_CATCH_UP).unwrap_or(now));
        if at >= end {
            return;
        }
        schedule.set(at + per_request * kind.requests());
        if at > now {
            actix_rt::time::sleep_until(at.into()).await;
        }
        worker.run(kind).await;
    }
}
