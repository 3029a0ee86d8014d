//! The per-request pipeline: [`dispatch`] runs one call under its span, its timeout, its
//! cancellation and panic capture; `route` sends it to the method's code; a modern
//! `tools/call`, `prompts/get` or `resources/read` takes one `round` of input-required; every
//! result is stamped for its era.
//!
//! The policies themselves (the capability gate, sealing, stamping) are pure functions of
//! their own modules, applied here with the [`Protection`] the worker's policy view gave.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime};

use futures_util::FutureExt;
use serde_json::{Map, Value};
use tracing::field::Empty;
use tracing::Instrument;

use super::call::Call;
use super::config::RuntimeConfig;
use super::methods;
use super::mrtr::{self, Completed, Produced};
use super::protection::Protection;
use super::relay::NoRelay;
use super::reply::{Reply, ReplyKind};
use super::shim;
use super::stamp;
use crate::handler::{Cancellation, Outcome};
use crate::protocol::result::{StampedResult, StampedToolResult};
use crate::protocol::{Era, McpError, Method};
use crate::tenancy::{Admission, AuditSink, CallOutcome, CallRecord, Refusal};

/// The name of every request's span: its fields are `tenant`, `method`, `target`, `round`,
/// `outcome` and `code`. A subscriber that exports traces selects these spans by it, whatever
/// their level (they are debug while an audit log records every call).
pub const REQUEST_SPAN: &str = "mcp";

/// The span of one request, at `level`.
macro_rules! mcp_span {
    ($level:expr, $call:expr) => {
        tracing::span!(
            $level,
            REQUEST_SPAN,
            tenant = $call.tenant.slug(),
            method = $call.request.method.as_str(),
            target = Empty,
            round = Empty,
            outcome = Empty,
            code = Empty
        )
    };
}

/// Runs one request under its span, its timeout and its cancellation.
///
/// A plain function returning the instrumented future, not an `async fn`: an `async fn`
/// would keep its arguments in its own state beside the copy the future moves in, and a
/// legacy flow holds this future for as long as its user takes to answer.
///
/// `config` is the runtime's config as its caller holds it: a worker's own copy behind an
/// `Rc` (taken per request with no atomic operation) or the process's `Arc`.
pub(crate) fn dispatch<C>(
    mut call: Call,
    protection: Protection,
    config: C,
) -> impl Future<Output = Reply>
where
    C: std::ops::Deref<Target = RuntimeConfig>,
{
    // With an audit log every call is recorded there: the span (and the `request done` line in
    // it) is then debug, so the default log level pays nothing per request for it.
    let span = if config.audit.is_some() {
        mcp_span!(tracing::Level::DEBUG, call)
    } else {
        mcp_span!(tracing::Level::INFO, call)
    };
    // A shim flow waits for people: its handler runs and its legs have their own bounds.
    let timeout = if call.scope.era == Era::Legacy && call.request.method.may_require_input() {
        Duration::MAX
    } else {
        config.request_timeout
    };
    // Free when the span is disabled, one reference count when it is enabled: either way
    // cheaper than asking the subscriber for the current span at each record.
    call.span = span.clone();
    async move {
        let config = &*config;
        let started = Instant::now();
        let audit = Audit::begin(&call, config);
        // When the request was admitted: its timeout counts from then, as it always has (a
        // verdict awaited from the shared limits is not the handler's time).
        let admitted = match admit(&call, config) {
            Admission::Admitted => Ok(started),
            Admission::Refused(refusal) => Err(refusal),
            Admission::Pending(verdict) => verdict.await.map(|()| Instant::now()),
        };
        let reply = match admitted {
            Ok(admitted) => guarded(&mut call, &protection, config, admitted, timeout).await,
            Err(Refusal::OverLimit(wait)) => {
                config.metrics.record_rate_limited(call.tenant.slug_arc());
                Reply::Error(McpError::rate_limited(wait))
            }
            Err(Refusal::Unavailable(wait)) => Reply::Error(McpError::limits_unavailable(wait)),
        };
        let took = started.elapsed();
        let outcome = reply.kind().as_str();
        config.metrics.record_duration(
            call.tenant.slug_shared(),
            &call.request.method,
            outcome,
            took,
        );
        call.span.record("outcome", outcome);
        if let Reply::Error(e) = &reply {
            call.span.record("code", e.code.code());
        }
        if config.audit.is_some() {
            tracing::debug!("request done");
        } else {
            tracing::info!("request done");
        }
        if let Some(audit) = audit {
            audit.finish(&call, &reply, took);
        }
        reply
    }
    .instrument(span)
}

