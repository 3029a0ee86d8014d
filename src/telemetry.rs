//! Logs and traces: the one `tracing` subscriber of every command that reads the
//! configuration.
//!
//! - **Logs** go to stderr (stdout belongs to the stdio transport and to `serve`'s banner),
//!   filtered by `log` (`RUST_LOG` wins), and every line ends with `worker_id=…`. The id is
//!   written by the line's formatter ([`WithWorkerId`]) rather than carried by a span: a span
//!   entered in `main` would not be current on actix's worker threads, nor on the store's or the
//!   exporter's, and the formatter sees every line of every thread.
//! - **Traces**, only with `otlp_endpoint` set: every request's span (`mcp`, with its tenant,
//!   method, target, round, outcome and code; [`REQUEST_SPAN`]) is exported over OTLP/HTTP with
//!   protobuf, by the OpenTelemetry SDK's batch processor, on a thread of its own. Request spans
//!   are exported whatever the log level (while the audit log is on they are debug, below the
//!   default `info`); other spans and events follow the log filter. The resource says
//!   `service.name=roundtrip`, `service.version` and `service.instance.id` = the worker id.
//!   [`Telemetry::shutdown`] sends what is still batched, once the command has stopped.
//!
//!   A request that names its caller's trace (W3C `traceparent`, with `tracestate`) runs
//!   under a span of that trace ([`remote_parent`], named [`REMOTE_PARENT_SPAN`]), so its
//!   spans join the caller's trace (a legacy session's requests too: the session's actor
//!   runs each under the span that was current where the transport handed it over).
//!
//! Unset, nothing of OpenTelemetry is installed: the subscriber is the log filter and its
//! formatter, as before traces existed, and a request pays nothing for the option.

use std::cell::RefCell;
use std::time::Duration;

use opentelemetry::propagation::{Extractor, TextMapPropagator as _};
use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
use opentelemetry::KeyValue;
use opentelemetry_otlp::{Protocol, WithExportConfig as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{Sampler, SdkTracerProvider};
use opentelemetry_sdk::Resource;
use roundtrip_runtime::dispatch::REQUEST_SPAN;
use tracing::{Event, Subscriber};
use tracing_opentelemetry::OpenTelemetrySpanExt as _;
use tracing_subscriber::filter::{filter_fn, EnvFilter, FilterExt as _};
use tracing_subscriber::fmt::format::{self, FormatEvent, FormatFields, Writer};
use tracing_subscriber::fmt::FmtContext;
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;

use crate::config::Config;

/// How long [`Telemetry::shutdown`] waits for the last batch to be sent.
const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);

/// The crates of the exporter's HTTP client: their spans and events are never exported, or
/// sending one batch would log spans into the next one. So are the SDK's own (targets
/// `opentelemetry*`, its package names, some with `-`).
const EXPORTER_TARGETS: [&str; 5] = ["reqwest", "hyper", "hyper_util", "h2", "rustls"];

/// What the subscriber is built from: the settings of [`Config`] it reads.
#[derive(Debug, Clone)]
pub struct TelemetrySettings {
    /// The log filter (`EnvFilter` syntax) when `RUST_LOG` is unset.
    pub log: String,
    pub worker_id: String,
    /// The collector's base URL; `None`: no traces.
    pub otlp_endpoint: Option<String>,
}

impl TelemetrySettings {
    pub fn from_config(config: &Config) -> Self {
        Self {
            log: config.log.clone(),
            worker_id: config.worker_id(),
            otlp_endpoint: config.otlp_endpoint.clone(),
        }
    }
}

/// Why telemetry could not be set up.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    #[error("the OTLP exporter to ROUNDTRIP_OTLP_ENDPOINT: {0}")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

/// The installed subscriber's handle: holds the trace exporter, if there is one, until
/// [`Telemetry::shutdown`].
#[must_use = "shut it down when the command is done, or batched spans are lost"]
#[derive(Debug)]
pub struct Telemetry {
    traces: Option<SdkTracerProvider>,
}

