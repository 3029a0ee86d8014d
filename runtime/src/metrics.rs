//! The process's metrics, kept with the `prometheus-client` crate and served at `/metrics` as
//! OpenMetrics text: what the MCP endpoint answered, how long each request took by tenant,
//! method and outcome, what was refused, the legacy requests forwarded to another worker, and
//! (collected at each scrape) the live legacy sessions, what became of the audit records, and
//! the failed calls to Redis.
//!
//! Every label value is bounded, so no client can grow the series: a method is one of the
//! protocol's or `other` (a client may name any method), a tenant one the operator created, an
//! outcome one of the dispatcher's (`complete`, `input_required`, `error`, `cancelled`,
//! `listen`) or, for a forward, `forwarded` or `owner_gone`.

use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::{ConstGauge, Gauge};
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

use crate::legacy::sessions::Sessions;
use crate::protocol::Method;
use crate::redis::RedisErrorCount;
use crate::sealing::{RefreshReason, ShareHealth};
use crate::tenancy::AuditSink;

/// Bucket bounds of request durations, in seconds: 100 µs (a cached call on loopback) to a
/// minute (the default request timeout); a legacy shim flow that waits for a person lands
/// above them.
const DURATION_BUCKETS: [f64; 16] = [
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0,
    15.0, 60.0,
];

/// The outcomes replies are counted by, each shown from the start (at 0).
const OUTCOMES: [&str; 4] = ["complete", "input_required", "error", "cancelled"];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct OutcomeLabels {
    outcome: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TenantLabels {
    tenant: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RequestLabels {
    tenant: Arc<str>,
    method: &'static str,
    outcome: &'static str,
}

/// The id of the next [`Metrics`] made.
static NEXT_METRICS_ID: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// This thread's handles on the duration histograms it has recorded into, by tenant
    /// slug; a tenant's few (a method and an outcome each, of one [`Metrics`]) are searched
    /// in a row. A handle is a clone of the family's own histogram, so a scrape sees what
    /// every thread observed. Bounded as the family is: by tenants, methods and outcomes.
    ///
    /// A cache, the one mutable global of this module, and per thread rather than in
    /// [`Metrics`] because `Metrics` is shared by every worker: a lock or a reference count
    /// taken there per request is what it replaced. Nothing is ever removed; a process has
    /// one `Metrics` (tests make many, each with its own id), and the family keeps every
    /// series it made as long as the process anyway.
    static DURATIONS_MADE: RefCell<foldhash::HashMap<Arc<str>, Vec<MadeHistogram>>> =
        RefCell::default();
}

/// A handle on one duration histogram of one [`Metrics`], for one method and outcome.
struct MadeHistogram {
    metrics: u64,
    method: &'static str,
    outcome: &'static str,
    histogram: Histogram,
}

fn duration_histogram() -> Histogram {
    Histogram::new(DURATION_BUCKETS)
}

/// The metrics requests update. Cheap to clone: every metric is a shared handle, so a
/// [`Registry`] holds clones of them ([`Metrics::register`]).
#[derive(Debug, Clone)]
pub struct Metrics {
    replies: Family<OutcomeLabels, Counter>,
    /// The counters of `replies` for [`OUTCOMES`], in its order, taken once: a reply with one
    /// of them is counted without a lookup.
    reply_counters: [Counter; OUTCOMES.len()],
    durations: Family<RequestLabels, Histogram, fn() -> Histogram>,
    /// Which metrics these are, shared by their clones: the key of the histograms each
    /// thread keeps handles on ([`DURATIONS_MADE`]).
    id: u64,
    rate_limited: Family<TenantLabels, Counter>,
    notifications: Counter,
    rejected_http: Counter,
    streams_open: Gauge,
    forwards: Family<OutcomeLabels, Counter>,
    forward_durations: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        let replies: Family<OutcomeLabels, Counter> = Family::default();
        let reply_counters =
            OUTCOMES.map(|outcome| replies.get_or_create(&OutcomeLabels { outcome }).clone());
        Metrics {
            replies,
            reply_counters,
            durations: Family::new_with_constructor(duration_histogram),
            id: NEXT_METRICS_ID.fetch_add(1, Ordering::Relaxed),
            rate_limited: Family::default(),
            notifications: Counter::default(),
            rejected_http: Counter::default(),
            streams_open: Gauge::default(),
            forwards: Family::default(),
            forward_durations: forward_histogram(),
        }
    }
}

