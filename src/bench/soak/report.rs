//! What a soak run measures and reports: a tally per interval (requests, expected and
//! unexpected errors, latency), the samples taken at the end of each interval (p99 and the
//! server's RSS), and the final report with its RSS-flatness verdict.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::bench::stats::{nanos, new_histogram};

/// How much the server's RSS may grow after warm-up (max over the first sample) and still
/// count as flat.
pub const RSS_FLAT_PCT: f64 = 10.0;

/// What happened during one interval (or the whole run).
pub(super) struct Tally {
    pub(super) requests: u64,
    /// Hostile requests answered with the error they should get.
    pub(super) expected_errors: u64,
    pub(super) unexpected: u64,
    pub(super) latency: Histogram<u64>,
}

impl Tally {
    pub(super) fn new() -> Tally {
        Tally {
            requests: 0,
            expected_errors: 0,
            unexpected: 0,
            latency: new_histogram(),
        }
    }

    /// A request answered as it should be (a hostile one with its expected error included).
    pub(super) fn answered(&mut self, took: Duration) {
        self.requests += 1;
        self.latency.saturating_record(nanos(took));
    }
}

/// One interval's figures, taken at its end.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Seconds since the run began, at the interval's end.
    pub t_secs: f64,
    /// The interval ended inside the warm-up.
    pub warmup: bool,
    pub requests: u64,
    pub expected_errors: u64,
    pub unexpected_errors: u64,
    pub p99_ms: Option<f64>,
    /// The server's VmRSS (KiB), with `--server-pid`.
    pub rss_kb: Option<u64>,
}

impl Sample {
    pub(super) fn of(tally: &Tally, t: Duration, warmup: bool, rss_kb: Option<u64>) -> Sample {
        Sample {
            t_secs: t.as_secs_f64(),
            warmup,
            requests: tally.requests,
            expected_errors: tally.expected_errors,
            unexpected_errors: tally.unexpected,
            p99_ms: (!tally.latency.is_empty())
                .then(|| tally.latency.value_at_quantile(0.99) as f64 / 1e6),
            rss_kb,
        }
    }

    /// One line for the person watching.
    pub fn line(&self) -> String {
        let p99 = self
            .p99_ms
            .map_or_else(|| "-".to_owned(), |ms| format!("{ms:.3}"));
        let rss = self
            .rss_kb
            .map_or_else(|| "-".to_owned(), |kb| kb.to_string());
        format!(
            "soak t={:>6.0}s{} requests={} expected_errors={} unexpected={} p99_ms={p99} rss_kb={rss}",
            self.t_secs,
            if self.warmup { " (warm-up)" } else { "" },
            self.requests,
            self.expected_errors,
            self.unexpected_errors,
        )
    }
}

/// A figure at a point of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Point<T> {
    pub t_secs: f64,
    pub value: T,
}

/// Whether the server's RSS stayed flat after warm-up.
#[derive(Debug, Clone, Serialize)]
pub struct RssFlatness {
    /// The first sample after warm-up, KiB.
    pub first_kb: u64,
    /// The largest sample after warm-up, KiB.
    pub max_kb: u64,
    /// `max` over `first`, in % above it.
    pub growth_pct: f64,
    /// `growth_pct` is at most 10.
    pub within_10pct: bool,
}

impl RssFlatness {
    /// From the samples after warm-up that have an RSS; `None` without any.
    pub fn of(samples: &[Sample]) -> Option<RssFlatness> {
        let mut rss = samples
            .iter()
            .filter(|s| !s.warmup)
            .filter_map(|s| s.rss_kb);
        let first_kb = rss.next()?;
        let max_kb = rss.fold(first_kb, u64::max);
        let growth_pct = 100.0 * (max_kb - first_kb) as f64 / first_kb.max(1) as f64;
        Some(RssFlatness {
            first_kb,
            max_kb,
            growth_pct,
            within_10pct: growth_pct <= RSS_FLAT_PCT,
        })
    }
}