/// Routes `call` under its timeout, counted from `admitted`, its cancellation (with a grace
/// for the handler to clean up) and panic capture.
async fn guarded(
    call: &mut Call,
    protection: &Protection,
    config: &RuntimeConfig,
    admitted: Instant,
    timeout: Duration,
) -> Reply {
    if call.cancel.is_cancelled() {
        return Reply::Cancelled;
    }
    let cancel = call.cancel.clone();
    // In a block of its own, so that the work (which holds the call) is gone when the outcome
    // is logged below, and the log can name the call's tenant without a copy kept for it.
    let ran = {
        let mut work =
            std::pin::pin!(AssertUnwindSafe(route(call, protection, config)).catch_unwind());
        // The work's first poll on its own: most requests complete there, and then they need
        // neither a timer (a clock read, a timer entry made and dropped) nor a waiter on the
        // cancellation (registered with its `Notify` under that one's lock, and removed). A
        // request cancelled before it began was answered above.
        let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
        match first {
            Poll::Ready(ran) => Ok(ran),
            // Boxed: the timer and the cancellation's waiter would otherwise be part of every
            // request's future (the dispatch future, which is copied into its box per request).
            Poll::Pending => {
                let left = timeout.saturating_sub(admitted.elapsed());
                Box::pin(wait_for(work, left, &cancel, config)).await
            }
        }
    };
    match ran {
        Ok(Ok(reply)) => reply,
        Ok(Err(panic)) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned());
            tracing::error!(
                tenant = call.tenant.slug(),
                panic = what.as_deref().unwrap_or("<non-string panic>"),
                "handler panicked"
            );
            Reply::Error(McpError::internal("Internal error"))
        }
        Err(Unfinished::TimedOut) => {
            tracing::warn!(
                tenant = call.tenant.slug(),
                timeout_ms = config.request_timeout.as_millis() as u64,
                "request timed out"
            );
            Reply::Error(McpError::internal("Internal error: request timed out"))
        }
        Err(Unfinished::Cancelled) => Reply::Cancelled,
    }
}

/// Why a call that did not complete at its first poll did not complete.
enum Unfinished {
    /// Its timeout passed.
    TimedOut,
    /// Its client went away (it had a short grace to clean up).
    Cancelled,
}

/// The rest of a call that did not complete at its first poll: for at most `left`, what
/// remains of its timeout, unless its client goes away first (then it has a short grace to
/// clean up).
async fn wait_for<F: Future>(
    mut work: Pin<&mut F>,
    left: Duration,
    cancel: &Cancellation,
    config: &RuntimeConfig,
) -> Result<F::Output, Unfinished> {
    tokio::select! {
        biased;
        r = tokio::time::timeout(left, work.as_mut()) => r.map_err(|_| Unfinished::TimedOut),
        _ = cancel.cancelled() => {
            // The client is gone. The handler may still be cleaning up after
            // `ctx.cancelled()`: give it a short grace, discard what it returns, drop it.
            let _ = tokio::time::timeout(config.cancel_grace, work.as_mut()).await;
            Err(Unfinished::Cancelled)
        }
    }
}

/// The rate limits' verdict on `call`, or the question to await for it.
fn admit(call: &Call, config: &RuntimeConfig) -> Admission {
    let Some(limiter) = config
        .limiter
        .as_ref()
        .filter(|_| call.view.settings().has_rate_limits)
    else {
        return Admission::Admitted;
    };
    let tool = match call.request.method {
        Method::ToolsCall => call.request.target(),
        _ => None,
    };
    limiter.admit(call.tenant.slug(), &call.principal, call.client, tool)
}

/// An audited call under way: a `tools/call`, `prompts/get` or `resources/read` of a runtime
/// with an audit sink.
struct Audit<'a> {
    sink: &'a dyn AuditSink,
    method: &'static str,
    target: Option<Arc<str>>,
    at: SystemTime,
}