impl Metrics {
    /// A reply with `outcome` that reached its client, or (`cancelled`) a request whose
    /// client went away first.
    pub(crate) fn record_reply(&self, outcome: &'static str) {
        match OUTCOMES.iter().position(|known| *known == outcome) {
            Some(i) => self.reply_counters[i].inc(),
            None => self.replies.get_or_create(&OutcomeLabels { outcome }).inc(),
        };
    }

    /// How long a dispatched request of `tenant` took, from its dispatch to its reply. It is
    /// labelled with its method's name when the method is a known one, `other` otherwise.
    ///
    /// The histogram is found among this thread's handles ([`DURATIONS_MADE`]) by the
    /// tenant's slug: no lock, and no reference count taken, per request. Only the first
    /// request of a tenant, method and outcome on a thread asks the family, and keeps a handle.
    pub(crate) fn record_duration(
        &self,
        tenant: &Arc<str>,
        method: &Method,
        outcome: &'static str,
        took: Duration,
    ) {
        let method = method.known_name().unwrap_or("other");
        let seconds = took.as_secs_f64();
        DURATIONS_MADE.with_borrow_mut(|made| {
            let same = |m: &&MadeHistogram| {
                m.metrics == self.id && m.method == method && m.outcome == outcome
            };
            if let Some(found) = made.get(&**tenant).and_then(|list| list.iter().find(same)) {
                found.histogram.observe(seconds);
                return;
            }
            let labels = RequestLabels {
                tenant: tenant.clone(),
                method,
                outcome,
            };
            let histogram = self.durations.get_or_create(&labels).clone();
            histogram.observe(seconds);
            made.entry(tenant.clone()).or_default().push(MadeHistogram {
                metrics: self.id,
                method,
                outcome,
                histogram,
            });
        });
    }

    /// A request of `tenant` refused by a rate limit.
    pub(crate) fn record_rate_limited(&self, tenant: Arc<str>) {
        self.rate_limited
            .get_or_create(&TenantLabels { tenant })
            .inc();
    }

    /// A request refused before dispatch (guard, size, auth, tenant, envelope).
    pub(crate) fn record_rejection(&self) {
        self.rejected_http.inc();
    }

    /// A legacy session's request forwarded to the worker that holds the session, which
    /// answered: `took` is until its response head came back.
    pub(crate) fn record_forwarded(&self, took: Duration) {
        self.forwards
            .get_or_create(&OutcomeLabels {
                outcome: "forwarded",
            })
            .inc();
        self.forward_durations.observe(took.as_secs_f64());
    }

    /// A legacy session's request whose owner could not be reached.
    pub(crate) fn record_owner_gone(&self) {
        self.forwards
            .get_or_create(&OutcomeLabels {
                outcome: "owner_gone",
            })
            .inc();
    }

    pub(crate) fn record_notification(&self) {
        self.notifications.inc();
    }

    pub(crate) fn stream_opened(&self) {
        self.streams_open.inc();
    }

    pub(crate) fn stream_closed(&self) {
        self.streams_open.dec();
    }

