//! Counting and reporting: per-client latency histograms (HDR, nanoseconds), error counts by
//! kind, merged into one [`Report`]; and what `/proc` tells about the server (RSS, CPU) and
//! the driver itself (CPU, to show when the load generator is the limit).

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

/// Latencies up to a minute, to 3 significant digits.
const MAX_LATENCY_NS: u64 = 60_000_000_000;

/// `/proc/*/stat` reports CPU time in USER_HZ ticks, which Linux fixes at 100 on every
/// architecture this runs on.
const USER_HZ: f64 = 100.0;

/// What one client saw during the measured window.
#[derive(Debug)]
pub(crate) struct Recorder {
    pub(crate) latency: Histogram<u64>,
    pub(crate) flow_latency: Histogram<u64>,
    pub(crate) requests: u64,
    pub(crate) flows: u64,
    pub(crate) calls: u64,
    pub(crate) errors: BTreeMap<&'static str, u64>,
    pub(crate) first_error: Option<String>,
}

impl Recorder {
    pub(crate) fn new() -> Recorder {
        Recorder {
            latency: new_histogram(),
            flow_latency: new_histogram(),
            requests: 0,
            flows: 0,
            calls: 0,
            errors: BTreeMap::new(),
            first_error: None,
        }
    }

    pub(crate) fn request(&mut self, took: Duration) {
        self.requests += 1;
        self.latency.saturating_record(nanos(took));
    }

    pub(crate) fn flow(&mut self, took: Duration) {
        self.flows += 1;
        self.flow_latency.saturating_record(nanos(took));
    }

    pub(crate) fn error(&mut self, kind: &'static str, detail: impl FnOnce() -> String) {
        *self.errors.entry(kind).or_default() += 1;
        if self.first_error.is_none() {
            self.first_error = Some(detail());
        }
    }

    pub(crate) fn merge(&mut self, other: Recorder) {
        // Same bounds on both sides: adding cannot fail.
        let _ = self.latency.add(&other.latency);
        let _ = self.flow_latency.add(&other.flow_latency);
        self.requests += other.requests;
        self.flows += other.flows;
        self.calls += other.calls;
        for (kind, n) in other.errors {
            *self.errors.entry(kind).or_default() += n;
        }
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
    }
}

pub(crate) fn new_histogram() -> Histogram<u64> {
    // Constant bounds that satisfy hdrhistogram's rules (low >= 1, high >= 2 * low, sigfig <= 5).
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid constant histogram bounds")
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
    pub mean_ms: f64,
}

impl Latency {
    pub(crate) fn of(h: &Histogram<u64>) -> Option<Latency> {
        (!h.is_empty()).then(|| {
            let ms = |ns: u64| ns as f64 / 1e6;
            Latency {
                p50_ms: ms(h.value_at_quantile(0.50)),
                p90_ms: ms(h.value_at_quantile(0.90)),
                p99_ms: ms(h.value_at_quantile(0.99)),
                max_ms: ms(h.max()),
                mean_ms: h.mean() / 1e6,
            }
        })
    }
}

/// The server's memory, from `/proc/PID/status`, in KiB.
#[derive(Debug, Clone, Serialize)]
pub struct ServerMemory {
    /// VmRSS before the first request (after start-up: the idle footprint on a first run).
    pub rss_before_kb: Option<u64>,
    /// VmRSS after the last request.
    pub rss_after_kb: Option<u64>,
    /// VmHWM after the last request: the peak over the process's life.
    pub peak_kb: Option<u64>,
}

/// The result of one driver run, as printed and as written by `--out`.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub mode: String,
    pub url: String,
    pub connections: usize,
    /// The measured window (warm-up excluded).
    pub duration_secs: f64,
    /// Requests answered and checked in the window (a flow counts as its rounds).
    pub requests: u64,
    /// Single `tools/call`s that passed.
    pub calls: u64,
    /// Complete MRTR flows (both rounds passed).
    pub flows: u64,
    pub errors: u64,
    pub errors_by_kind: BTreeMap<String, u64>,
    /// The first failure seen, for the person reading the report.
    pub first_error: Option<String>,
    pub requests_per_sec: f64,
    pub flows_per_sec: f64,
    /// Per request, each round of a flow on its own.
    pub latency: Option<Latency>,
    /// Per MRTR flow, first request sent to last response checked.
    pub flow_latency: Option<Latency>,
    pub server_pid: Option<u32>,
    pub server_memory: Option<ServerMemory>,
    /// The server's CPU time per request answered, in microseconds (user + system).
    pub server_cpu_us_per_request: Option<f64>,
    /// The server's CPU use over the window, in % of one core.
    pub server_cpu_pct: Option<f64>,
    /// The driver's own CPU use over the window, in % of one core: near 100 means the driver,
    /// not the server, may be the limit.
    pub driver_cpu_pct: Option<f64>,
}

impl Report {
    /// A short human-readable summary.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "{} {} conns={} {:.1}s: {} requests ({:.0}/s), {} calls, {} flows ({:.0}/s), {} errors",
            self.mode,
            self.url,
            self.connections,
            self.duration_secs,
            self.requests,
            self.requests_per_sec,
            self.calls,
            self.flows,
            self.flows_per_sec,
            self.errors
        );
        if let Some(l) = &self.latency {
            s.push_str(&format!(
                "\n  latency ms: p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
                l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
            ));
        }
        if let Some(m) = &self.server_memory {
            let kb = |v: Option<u64>| v.map_or_else(|| "?".to_owned(), |v| v.to_string());
            s.push_str(&format!(
                "\n  server RSS KiB: before {} after {} peak {}",
                kb(m.rss_before_kb),
                kb(m.rss_after_kb),
                kb(m.peak_kb)
            ));
        }
        if let (Some(us), Some(pct)) = (self.server_cpu_us_per_request, self.server_cpu_pct) {
            s.push_str(&format!(
                "\n  server CPU: {us:.1} us/request, {pct:.0}% of a core"
            ));
        }
        if let Some(pct) = self.driver_cpu_pct {
            s.push_str(&format!("\n  driver CPU: {pct:.0}% of a core"));
        }
        for (kind, n) in &self.errors_by_kind {
            s.push_str(&format!("\n  errors[{kind}] = {n}"));
        }
        if let Some(e) = &self.first_error {
            s.push_str(&format!("\n  first error: {e}"));
        }
        s
    }
}

/// A `VmRSS:`-style field of `/proc/PID/status`, in KiB.
pub fn proc_status_kb(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        let rest = line.strip_prefix(field)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// User plus system CPU seconds of a process (`self` for the driver), all threads.
pub(crate) fn cpu_secs(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may hold spaces and parentheses: fields start after the last ')'.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    // After the name: state(0) ... utime(11) stime(12).
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_process_has_a_resident_size_and_cpu_time() {
        let pid = std::process::id();
        assert!(proc_status_kb(pid, "VmRSS").is_some_and(|kb| kb > 0));
        assert!(cpu_secs("self").is_some());
    }

    #[test]
    fn merged_recorders_add_up() {
        let mut a = Recorder::new();
        a.request(Duration::from_micros(100));
        a.error("status", || "HTTP status 500".into());
        let mut b = Recorder::new();
        b.request(Duration::from_micros(300));
        b.error("status", || "again".into());
        a.merge(b);
        assert_eq!(a.requests, 2);
        assert_eq!(a.errors.get("status"), Some(&2));
        assert_eq!(a.first_error.as_deref(), Some("HTTP status 500"));
        let l = Latency::of(&a.latency).expect("latency");
        assert!(l.p50_ms > 0.09 && l.p50_ms < 0.11, "{l:?}");
    }
}
