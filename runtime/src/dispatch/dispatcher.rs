//! The Dispatcher actor: one per HTTP worker thread, never one mailbox shared by every
//! request.
//!
//! It keeps the worker's snapshot of the key rings current as the KeyManager pushes it, so no
//! request waits on another thread. The snapshot and the config are a [`WorkerState`] the
//! actor shares with the worker's HTTP endpoint, which runs a request answered with one JSON
//! body on the request's own task ([`WorkerState::run`]: no hop). Requests sent to the actor
//! are handled as a `ResponseFuture`: the mailbox is free again as soon as the request is
//! routed, and requests on the same worker run concurrently. Modern requests need no
//! per-request actor: their handler run is one future, cancelled when the client goes away
//! (the transport's drop guard trips the token).

use std::cell::RefCell;
use std::collections::HashSet;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use actix::prelude::*;
use futures_util::FutureExt;
use serde_json::{json, Map, Value};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;
use tracing::field::Empty;
use tracing::Instrument;

use super::config::RuntimeConfig;
use super::envelope::Envelope;
use super::methods;
use super::mrtr::{self, Completed, Produced};
use super::protection::Protection;
use super::shim::{self, Shim};
use super::stamp;
use crate::handler::{Catalog, Context, ContextBuilder, Notifier, Outcome};
use crate::protocol::meta::SUBSCRIPTION_ID;
use crate::protocol::result::{StampedResult, StampedToolResult};
use crate::protocol::{ClientCapabilities, Era, McpError, Request, RequestId, ResultType};
use crate::sealing::{
    EnsureTenant, KeyManager, KeyRings, KeyRingsChanged, SetTenantGrace, Subscribe,
};
use crate::tenancy::{ListChanged, Principal, Tenant};

/// What the request may receive and may be asked for, by era: from the `_meta` envelope on
/// a modern request, from the session on a legacy one.
#[derive(Debug, Clone)]
pub struct Scope {
    pub era: Era,
    pub client_capabilities: ClientCapabilities,
}

/// Taken by value: the envelope is done with once the call is built, and its capabilities
/// move into the scope instead of being copied.
impl From<Envelope> for Scope {
    fn from(e: Envelope) -> Self {
        Scope {
            era: e.version.era(),
            client_capabilities: e.meta.client_capabilities,
        }
    }
}

/// One request, ready to dispatch.
#[derive(Debug)]
pub struct Call {
    pub tenant: Arc<Tenant>,
    /// The tenant's catalog as it was when the request arrived: one snapshot serves the
    /// header checks and the dispatch.
    pub catalog: Arc<Catalog>,
    pub principal: Principal,
    pub request: Request,
    pub scope: Scope,
    pub notifier: Option<Notifier>,
    pub cancel: CancellationToken,
    /// Legacy requests only: how the shim reaches the client.
    pub shim: Option<Shim>,
}

impl Call {
    /// The handler context of this request: who, for which tenant, with what capabilities,
    /// its sinks and its cancellation. Input-capable methods add answers and state.
    pub(crate) fn context(&self) -> ContextBuilder {
        Context::builder(self.tenant.clone())
            .principal(self.principal.clone())
            .era(self.scope.era)
            .client_capabilities(self.scope.client_capabilities.clone())
            .notifier(self.notifier.clone())
            .cancel(self.cancel.clone())
    }
}

/// The answer to a request, before the transport frames it.
#[derive(Debug)]
pub enum Reply {
    /// A stamped result.
    Result(StampedResult),
    Error(McpError),
    /// `subscriptions/listen`: the transport streams.
    Listen(Listen),
    /// The client went away; nothing is sent.
    Cancelled,
}

/// What became of a request, as the span and the metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplyKind {
    Complete,
    InputRequired,
    Task,
    Error,
    Listen,
    Cancelled,
}

impl ReplyKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Task => "task",
            Self::Error => "error",
            Self::Listen => "listen",
            Self::Cancelled => "cancelled",
        }
    }
}