impl Telemetry {
    /// Installs the process's subscriber. Call once, before anything logs.
    pub fn install(settings: &TelemetrySettings) -> Result<Telemetry, TelemetryError> {
        let Some(endpoint) = &settings.otlp_endpoint else {
            tracing_subscriber::registry()
                .with(log_filter(&settings.log))
                .with(log_lines(&settings.worker_id))
                .init();
            return Ok(Telemetry { traces: None });
        };
        let provider = tracer_provider(endpoint, &settings.worker_id)?;
        let traces = tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("roundtrip"))
            // Its `target` attribute (the span's module, also in `code.module.name`) would
            // stand beside the request span's own `target` (the tool, prompt or resource).
            .with_target(false)
            .with_filter(
                log_filter(&settings.log)
                    .or(filter_fn(|meta| {
                        meta.is_span()
                            && (meta.name() == REQUEST_SPAN || meta.name() == REMOTE_PARENT_SPAN)
                    }))
                    .and(filter_fn(|meta| !is_exporter_target(meta.target()))),
            );
        tracing_subscriber::registry()
            .with(log_lines(&settings.worker_id).with_filter(log_filter(&settings.log)))
            .with(traces)
            .init();
        tracing::info!(endpoint = %shown(endpoint), "exporting traces over OTLP/HTTP");
        Ok(Telemetry {
            traces: Some(provider),
        })
    }

    /// Sends the spans still batched (waiting at most [`SHUTDOWN_TIMEOUT`]) and stops the
    /// exporter. Call it after the command has stopped: spans ended later are not sent.
    pub fn shutdown(self) {
        if let Some(provider) = self.traces {
            if let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT) {
                tracing::warn!(error = %e, "the last spans may not have been exported");
            }
        }
    }
}

/// The name of the span a request that names its caller's trace runs under; its request
/// span is its child.
pub const REMOTE_PARENT_SPAN: &str = "mcp.traced";

/// The span a request with `traceparent` (and `tracestate`) runs under: a span whose parent
/// is the caller's, in the caller's trace; `None` for a `traceparent` that does not parse,
/// as if none had been sent. The MCP endpoint calls it only while traces are exported
/// (`HttpConfig::remote_parent`). Whether the caller sampled its trace does not matter: every
/// request is exported (the provider's sampler is always on).
pub fn remote_parent(traceparent: &str, tracestate: Option<&str>) -> Option<tracing::Span> {
    let caller = TraceContextPropagator::new().extract(&TraceHeaders {
        traceparent,
        tracestate,
    });
    if !caller.span().span_context().is_valid() {
        return None;
    }
    let span = tracing::span!(tracing::Level::INFO, REMOTE_PARENT_SPAN);
    // Refused only without an OpenTelemetry layer, where there is no trace to join.
    let _ = span.set_parent(caller);
    Some(span)
}

/// A request's Trace Context headers, as the propagator reads them.
struct TraceHeaders<'a> {
    traceparent: &'a str,
    tracestate: Option<&'a str>,
}

impl Extractor for TraceHeaders<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        match key {
            "traceparent" => Some(self.traceparent),
            "tracestate" => self.tracestate,
            _ => None,
        }
    }

    fn keys(&self) -> Vec<&str> {
        vec!["traceparent", "tracestate"]
    }
}

/// The log lines: to stderr, each ending with the worker id.
fn log_lines<S>(worker_id: &str) -> impl tracing_subscriber::Layer<S>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    // Colour only for a person at a terminal; log files and collectors get plain text.
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(ansi)
        .event_format(WithWorkerId {
            worker_id: worker_id.to_owned(),
            inner: format::format().with_ansi(ansi),
        })
}

/// `RUST_LOG` if set and valid, else `log`.
fn log_filter(log: &str) -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(log))
}

fn is_exporter_target(target: &str) -> bool {
    target.starts_with("opentelemetry")
        || EXPORTER_TARGETS.iter().any(|t| {
            target
                .strip_prefix(t)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with("::"))
        })
}

/// Where spans are sent: `/v1/traces` under the endpoint, as OTLP/HTTP adds it to
/// `OTEL_EXPORTER_OTLP_ENDPOINT`.
pub fn traces_url(endpoint: &str) -> String {
    format!("{}/v1/traces", endpoint.trim_end_matches('/'))
}

/// The traces URL as logged: without a user name or password.
fn shown(endpoint: &str) -> String {
    match url::Url::parse(&traces_url(endpoint)) {
        Ok(mut url) => {
            let _ = url.set_username("");
            let _ = url.set_password(None);
            url.to_string()
        }
        Err(_) => "<not a URL>".to_owned(),
    }
}