    /// Registers every metric in `registry`, under the names `/metrics` shows.
    pub fn register(&self, registry: &mut Registry) {
        registry.register(
            "roundtrip_mcp_requests",
            "MCP requests answered, by outcome",
            self.replies.clone(),
        );
        registry.register(
            "roundtrip_mcp_request_duration_seconds",
            "Time from dispatch to reply of MCP requests, by tenant, method and outcome",
            self.durations.clone(),
        );
        registry.register(
            "roundtrip_rate_limited",
            "Requests refused by a rate limit (tenant, key or tool), by tenant",
            self.rate_limited.clone(),
        );
        registry.register(
            "roundtrip_mcp_notifications",
            "Client notifications accepted",
            self.notifications.clone(),
        );
        registry.register(
            "roundtrip_http_rejected",
            "Requests refused before dispatch (guard, size, auth, tenant, envelope)",
            self.rejected_http.clone(),
        );
        registry.register(
            "roundtrip_legacy_forwards",
            "Legacy session requests forwarded to the worker holding the session, by outcome",
            self.forwards.clone(),
        );
        registry.register(
            "roundtrip_legacy_forward_seconds",
            "Time a forwarded legacy request waited for the owner's response head",
            self.forward_durations.clone(),
        );
        registry.register(
            "roundtrip_sse_streams_open",
            "SSE streams currently open",
            self.streams_open.clone(),
        );
    }
}

/// What is read, not counted, at each scrape: the live legacy sessions (the session registry
/// counts them), the audit log's tally, when sealing, the failures of the KeyManager's key
/// share (which it counts), and, with Redis, the failed calls to it (which its handle counts).
#[derive(Debug)]
pub(crate) struct Gathered {
    pub(crate) legacy_sessions: Arc<Sessions>,
    pub(crate) audit: Option<Arc<dyn AuditSink>>,
    pub(crate) key_share: Option<ShareHealth>,
    pub(crate) redis_errors: Option<RedisErrorCount>,
}

impl Collector for Gathered {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let sessions = i64::try_from(self.legacy_sessions.len()).unwrap_or(i64::MAX);
        ConstGauge::new(sessions).encode(encoder.encode_descriptor(
            "roundtrip_legacy_sessions",
            "Live legacy (initialize) sessions in this process",
            None,
            MetricType::Gauge,
        )?)?;
        if let Some(share) = &self.key_share {
            ConstCounter::new(share.failures()).encode(encoder.encode_descriptor(
                "roundtrip_key_share_failures",
                "Reads and writes of the requestState key share that failed (rings held kept serving)",
                None,
                MetricType::Counter,
            )?)?;
            let mut family = encoder.encode_descriptor(
                "roundtrip_key_refreshes",
                "Key rings reloaded from the share, by why",
                None,
                MetricType::Counter,
            )?;
            for reason in RefreshReason::ALL {
                let labels = [("reason", reason.label())];
                ConstCounter::new(share.refreshes(reason))
                    .encode(family.encode_family(&labels)?)?;
            }
        }
        if let Some(errors) = &self.redis_errors {
            ConstCounter::new(errors.get()).encode(encoder.encode_descriptor(
                "roundtrip_redis_errors",
                "Calls to Redis that failed (unreachable, timed out or refused), and subscriptions that dropped",
                None,
                MetricType::Counter,
            )?)?;
        }
        if let Some(audit) = &self.audit {
            let tally = audit.tally();
            let mut family = encoder.encode_descriptor(
                "roundtrip_audit_records",
                "Audit records of calls, by what became of them",
                None,
                MetricType::Counter,
            )?;
            for (result, value) in [
                ("written", tally.written),
                ("dropped", tally.dropped),
                ("failed", tally.failed),
            ] {
                let labels = [("result", result)];
                ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
            }
        }
        Ok(())
    }
}