impl Reply {
    pub fn kind(&self) -> ReplyKind {
        match self {
            Reply::Result(r) => match r.result_type() {
                ResultType::InputRequired => ReplyKind::InputRequired,
                ResultType::Task => ReplyKind::Task,
                _ => ReplyKind::Complete,
            },
            Reply::Error(_) => ReplyKind::Error,
            Reply::Listen(_) => ReplyKind::Listen,
            Reply::Cancelled => ReplyKind::Cancelled,
        }
    }

    /// The worker's Dispatcher did not answer (it stopped): an internal error.
    pub fn unavailable() -> Reply {
        Reply::Error(McpError::internal("Internal error: dispatcher unavailable"))
    }
}

/// An accepted `subscriptions/listen`: what was honoured and the tenant's change feed.
#[derive(Debug)]
pub struct Listen {
    pub subscription_id: RequestId,
    pub events: broadcast::Receiver<ListChanged>,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: HashSet<String>,
}

impl Listen {
    pub(crate) fn new(
        subscription_id: RequestId,
        events: broadcast::Receiver<ListChanged>,
        tools: bool,
        prompts: bool,
        resources: bool,
        uris: HashSet<String>,
    ) -> Self {
        Self {
            subscription_id,
            events,
            tools,
            prompts,
            resources,
            uris,
        }
    }

    /// `notifications/subscriptions/acknowledged`, naming exactly what will be delivered.
    pub(crate) fn acknowledgement(&self) -> (&'static str, Value) {
        let mut honoured = Map::new();
        if self.tools {
            honoured.insert("toolsListChanged".into(), json!(true));
        }
        if self.prompts {
            honoured.insert("promptsListChanged".into(), json!(true));
        }
        if self.resources {
            honoured.insert("resourcesListChanged".into(), json!(true));
        }
        if !self.uris.is_empty() {
            let mut uris: Vec<_> = self.uris.iter().collect();
            uris.sort();
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        (
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": honoured, "_meta": self.meta() }),
        )
    }

    /// The notification for `event`, if the subscriber asked for it.
    pub(crate) fn render(&self, event: &ListChanged) -> Option<(&'static str, Value)> {
        let params = match event {
            ListChanged::Tools if self.tools => json!({ "_meta": self.meta() }),
            ListChanged::Prompts if self.prompts => json!({ "_meta": self.meta() }),
            ListChanged::Resources if self.resources => json!({ "_meta": self.meta() }),
            ListChanged::ResourceUpdated(uri) if self.uris.contains(uri) => {
                json!({ "uri": uri, "_meta": self.meta() })
            }
            _ => return None,
        };
        Some((event.notification_method(), params))
    }

    /// The result that closes the stream gracefully.
    pub(crate) fn closing_result(&self, server_info: &Value) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("_meta".into(), self.meta());
        let _ = stamp::stamp(
            "subscriptions/listen",
            &mut out,
            Era::Modern,
            &ClientCapabilities::default(),
            server_info,
        );
        out
    }

    fn meta(&self) -> Value {
        json!({ SUBSCRIPTION_ID: self.subscription_id })
    }
}

/// Dispatch one request.
#[derive(Message)]
#[rtype(result = "Reply")]
pub struct Dispatch(pub Call);

#[derive(Debug)]
pub struct Dispatcher {
    worker: WorkerState,
}

/// What a worker's requests are dispatched with: the runtime config and the worker's snapshot
/// of the key rings. Shared (on the worker's thread) by its Dispatcher actor, which keeps the
/// snapshot current as the KeyManager pushes changes, and its HTTP endpoint, which runs a
/// request on the request's own task when the snapshot has the tenant's ring
/// ([`WorkerState::run`]); a request whose ring must first be fetched goes through the actor.
#[derive(Debug, Clone)]
pub struct WorkerState(Rc<Shared>);

#[derive(Debug)]
struct Shared {
    config: Arc<RuntimeConfig>,
    keys: RefCell<Option<StateKeys>>,
}

/// What a sealing Dispatcher needs: the KeyManager (updates, rings of tenants created later)
/// and the rings current at start-up.
#[derive(Clone)]
pub struct StateKeys {
    pub key_manager: Addr<KeyManager>,
    pub rings: KeyRings,
}