/// A provider with a batch exporter to `endpoint` (already validated by `Config::validate`).
fn tracer_provider(endpoint: &str, worker_id: &str) -> Result<SdkTracerProvider, TelemetryError> {
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_endpoint(traces_url(endpoint))
        .build()
        .map_err(TelemetryError::Exporter)?;
    // `OTEL_RESOURCE_ATTRIBUTES` first (a deployment's own labels), ours over them.
    let resource = Resource::builder()
        .with_service_name("roundtrip")
        .with_attributes([
            KeyValue::new("service.version", env!("CARGO_PKG_VERSION")),
            KeyValue::new("service.instance.id", worker_id.to_owned()),
        ])
        .build();
    Ok(SdkTracerProvider::builder()
        // Every request is exported, whatever a caller's `traceparent` says of sampling: the
        // default, parent-based, would let a client turn its requests' spans off.
        .with_sampler(Sampler::AlwaysOn)
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// The default line format with ` worker_id=…` added at the end of every line, like one more
/// field, and line breaks inside an event written as `\n`.
#[derive(Debug)]
pub struct WithWorkerId<F> {
    worker_id: String,
    inner: F,
}

thread_local! {
    /// The line being formatted, reused: a log line costs no allocation once its thread has
    /// written a long one.
    static LINE: RefCell<String> = const { RefCell::new(String::new()) };
}

impl<S, N, F> FormatEvent<S, N> for WithWorkerId<F>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
    F: FormatEvent<S, N>,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> std::fmt::Result {
        LINE.with(|cell| {
            // A line formatted while another is (a field's `Debug` that logs) gets its own.
            let mut fresh = String::new();
            let mut reused = cell.try_borrow_mut().ok();
            let line = match reused.as_deref_mut() {
                Some(line) => {
                    line.clear();
                    line
                }
                None => &mut fresh,
            };
            // `inner` sets its own colours (`with_ansi`): this buffer's writer has none.
            self.inner.format_event(ctx, Writer::new(line), event)?;
            let body = line.strip_suffix('\n').unwrap_or(line);
            // One event, one line: a message or field spanning lines (an error's `Debug`,
            // say) has its breaks written as `\n`, so that no line goes without the id and a
            // collector reading lines never splits an event.
            for (i, part) in body.split('\n').enumerate() {
                if i > 0 {
                    writer.write_str("\\n")?;
                }
                writer.write_str(part.strip_suffix('\r').unwrap_or(part))?;
            }
            writeln!(writer, " worker_id={}", self.worker_id)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traces_go_to_v1_traces_under_the_endpoint() {
        assert_eq!(
            traces_url("http://collector:4318"),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://gw.example/otlp/"),
            "https://gw.example/otlp/v1/traces"
        );
    }

    #[test]
    fn the_logged_endpoint_shows_no_credentials() {
        assert_eq!(
            shown("https://user:hunter2@collector:4318"),
            "https://collector:4318/v1/traces"
        );
    }

    #[test]
    fn the_exporters_own_targets_are_recognised_by_crate() {
        for target in [
            "hyper",
            "hyper_util::client",
            "opentelemetry_sdk",
            "opentelemetry-otlp",
            "reqwest::connect",
        ] {
            assert!(is_exporter_target(target), "{target}");
        }
        for target in [
            "roundtrip_runtime::dispatch::pipeline",
            "hyperion",
            "roundtrip",
        ] {
            assert!(!is_exporter_target(target), "{target}");
        }
    }

    #[test]
    fn every_line_ends_with_the_worker_id() {
        use std::sync::{Arc, Mutex};

        #[derive(Clone, Default)]
        struct Captured(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Captured {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                self.0.lock().expect("lock").extend_from_slice(buf);
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }

        let captured = Captured::default();
        let sink = captured.clone();
        let subscriber = tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_writer(move || sink.clone())
                .with_ansi(false)
                .event_format(WithWorkerId {
                    worker_id: "pod-a1".to_owned(),
                    inner: format::format().with_ansi(false),
                }),
        );
        tracing::subscriber::with_default(subscriber, || {
            tracing::info!(tenant = "demo", "first");
            tracing::info_span!("mcp", method = "tools/call").in_scope(|| {
                tracing::warn!("second\nspans two lines");
            });
        });
        let text = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(
            lines[0].ends_with("first tenant=\"demo\" worker_id=pod-a1"),
            "{text}"
        );
        assert!(lines[1].contains("mcp{method=\"tools/call\"}"), "{text}");
        assert!(
            lines[1].ends_with("second\\nspans two lines worker_id=pod-a1"),
            "{text}"
        );
    }
}
