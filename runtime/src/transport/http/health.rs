//! `/healthz` (the process answers), `/readyz` (it serves, and is not shutting down) and
//! `/metrics` (Prometheus text).

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};

use actix_web::{web, HttpResponse};

use super::McpService;
use crate::dispatch::{Reply, ReplyKind};
use crate::tenancy::AuditTally;

/// Counters of what the MCP endpoint answered. Atomics: no lock on the request path.
#[derive(Debug, Default)]
pub struct Metrics {
    complete: AtomicU64,
    input_required: AtomicU64,
    errors: AtomicU64,
    cancelled: AtomicU64,
    notifications: AtomicU64,
    streams_open: AtomicU64,
    rejected_http: AtomicU64,
}

impl Metrics {
    fn inc(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// A reply that reached its client (listen replies count as streams).
    pub(crate) fn record_reply(&self, reply: &Reply) {
        match reply.kind() {
            ReplyKind::InputRequired => Self::inc(&self.input_required),
            ReplyKind::Error => Self::inc(&self.errors),
            ReplyKind::Complete => Self::inc(&self.complete),
            ReplyKind::Listen | ReplyKind::Cancelled => {}
        }
    }

    /// A request whose client went away before its reply.
    pub(crate) fn record_cancelled(&self) {
        Self::inc(&self.cancelled);
    }

    /// A request refused before dispatch (guard, size, auth, tenant, envelope).
    pub(crate) fn record_rejection(&self) {
        Self::inc(&self.rejected_http);
    }

    pub(crate) fn record_notification(&self) {
        Self::inc(&self.notifications);
    }

    pub(crate) fn stream_opened(&self) {
        Self::inc(&self.streams_open);
    }

    pub(crate) fn stream_closed(&self) {
        self.streams_open.fetch_sub(1, Ordering::Relaxed);
    }

    /// The Prometheus text of the counters, with the process's live legacy sessions (which
    /// the session registry counts, not these metrics) and, when sealing, the failures of the
    /// KeyManager's key share (which it counts).
    fn render(
        &self,
        legacy_sessions: usize,
        audit: Option<AuditTally>,
        key_share_failures: Option<u64>,
    ) -> String {
        let mut out = String::new();
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        header(
            &mut out,
            "roundtrip_mcp_requests_total",
            "counter",
            "MCP requests answered, by outcome.",
        );
        for (outcome, c) in [
            ("complete", &self.complete),
            ("input_required", &self.input_required),
            ("error", &self.errors),
            ("cancelled", &self.cancelled),
        ] {
            let _ = writeln!(
                out,
                "roundtrip_mcp_requests_total{{outcome=\"{outcome}\"}} {}",
                get(c)
            );
        }
        for (name, kind, help, value) in [
            (
                "roundtrip_mcp_notifications_total",
                "counter",
                "Client notifications accepted.",
                get(&self.notifications),
            ),
            (
                "roundtrip_http_rejected_total",
                "counter",
                "Requests refused before dispatch (guard, size, auth, tenant, envelope).",
                get(&self.rejected_http),
            ),
            (
                "roundtrip_sse_streams_open",
                "gauge",
                "SSE streams currently open.",
                get(&self.streams_open),
            ),
            (
                "roundtrip_legacy_sessions",
                "gauge",
                "Live legacy (initialize) sessions in this process.",
                legacy_sessions as u64,
            ),
        ] {
            header(&mut out, name, kind, help);
            let _ = writeln!(out, "{name} {value}");
        }
        if let Some(failures) = key_share_failures {
            let name = "roundtrip_key_share_failures_total";
            header(
                &mut out,
                name,
                "counter",
                "Reads and writes of the requestState key share that failed (rings held kept serving).",
            );
            let _ = writeln!(out, "{name} {failures}");
        }
        if let Some(tally) = audit {
            header(
                &mut out,
                "roundtrip_audit_records_total",
                "counter",
                "Audit records of calls, by what became of them.",
            );
            for (result, value) in [
                ("written", tally.written),
                ("dropped", tally.dropped),
                ("failed", tally.failed),
            ] {
                let _ = writeln!(
                    out,
                    "roundtrip_audit_records_total{{result=\"{result}\"}} {value}"
                );
            }
        }
        out
    }
}

/// The `# HELP` and `# TYPE` lines of one metric.
fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

pub(crate) async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(r#"{"status":"ok"}"#)
}

pub(crate) async fn readyz(service: web::Data<McpService>) -> HttpResponse {
    if service.shutdown.is_cancelled() {
        HttpResponse::ServiceUnavailable()
            .content_type("application/json")
            .body(r#"{"status":"shutting down"}"#)
    } else {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(r#"{"status":"ready"}"#)
    }
}

pub(crate) async fn metrics(service: web::Data<McpService>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("text/plain; version=0.0.4")
        .body(service.metrics.render(
            service.legacy.sessions.len(),
            service.runtime.audit.as_ref().map(|a| a.tally()),
            service.keys.as_ref().map(|keys| keys.share_failures.get()),
        ))
}