impl std::fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeys")
            .field("tenants", &self.rings.len())
            .finish_non_exhaustive()
    }
}

impl Dispatcher {
    /// `keys` is required when `config.sealing` is set.
    pub fn new(config: Arc<RuntimeConfig>, keys: Option<StateKeys>) -> Self {
        Self::with_state(WorkerState::new(config, keys))
    }

    /// A Dispatcher over `worker`, whose key-ring snapshot it keeps current.
    pub fn with_state(worker: WorkerState) -> Self {
        Self { worker }
    }
}

impl WorkerState {
    /// `keys` is required when `config.sealing` is set.
    pub fn new(config: Arc<RuntimeConfig>, keys: Option<StateKeys>) -> Self {
        Self(Rc::new(Shared {
            config,
            keys: RefCell::new(keys),
        }))
    }

    /// The KeyManager, when this worker seals.
    fn key_manager(&self) -> Option<Addr<KeyManager>> {
        self.0.keys.borrow().as_ref().map(|k| k.key_manager.clone())
    }

    /// The protection `call` needs, or `None` when its tenant's ring must first be fetched.
    fn protection(&self, call: &Call) -> Option<Protection> {
        // Only the methods that may carry a state need the tenant's key ring.
        if !stamp::may_require_input(&call.request.method) {
            return Some(Protection::PassThrough);
        }
        let Some(policy) = &self.0.config.sealing else {
            return Some(Protection::PassThrough);
        };
        let keys = self.0.keys.borrow();
        let keys = keys.as_ref()?;
        let ring = keys.rings.get(call.tenant.slug())?.clone();
        Some(Protection::sealed(
            policy,
            &call.tenant,
            ring,
            keys.key_manager.clone(),
        ))
    }

    /// Runs `call` without an actor hop when this worker's snapshot has what it needs.
    ///
    /// Its first poll happens on the caller's task, so a handler that completes at once (most
    /// do) costs no task, mailbox or message. One that has to wait moves to a task of its own,
    /// so that it still sees its cancellation and cleans up if the caller goes away (dropping
    /// the caller would otherwise drop the handler mid-await).
    ///
    /// A reply ready at once is handed back after `after_the_ready_tasks` (one yield): the worker first
    /// reads and runs the other requests already waiting on it, and then writes their answers
    /// one after the other. Written each as soon as it was ready, every answer woke its
    /// client's reader on its own; measured under load on loopback (BENCHMARKS.md), those
    /// wake-ups cost more than the hop saved, and with the yield the worker does more requests
    /// per second than it did through the actor. Alone on a connection, the yield costs
    /// nothing.
    ///
    /// Gives the call back when its tenant's ring must first be fetched: the actor does that.
    pub fn run(&self, call: Call) -> Result<impl Future<Output = Reply>, Box<Call>> {
        let Some(protection) = self.protection(&call) else {
            return Err(Box::new(call));
        };
        let mut work = Box::pin(dispatch(call, protection, self.0.config.clone()));
        Ok(async move {
            let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
            match first {
                Poll::Ready(reply) => {
                    after_the_ready_tasks().await;
                    reply
                }
                Poll::Pending => actix_rt::spawn(work)
                    .await
                    .unwrap_or_else(|_| Reply::unavailable()),
            }
        })
    }
}

/// Returns once the worker has polled the tasks that were ready before this one: the task wakes
/// itself and goes to the back of the worker's queue. Unlike tokio's `yield_now`, which waits
/// for the next poll of the I/O driver (a syscall even when nothing else is waiting), it
/// returns at once on an idle worker, so a lone connection pays nothing for it.
async fn after_the_ready_tasks() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

impl Actor for Dispatcher {
    type Context = actix::Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(key_manager) = self.worker.key_manager() {
            key_manager.do_send(Subscribe(ctx.address().recipient()));
        }
    }
}

impl Handler<KeyRingsChanged> for Dispatcher {
    type Result = ();