impl<'a> Audit<'a> {
    /// Starts the record of `call`, if it is audited. The target is read now: a legacy flow
    /// moves the params out of the request.
    fn begin(call: &Call, config: &'a RuntimeConfig) -> Option<Audit<'a>> {
        let sink = config.audit.as_deref()?;
        let method = &call.request.method;
        // The three methods with a target are the audited ones.
        method.target_key()?;
        let target = call.request.target().map(|t| {
            call.catalog
                .target_name(method, t)
                .unwrap_or_else(|| Arc::from(t))
        });
        Some(Audit {
            sink,
            method: method.known_name()?,
            target,
            at: call.now(),
        })
    }

    fn finish(self, call: &Call, reply: &Reply, latency: Duration) {
        let outcome = match (reply, reply.kind()) {
            (Reply::Error(e), _) => CallOutcome::Error(i64::from(e.code.code())),
            (_, ReplyKind::InputRequired) => CallOutcome::InputRequired,
            (_, ReplyKind::Cancelled) => CallOutcome::Cancelled,
            _ => CallOutcome::Complete,
        };
        self.sink.record(CallRecord {
            tenant: call.tenant.slug_arc(),
            principal: call.principal.id_arc(),
            method: self.method,
            target: self.target,
            outcome,
            round: call.round.load(Ordering::Relaxed),
            at: self.at,
            latency,
        });
    }
}

/// Takes the call mutably so an input-required method can move its answers out of the
/// request instead of copying them, and a legacy shim flow its params.
async fn route(call: &mut Call, protection: &Protection, config: &RuntimeConfig) -> Reply {
    let method = &call.request.method;
    let legacy = call.scope.era == Era::Legacy;
    let result = match method {
        Method::ServerDiscover | Method::SubscriptionsListen if legacy => {
            Err(McpError::method_not_found(method.as_str()))
        }
        m if legacy && m.may_require_input() => {
            let params = call.request.params.take();
            match &call.shim {
                // Boxed: a legacy flow's future is the largest of these, and unboxed it would
                // set the size of every request's pipeline future, which is moved into a box.
                Some(s) => Box::pin(shim::run(call, params, s)).await,
                // Only a session gives a legacy request a way to its client.
                None => Err(shim::refused(NoRelay::NoStream)),
            }
        }
        Method::ServerDiscover => Ok(methods::discover(call)),
        Method::ToolsList
        | Method::PromptsList
        | Method::ResourcesList
        | Method::ResourcesTemplatesList => methods::list(method, call),
        Method::CompletionComplete => methods::complete(call),
        Method::SubscriptionsListen => {
            return methods::listen(call).map_or_else(Reply::Error, |l| Reply::Listen(Box::new(l)))
        }
        m if m.may_require_input() => {
            return round(call, protection, config)
                .await
                .map_or_else(Reply::Error, Reply::Result)
        }
        other => custom(call, other.as_str()).await,
    };
    result
        .and_then(|r| stamped(call, r))
        .map_or_else(Reply::Error, Reply::Result)
}

/// One modern round of `tools/call`, `prompts/get` or `resources/read`. A tool's result and
/// an input-required result are typed and stamped as they are built; the rest are objects.
async fn round(
    call: &mut Call,
    protection: &Protection,
    config: &RuntimeConfig,
) -> Result<StampedResult, McpError> {
    // Taken, leaving null in their place, rather than removed: a removal shifts the map's
    // later entries down, and nothing reads these entries again.
    let (arguments, answers) = call
        .request
        .params
        .as_mut()
        .map(|p| {
            (
                take_member(p, "arguments"),
                take_member(p, "inputResponses"),
            )
        })
        .unwrap_or_default();
    match mrtr::run(
        call,
        arguments,
        answers,
        protection,
        config.max_rounds,
        config.replay.as_ref(),
    )
    .await?
    {
        Produced::Complete(Completed::Tool(r)) => Ok(StampedResult::Tool(StampedToolResult::new(
            r,
            call.view.server_meta(),
        ))),
        Produced::Complete(Completed::Object(mut r)) => {
            if call.request.method == Method::ResourcesRead {
                methods::read_cache_hints(&mut r);
            }
            stamped(call, r)
        }
        Produced::InputRequired(r) => Ok(StampedResult::InputRequired(r)),
    }
}

/// The value of `params[key]`, when there is one, with null left in its place.
fn take_member(params: &mut Map<String, Value>, key: &str) -> Option<Value> {
    params.get_mut(key).map(Value::take)
}

/// A result built as a JSON object, stamped for the call's era.
fn stamped(call: &Call, mut r: Map<String, Value>) -> Result<StampedResult, McpError> {
    stamp::stamp(
        &call.request.method,
        &mut r,
        call.scope.era,
        call.view.server_info(),
    )?;
    Ok(StampedResult::Object(r))
}

/// A custom method from the catalog. It may not ask for input.
async fn custom(call: &Call, method: &str) -> Result<Map<String, Value>, McpError> {
    let handler = call
        .catalog
        .method(method)
        .ok_or_else(|| McpError::method_not_found(method))?
        .clone();
    let ctx = call.context().build();
    match handler
        .handle(ctx, call.request.params.clone().unwrap_or_default())
        .await
    {
        Ok(Outcome::Complete(Value::Object(r))) => Ok(r),
        Ok(Outcome::Complete(_)) => {
            tracing::error!(
                method,
                "custom method returned a result that is not an object"
            );
            Err(McpError::internal("Internal error"))
        }
        Ok(Outcome::InputRequired(_)) => Err(stamp::input_required_not_allowed(method)),
        Err(e) => Err(e.into_wire(method)),
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::sync::atomic::AtomicBool;

    use async_trait::async_trait;

    use serde_json::json;

    use super::*;
    use crate::dispatch::call::Caller;
    use crate::dispatch::envelope::check_modern;
    use crate::dispatch::relay::{Relay, Shim};
    use crate::handler::Cancellation;
    use crate::handler::{
        Catalog, Context, InputRequired, MethodHandler, MethodOutcome, Principal, Tenant,
    };
    use crate::protocol::input::{InputRequests, InputResponse, InputResponses};
    use crate::protocol::result::CallToolResult;
    use crate::protocol::{ClientCapabilities, Request, RequestId};

    /// A custom method that (wrongly) asks for input.
    struct Asks;

    #[async_trait(?Send)]
    impl MethodHandler for Asks {
        fn method(&self) -> &str {
            "acme/asks"
        }

        async fn handle(&self, _ctx: Context, _params: Map<String, Value>) -> MethodOutcome {
            Ok(Outcome::InputRequired(
                InputRequired::new().list_roots("roots"),
            ))
        }
    }

    thread_local! {
        /// What the test subscriber wrote on this thread.
        static CAPTURED: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }

    /// Writes into this thread's [`CAPTURED`].
    struct Captured;

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            CAPTURED.with(|c| c.borrow_mut().extend_from_slice(buf));
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    /// Logs of this thread from here on. The subscriber is the process's global one, set
    /// once: a scoped one (`set_default`) raced with the other test threads over tracing's
    /// global interest cache and level, and lost the line about one run in five.
    fn capture_logs() {
        static GLOBAL: std::sync::Once = std::sync::Once::new();
        GLOBAL.call_once(|| {
            let subscriber = tracing_subscriber::fmt()
                .with_writer(|| Captured)
                .with_ansi(false)
                .finish();
            tracing::subscriber::set_global_default(subscriber)
                .expect("no other global subscriber");
        });
        CAPTURED.with(|c| c.borrow_mut().clear());
    }

    /// A custom method that notes that it ran.
    struct Runs(Arc<AtomicBool>);

    #[async_trait(?Send)]
    impl MethodHandler for Runs {
        fn method(&self) -> &str {
            "acme/runs"
        }

        async fn handle(&self, _ctx: Context, _params: Map<String, Value>) -> MethodOutcome {
            self.0.store(true, Ordering::Relaxed);
            Ok(Outcome::Complete(json!({})))
        }
    }

    /// A modern call of `handler`'s method, cancelled through `cancel`.
    fn call_of(handler: Arc<dyn MethodHandler>, cancel: Cancellation) -> Call {
        let method = handler.method().to_owned();
        let catalog = Catalog::builder().method(handler).build();
        modern_call(catalog, &method, json!({}), cancel)
    }

    /// A modern call of `method` with `params` (and a `_meta` that declares roots) to a
    /// tenant serving `catalog`, cancelled through `cancel`.
    fn modern_call(catalog: Catalog, method: &str, params: Value, cancel: Cancellation) -> Call {
        let mut params = object(params);
        params.insert(
            "_meta".into(),
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"roots": {}},
            }),
        );
        let mut request = request(method, params);
        let envelope = check_modern(&mut request, None).expect("a modern request");
        let tenant = Arc::new(Tenant::new("t", catalog));
        Call::modern(
            Caller::new(tenant, Principal::anonymous()),
            request,
            envelope,
            None,
            cancel,
        )
    }

    /// A request of `method` with `params`.
    fn request(method: &str, params: Map<String, Value>) -> Request {
        Request {
            id: RequestId::Number(1.into()),
            method: method.into(),
            params: Some(params),
            meta_capabilities: None,
            meta_version: None,
        }
    }

    /// `value`'s members, when it is an object.
    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(members) => members,
            _ => Map::new(),
        }
    }

    /// `call` dispatched without sealing, in the default configuration.
    async fn dispatched(call: Call) -> Reply {
        dispatch(
            call,
            Protection::PassThrough,
            Arc::new(RuntimeConfig::default()),
        )
        .await
    }

    #[actix_rt::test]
    async fn a_request_cancelled_before_it_runs_is_cancelled_and_its_handler_never_runs() {
        let ran = Arc::new(AtomicBool::new(false));
        let cancel = Cancellation::new();
        cancel.cancel();
        let call = call_of(Arc::new(Runs(ran.clone())), cancel);
        let reply = dispatched(call).await;

        assert!(matches!(reply, Reply::Cancelled), "{reply:?}");
        assert!(!ran.load(Ordering::Relaxed));
    }

    #[actix_rt::test]
    async fn the_request_done_line_names_the_target_the_round_and_the_outcome() {
        capture_logs();
        let echo = crate::handler::fn_tool(
            crate::handler::ToolDescriptor::no_args("echo", "Echoes."),
            |_ctx, _args| async { Ok(crate::protocol::result::CallToolResult::text("hi").into()) },
        );
        let catalog = Catalog::builder().tool(echo).build();
        let call = modern_call(
            catalog,
            "tools/call",
            json!({"name": "echo"}),
            Cancellation::new(),
        );
        // Without an audit log the request's span is at info, as its `request done` line.
        let reply = dispatched(call).await;

        assert!(matches!(reply, Reply::Result(_)), "{reply:?}");
        let done = request_done_line();
        for field in ["target=\"echo\"", "round=0", "outcome=\"complete\""] {
            assert!(done.contains(field), "{field} missing from {done}");
        }
    }

    #[actix_rt::test]
    async fn the_request_done_line_of_an_error_names_its_code() {
        capture_logs();
        let call = call_of(Arc::new(Asks), Cancellation::new());
        let reply = dispatched(call).await;

        assert!(matches!(reply, Reply::Error(_)), "{reply:?}");
        let done = request_done_line();
        assert!(done.contains("code=-32603"), "{done}");
    }

    /// A legacy client that answers every request of a round with no roots.
    #[derive(Debug)]
    struct NoRoots;

    #[async_trait(?Send)]
    impl Relay for NoRoots {
        async fn relay(&self, requests: InputRequests) -> Result<InputResponses, McpError> {
            let none = object(json!({"roots": []}));
            Ok(requests
                .into_keys()
                .map(|key| (key, InputResponse::new(none.clone())))
                .collect())
        }
    }

    #[actix_rt::test]
    async fn a_legacy_flows_request_done_line_names_its_target_its_rounds_and_its_outcome() {
        capture_logs();
        let asker = crate::handler::fn_tool(
            crate::handler::ToolDescriptor::no_args("asker", "Asks for the roots once."),
            |ctx, _args| async move {
                Ok(match ctx.input_response("roots") {
                    Some(_) => Outcome::Complete(CallToolResult::text("done")),
                    None => Outcome::InputRequired(InputRequired::new().list_roots("roots")),
                })
            },
        );
        let tenant = Arc::new(Tenant::new("t", Catalog::builder().tool(asker).build()));
        let request = request("tools/call", object(json!({"name": "asker"})));
        let shim = Shim {
            relay: Ok(Arc::new(NoRoots)),
            max_rounds: 8,
            run_timeout: Duration::from_secs(5),
        };
        let call = Call::legacy(
            Caller::new(tenant, Principal::anonymous()),
            request,
            ClientCapabilities::new(object(json!({"roots": {}}))),
            None,
            Cancellation::new(),
            shim,
        );
        let reply = dispatched(call).await;

        assert!(matches!(reply, Reply::Result(_)), "{reply:?}");
        let done = request_done_line();
        for field in ["target=\"asker\"", " round=1 ", "outcome=\"complete\""] {
            assert!(done.contains(field), "{field} missing from {done}");
        }
    }

    /// The `request done` line among this thread's captured logs.
    fn request_done_line() -> String {
        let logs = CAPTURED.with(|c| String::from_utf8_lossy(&c.borrow()).into_owned());
        logs.lines()
            .find(|l| l.contains("request done"))
            .map(str::to_owned)
            .unwrap_or_else(|| panic!("no request done line in {logs}"))
    }

    #[actix_rt::test]
    async fn input_required_from_a_custom_method_is_an_internal_error_and_a_log_line() {
        capture_logs();
        let call = call_of(Arc::new(Asks), Cancellation::new());
        let reply = dispatched(call).await;

        let Reply::Error(error) = reply else {
            panic!("expected an error, got {reply:?}")
        };
        assert_eq!(error.code.code(), -32603);
        let logs = CAPTURED.with(|c| String::from_utf8_lossy(&c.borrow()).into_owned());
        assert!(
            logs.contains("ERROR") && logs.contains("input-required") && logs.contains("acme/asks"),
            "{logs}"
        );
    }
}