/// Buckets for forward times: 50 µs to 1 s (a forward on loopback takes well under 1 ms).
fn forward_histogram() -> Histogram {
    Histogram::new([
        0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05, 0.25, 1.0,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use prometheus_client::encoding::text::encode;

    fn scrape(metrics: &Metrics) -> String {
        let mut registry = Registry::default();
        metrics.register(&mut registry);
        let mut text = String::new();
        encode(&mut text, &registry).expect("encodes");
        text
    }

    #[test]
    fn every_outcome_is_shown_before_its_first_reply() {
        let text = scrape(&Metrics::default());
        for outcome in ["complete", "input_required", "error", "cancelled"] {
            let series = format!("roundtrip_mcp_requests_total{{outcome=\"{outcome}\"}} 0");
            assert!(text.contains(&series), "{series} in\n{text}");
        }
    }

    #[test]
    fn replies_are_counted_by_outcome() {
        let metrics = Metrics::default();
        metrics.record_reply("complete");
        metrics.record_reply("complete");
        metrics.record_reply("listen");
        let text = scrape(&metrics);
        for series in [
            r#"roundtrip_mcp_requests_total{outcome="complete"} 2"#,
            r#"roundtrip_mcp_requests_total{outcome="listen"} 1"#,
            r#"roundtrip_mcp_requests_total{outcome="error"} 0"#,
        ] {
            assert!(text.contains(series), "{series} in\n{text}");
        }
    }

    #[test]
    fn a_duration_is_labelled_with_tenant_method_and_outcome() {
        let metrics = Metrics::default();
        let tenant: Arc<str> = Arc::from("acme");
        metrics.record_duration(
            &tenant,
            &Method::ToolsCall,
            "complete",
            Duration::from_micros(300),
        );
        let text = scrape(&metrics);
        let labels = r#"tenant="acme",method="tools/call",outcome="complete""#;
        assert!(
            text.contains(&format!(
                "roundtrip_mcp_request_duration_seconds_count{{{labels}}} 1"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "roundtrip_mcp_request_duration_seconds_bucket{{le=\"0.0005\",{labels}}} 1"
            )),
            "{text}"
        );
    }

    #[test]
    fn two_metrics_on_one_thread_each_count_only_their_own_durations() {
        let (first, second) = (Metrics::default(), Metrics::default());
        let tenant: Arc<str> = Arc::from("acme");
        first.record_duration(&tenant, &Method::ToolsCall, "complete", Duration::ZERO);
        second.record_duration(&tenant, &Method::ToolsCall, "complete", Duration::ZERO);
        second.record_duration(&tenant, &Method::ToolsCall, "complete", Duration::ZERO);
        let count = |text: &str| {
            let series = r#"roundtrip_mcp_request_duration_seconds_count{tenant="acme",method="tools/call",outcome="complete"}"#;
            text.lines()
                .find_map(|l| l.strip_prefix(series))
                .map(str::trim)
                .map(str::to_owned)
        };
        assert_eq!(count(&scrape(&first)).as_deref(), Some("1"));
        assert_eq!(count(&scrape(&second)).as_deref(), Some("2"));
    }

    #[test]
    fn durations_recorded_on_several_threads_add_up_in_one_series() {
        let metrics = Metrics::default();
        let tenant: Arc<str> = Arc::from("acme");
        std::thread::scope(|s| {
            for _ in 0..3 {
                s.spawn(|| {
                    for _ in 0..5 {
                        metrics.record_duration(
                            &tenant,
                            &Method::ToolsCall,
                            "error",
                            Duration::ZERO,
                        );
                    }
                });
            }
        });
        let text = scrape(&metrics);
        assert!(
            text.contains(r#"tenant="acme",method="tools/call",outcome="error"} 15"#),
            "{text}"
        );
    }

    #[test]
    fn a_method_nobody_defined_is_labelled_other() {
        let metrics = Metrics::default();
        let tenant: Arc<str> = Arc::from("acme");
        // A notification's name is not a request's method, whatever a client sends with an id.
        for method in ["x/1", "x/2", "notifications/initialized"] {
            metrics.record_duration(&tenant, &Method::from(method), "error", Duration::ZERO);
        }
        let text = scrape(&metrics);
        assert!(
            text.contains(r#"method="other",outcome="error"} 3"#),
            "{text}"
        );
        assert!(!text.contains("x/1"), "{text}");
    }

    #[test]
    fn rate_limit_refusals_are_counted_by_tenant() {
        let metrics = Metrics::default();
        let tenant: Arc<str> = Arc::from("acme");
        metrics.record_rate_limited(tenant.clone());
        metrics.record_rate_limited(tenant);
        assert!(
            scrape(&metrics).contains(r#"roundtrip_rate_limited_total{tenant="acme"} 2"#),
            "{}",
            scrape(&metrics)
        );
    }
}