    fn handle(&mut self, msg: KeyRingsChanged, _ctx: &mut Self::Context) {
        if let Some(keys) = &mut *self.worker.0.keys.borrow_mut() {
            keys.rings = msg.0;
        }
    }
}

impl Handler<Dispatch> for Dispatcher {
    type Result = ResponseFuture<Reply>;

    fn handle(&mut self, Dispatch(call): Dispatch, _ctx: &mut Self::Context) -> Self::Result {
        let config = self.worker.0.config.clone();
        if let Some(protection) = self.worker.protection(&call) {
            return Box::pin(dispatch(call, protection, config));
        }
        let key_manager = self.worker.key_manager();
        Box::pin(async move {
            let protection = match fetch_ring(key_manager, &call, &config).await {
                Some(p) => p,
                None if call.cancel.is_cancelled() => return Reply::Cancelled,
                None => {
                    return Reply::Error(McpError::internal(
                        "Internal error: no key ring for tenant",
                    ))
                }
            };
            dispatch(call, protection, config).await
        })
    }
}

/// The ring of a tenant this worker has not seen yet (created after start-up): the one time
/// a request waits on the KeyManager, bounded by the request timeout and by the client
/// staying. The tenant's own state lifetime becomes its rotation grace first.
async fn fetch_ring(
    key_manager: Option<Addr<KeyManager>>,
    call: &Call,
    config: &RuntimeConfig,
) -> Option<Protection> {
    let policy = config.sealing.as_ref()?;
    let key_manager = key_manager?;
    let tenant = &call.tenant;
    if let Some(ttl) = tenant.settings().state_ttl {
        key_manager.do_send(SetTenantGrace {
            tenant: tenant.slug().to_owned(),
            grace: ttl + policy.clock_skew,
        });
    }
    let ensure = tokio::time::timeout(
        config.request_timeout,
        key_manager.send(EnsureTenant {
            tenant: tenant.slug().to_owned(),
        }),
    );
    let ring = tokio::select! {
        _ = call.cancel.cancelled() => return None,
        ring = ensure => ring.ok()?.ok()?,
    };
    Some(Protection::sealed(policy, tenant, ring, key_manager))
}

/// Runs one request under its span, its timeout and its cancellation token.
///
/// A plain function returning the instrumented future, not an `async fn`: an `async fn`
/// would keep its arguments in its own state beside the copy the future moves in, and a
/// legacy flow holds this future for as long as its user takes to answer.
pub(crate) fn dispatch(
    mut call: Call,
    protection: Protection,
    config: Arc<RuntimeConfig>,
) -> impl Future<Output = Reply> {
    let span = tracing::info_span!(
        "mcp",
        tenant = call.tenant.slug(),
        method = call.request.method.as_str(),
        target = Empty,
        round = Empty,
        outcome = Empty,
        code = Empty
    );
    let cancel = call.cancel.clone();
    // A shim flow waits for people: its handler runs and its legs have their own bounds.
    let timeout = if call.scope.era == Era::Legacy && stamp::may_require_input(&call.request.method)
    {
        Duration::MAX
    } else {
        config.request_timeout
    };
    async move {
        let work = AssertUnwindSafe(route(&mut call, &protection, &config)).catch_unwind();
        let mut work = std::pin::pin!(tokio::time::timeout(timeout, work));
        let reply = tokio::select! {
            biased;
            _ = cancel.cancelled() => {
                // The client is gone. The handler may still be cleaning up after
                // `ctx.cancelled()`: give it a short grace, discard what it returns, drop it.
                let _ = tokio::time::timeout(config.cancel_grace, &mut work).await;
                Reply::Cancelled
            }
            r = &mut work => match r {
                Ok(Ok(reply)) => reply,
                Ok(Err(panic)) => {
                    let what = panic.downcast_ref::<&str>().map(|s| (*s).to_owned()).or_else(|| panic.downcast_ref::<String>().cloned());
                    tracing::error!(panic = what.as_deref().unwrap_or("<non-string panic>"), "handler panicked");
                    Reply::Error(McpError::internal("Internal error"))
                }
                Err(_) => {
                    tracing::warn!(timeout_ms = config.request_timeout.as_millis() as u64, "request timed out");
                    Reply::Error(McpError::internal("Internal error: request timed out"))
                }
            },
        };
        let span = tracing::Span::current();
        span.record("outcome", reply.kind().as_str());
        if let Reply::Error(e) = &reply {
            span.record("code", e.code.code());
        }
        tracing::info!("request done");
        reply
    }
    .instrument(span)
}