/// The report of a soak run, as printed and as written by `--out`.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    pub mode: &'static str,
    pub url: String,
    /// The request rate aimed at, per second.
    pub rate: f64,
    /// With `--calibrate`: the echo throughput measured first (the rate is half of it).
    pub calibrated_peak: Option<f64>,
    pub duration_secs: f64,
    pub warmup_secs: f64,
    pub interval_secs: f64,
    /// Requests answered as they should be, warm-up included.
    pub total_requests: u64,
    /// Of them, hostile requests answered with their expected error.
    pub expected_errors: u64,
    pub unexpected_errors: u64,
    pub unexpected_by_kind: BTreeMap<String, u64>,
    /// The first unexpected answer, for the person reading the report.
    pub first_unexpected: Option<String>,
    /// What was sent, by kind of traffic (a flow counts once).
    pub traffic: BTreeMap<String, u64>,
    /// Latency over the whole run after warm-up.
    pub p99_ms: Option<f64>,
    pub p99_over_time: Vec<Point<Option<f64>>>,
    pub rss_over_time: Vec<Point<u64>>,
    pub rss_after_warmup: Option<RssFlatness>,
    pub intervals: Vec<Sample>,
}

impl SoakReport {
    /// A short human-readable summary.
    pub fn summary(&self) -> String {
        let mut s = format!(
            "soak {} rate={:.0}/s {:.0}s (+{:.0}s warm-up): {} requests, {} expected errors, {} unexpected",
            self.url,
            self.rate,
            self.duration_secs,
            self.warmup_secs,
            self.total_requests,
            self.expected_errors,
            self.unexpected_errors
        );
        if let Some(peak) = self.calibrated_peak {
            s.push_str(&format!("\n  calibrated peak: {peak:.0} requests/s"));
        }
        if let Some(p99) = self.p99_ms {
            s.push_str(&format!("\n  p99 after warm-up: {p99:.3} ms"));
        }
        if let Some(r) = &self.rss_after_warmup {
            s.push_str(&format!(
                "\n  server RSS after warm-up: first {} KiB, max {} KiB (+{:.1}%): {}",
                r.first_kb,
                r.max_kb,
                r.growth_pct,
                if r.within_10pct {
                    "flat (within 10%)"
                } else {
                    "GREW more than 10%"
                }
            ));
        }
        for (kind, n) in &self.traffic {
            s.push_str(&format!("\n  sent[{kind}] = {n}"));
        }
        for (kind, n) in &self.unexpected_by_kind {
            s.push_str(&format!("\n  unexpected[{kind}] = {n}"));
        }
        if let Some(e) = &self.first_unexpected {
            s.push_str(&format!("\n  first unexpected: {e}"));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, warmup: bool, rss_kb: Option<u64>) -> Sample {
        Sample {
            t_secs: t,
            warmup,
            requests: 1,
            expected_errors: 0,
            unexpected_errors: 0,
            p99_ms: Some(1.0),
            rss_kb,
        }
    }

    #[test]
    fn rss_is_flat_when_the_max_after_warm_up_is_within_10_percent_of_the_first() {
        let samples = [
            sample(1.0, true, Some(10)),
            sample(2.0, false, Some(100)),
            sample(3.0, false, Some(110)),
            sample(4.0, false, Some(105)),
        ];
        let flat = RssFlatness::of(&samples).expect("samples after warm-up");
        assert_eq!((flat.first_kb, flat.max_kb), (100, 110));
        assert!(flat.within_10pct, "{flat:?}");
    }

    #[test]
    fn rss_growing_past_10_percent_is_not_flat_and_warm_up_is_ignored() {
        let samples = [
            sample(1.0, true, Some(1)),
            sample(2.0, false, Some(100)),
            sample(3.0, false, Some(111)),
        ];
        let grew = RssFlatness::of(&samples).expect("samples");
        assert!(!grew.within_10pct, "{grew:?}");
        assert!(RssFlatness::of(&[sample(1.0, true, Some(5))]).is_none());
        assert!(RssFlatness::of(&[sample(1.0, false, None)]).is_none());
    }
}