/// Takes the call mutably so an input-required method can move its answers out of the
/// request instead of copying them, and a legacy shim flow its params.
async fn route(call: &mut Call, protection: &Protection, config: &RuntimeConfig) -> Reply {
    let method = call.request.method.as_str();
    let legacy = call.scope.era == Era::Legacy;
    let result = match method {
        "server/discover" | "subscriptions/listen" if legacy => {
            Err(McpError::method_not_found(method))
        }
        m if legacy && stamp::may_require_input(m) => {
            let params = call.request.params.take();
            match &call.shim {
                Some(s) => shim::run(call, params, s).await,
                // Only a session gives a legacy request a way to its client.
                None => Err(shim::refused(shim::NoRelay::NoStream)),
            }
        }
        "server/discover" => Ok(methods::discover(call)),
        "tools/list" | "prompts/list" | "resources/list" | "resources/templates/list" => {
            methods::list(method, call)
        }
        "completion/complete" => methods::complete(call),
        "subscriptions/listen" => {
            return methods::listen(call).map_or_else(Reply::Error, Reply::Listen)
        }
        m if stamp::may_require_input(m) => {
            return round(call, protection, config)
                .await
                .map_or_else(Reply::Error, Reply::Result)
        }
        other => custom(call, other).await,
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
    let answers = call
        .request
        .params
        .as_mut()
        .and_then(|p| p.remove("inputResponses"));
    match mrtr::run(call, answers, protection, config.max_rounds).await? {
        Produced::Complete(Completed::Tool(r)) => Ok(StampedResult::Tool(StampedToolResult::new(
            r,
            call.tenant.shared_server_info(),
        ))),
        Produced::Complete(Completed::Object(mut r)) => {
            if call.request.method == "resources/read" {
                methods::read_cache_hints(&mut r);
            }
            stamped(call, r)
        }
        Produced::InputRequired(r) => Ok(StampedResult::InputRequired(r)),
    }
}

/// A result built as a JSON object, stamped for the call's era.
fn stamped(call: &Call, mut r: Map<String, Value>) -> Result<StampedResult, McpError> {
    stamp::stamp(
        &call.request.method,
        &mut r,
        call.scope.era,
        &call.scope.client_capabilities,
        call.tenant.server_info(),
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
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;
    use crate::handler::{Catalog, InputRequired, MethodHandler, MethodOutcome};

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

    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::ErrorKind::Other)?
                .extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[actix_rt::test]
    async fn input_required_from_a_custom_method_is_an_internal_error_and_a_log_line() {
        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        let _default = tracing::subscriber::set_default(subscriber);

        let catalog = Catalog::builder().method(Arc::new(Asks)).build();
        let tenant = Arc::new(Tenant::new("t", catalog));
        let call = Call {
            catalog: tenant.catalog(),
            tenant,
            principal: Principal::anonymous(),
            request: Request {
                id: RequestId::Number(1.into()),
                method: "acme/asks".into(),
                params: None,
            },
            scope: Scope {
                era: Era::Modern,
                client_capabilities: ClientCapabilities::default(),
            },
            notifier: None,
            cancel: CancellationToken::new(),
            shim: None,
        };
        let reply = dispatch(
            call,
            Protection::PassThrough,
            Arc::new(RuntimeConfig::default()),
        )
        .await;

        let Reply::Error(error) = reply else {
            panic!("expected an error, got {reply:?}")
        };
        assert_eq!(error.code.code(), -32603);
        let logs = String::from_utf8(logs.0.lock().expect("logs").clone()).expect("UTF-8");
        assert!(
            logs.contains("ERROR") && logs.contains("input-required") && logs.contains("acme/asks"),
            "{logs}"
        );
    }
}
