//! The Session actor: one per legacy session. It holds what `initialize` negotiated, the log
//! level and resource subscriptions the client set, the session's notification streams (the
//! GET streams), and the shim flows of its requests, each cancellable by
//! `notifications/cancelled`.
//!
//! It lives on the worker thread that handled `initialize`; requests of the session that
//! land on other workers reach it through its mailbox. Handler runs are futures of this
//! actor, so the mailbox stays free while a flow waits for its client.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use actix::prelude::*;
use futures_util::stream;
use serde_json::{json, Map, Value};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::{mpsc, oneshot};

use super::bridge::ForgetSession;
use super::handshake::Initialize;
use super::relay::SessionRelay;
#[cfg(test)]
use super::SessionOn;
use super::{Legacy, SessionId};
use crate::budget::{figures, Charge};
use crate::dispatch::{dispatch, Call, Caller, NoRelay, Protection, Relay, Reply, Shim};
use crate::handler::Cancellation;
use crate::handler::{Catalog, ListChanged, Notifier, OutgoingMessage, Principal, Tenant};
use crate::protocol::result::StampedResult;
use crate::protocol::{
    ClientCapabilities, ErrorCode, LogLevel, McpError, Method, Notification, Request, RequestId,
};

/// Messages one GET stream may have queued; beyond it, notifications for it are dropped.
const STREAM_CAPACITY: usize = 64;

/// GET streams one session keeps open.
const MAX_STREAMS: usize = 4;

/// Resources one session follows.
const MAX_SUBSCRIPTIONS: usize = 256;

/// Level of the log notifications a session gets before the client sets one.
const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

/// The actor of one legacy session: started by [`Legacy::begin`], reached through its address
/// by the session's later requests, notifications and GET streams.
pub struct Session {
    id: SessionId,
    /// The handle, not a view: every request reads the tenant as it is then.
    tenant: Arc<Tenant>,
    /// The caller as its latest request authenticated it (its grants may have changed since
    /// `initialize`; its id cannot).
    principal: Principal,
    client_capabilities: ClientCapabilities,
    /// What the session keeps, charged to its caller: itself, its capabilities and its
    /// subscriptions. Given back when the actor is dropped.
    charge: Charge,
    log_level: LogLevel,
    subscriptions: HashSet<String>,
    /// Requests in flight, by id: what `notifications/cancelled` can stop.
    flows: HashMap<RequestId, Cancellation>,
    streams: Vec<mpsc::Sender<Box<OutgoingMessage>>>,
    following_tenant: bool,
    /// Whether idling ends the session (not on stdio, where the process is the session).
    expires: bool,
    /// stdio: the process's output, the session's one stream for as long as it lives.
    output: Option<mpsc::Sender<Box<OutgoingMessage>>>,
    /// Whether the client sent a request (not a notification, not a GET stream) in the
    /// session after `initialize`.
    used: bool,
    /// Ended by the client: stops once its cancelled flows have answered.
    ending: bool,
    last_active: Instant,
    next_leg: Arc<AtomicU64>,
    legacy: Legacy,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("tenant", &self.tenant.slug())
            .field("flows", &self.flows.len())
            .field("streams", &self.streams.len())
            .finish_non_exhaustive()
    }
}

impl Session {
    /// A session on Streamable HTTP, for what `init` negotiated; it expires when idle.
    pub(crate) fn new(
        id: SessionId,
        tenant: Arc<Tenant>,
        principal: Principal,
        init: Initialize,
        legacy: Legacy,
        charge: Charge,
    ) -> Self {
        Self {
            id,
            tenant,
            principal,
            client_capabilities: init.client_capabilities,
            charge,
            log_level: DEFAULT_LOG_LEVEL,
            subscriptions: HashSet::new(),
            flows: HashMap::new(),
            streams: Vec::new(),
            following_tenant: false,
            expires: true,
            output: None,
            used: false,
            ending: false,
            last_active: Instant::now(),
            next_leg: Arc::new(AtomicU64::new(1)),
            legacy,
        }
    }

    /// A session on stdio: it lives as long as the process rather than expiring, and its
    /// notifications (list changes, updates of subscribed resources) go to `output` from the
    /// start, since stdio has no GET stream to open.
    pub(crate) fn on_stdio(mut self, output: mpsc::Sender<Box<OutgoingMessage>>) -> Self {
        self.expires = false;
        self.output = Some(output);
        self
    }

    fn idle(&self) -> bool {
        let config = self.legacy.config();
        let limit = if self.used {
            config.idle_timeout
        } else {
            config.idle_timeout.min(config.unused_timeout)
        };
        self.expires
            && self.flows.is_empty()
            && self.streams.iter().all(mpsc::Sender::is_closed)
            && self.last_active.elapsed() >= limit
    }

    /// Lets go of the session's id and its waiting legs, and cancels its flows. Safe to
    /// repeat: ending a session does it at once, stopping the actor again.
    fn release(&mut self) {
        if let Some(holder) = self.legacy.sessions.remove(&self.id) {
            self.legacy.forget_in_fleet(&self.id, holder);
        }
        for flow in self.flows.values() {
            flow.cancel();
        }
        self.legacy.bridge.do_send(ForgetSession(self.id.clone()));
    }

    /// The client sent a request in the session: it is in use.
    fn touch(&mut self) {
        self.used = true;
        self.last_active = Instant::now();
    }

    /// Sends a session notification on one open stream (never on more than one): stdio's
    /// output, or a GET stream.
    fn notify(&mut self, method: &'static str, params: Value) {
        self.streams.retain(|s| !s.is_closed());
        let message = OutgoingMessage {
            id: None,
            method,
            params,
        };
        if let Some(stream) = self.output.as_ref().or(self.streams.first()) {
            if stream.try_send(Box::new(message)).is_err() {
                tracing::debug!("session notification dropped: its stream is full");
            }
        }
    }

    /// The shim of one request: the session's relay on that request's own stream, unless
    /// the tenant turned the shim off or the request has no stream.
    fn shim(&self, caller: &Caller, notifier: Option<&Notifier>) -> Shim {
        let relay = match notifier {
            _ if !caller.view.settings().legacy_shim => Err(NoRelay::Disabled),
            None => Err(NoRelay::NoStream),
            Some(stream) => Ok(Arc::new(SessionRelay {
                session: self.id.clone(),
                bridge: self.legacy.bridge.clone(),
                stream: stream.clone(),
                leg_timeout: self.legacy.config().leg_timeout,
                next_leg: self.next_leg.clone(),
                account: self.charge.account().clone(),
                answers: Mutex::default(),
            }) as Arc<dyn Relay>),
        };
        Shim {
            relay,
            max_rounds: self.legacy.runtime.max_rounds,
            run_timeout: self.legacy.runtime.request_timeout,
        }
    }

    /// Follows a resource of the caller's catalog (an unknown URI is refused, as
    /// `resources/read` would refuse it), up to `MAX_SUBSCRIPTIONS` of them, each charged
    /// to the caller ([`figures::SUBSCRIPTION`] and its URI).
    fn subscribe(&mut self, catalog: &Catalog, uri: &str) -> Result<Map<String, Value>, McpError> {
        if catalog.resource(uri).is_none() && catalog.template_for(uri).is_none() {
            return Err(McpError::resource_not_found(uri));
        }
        if !self.subscriptions.contains(uri) && self.subscriptions.len() >= MAX_SUBSCRIPTIONS {
            return Err(McpError::invalid_params(format!(
                "A session follows at most {MAX_SUBSCRIPTIONS} resources"
            )));
        }
        if !self.subscriptions.contains(uri) {
            self.charge.grow(subscription_bytes(uri))?;
            self.subscriptions.insert(uri.to_owned());
        }
        Ok(Map::new())
    }

    /// The session-level methods, answered from the session's own state.
    fn session_method(
        &mut self,
        caller: &Caller,
        request: &Request,
    ) -> Option<Result<Map<String, Value>, McpError>> {
        let param = |k: &str| request.params.as_ref().and_then(|p| p.get(k));
        Some(match &request.method {
            Method::Ping => Ok(Map::new()),
            Method::LoggingSetLevel => match param("level")
                .and_then(Value::as_str)
                .and_then(LogLevel::parse)
            {
                Some(level) => {
                    self.log_level = level;
                    Ok(Map::new())
                }
                None => Err(McpError::invalid_params("params.level must be a log level")),
            },
            m @ (Method::ResourcesSubscribe | Method::ResourcesUnsubscribe) => {
                if !caller.catalog.has_resources() {
                    return Some(Err(McpError::method_not_found(m.as_str())));
                }
                match param("uri").and_then(Value::as_str) {
                    Some(uri) if *m == Method::ResourcesSubscribe => {
                        self.subscribe(&caller.catalog, uri)
                    }
                    Some(uri) => {
                        if self.subscriptions.remove(uri) {
                            self.charge.shrink(subscription_bytes(uri));
                        }
                        Ok(Map::new())
                    }
                    None => Err(McpError::invalid_params("Missing required params.uri")),
                }
            }
            _ => return None,
        })
    }
}

/// What following `uri` is charged.
fn subscription_bytes(uri: &str) -> u64 {
    figures::SUBSCRIPTION + uri.len() as u64
}

impl Actor for Session {
    type Context = Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if self.output.is_some() {
            self.follow_tenant(ctx);
        }
        let config = self.legacy.config();
        let idle = config.idle_timeout.min(config.unused_timeout);
        let period = (idle / 4).clamp(Duration::from_millis(50), Duration::from_secs(30));
        ctx.run_interval(period, |act, ctx| {
            if act.idle() {
                tracing::info!(
                    tenant = act.tenant.slug(),
                    "legacy session expired after idling"
                );
                ctx.stop();
            }
        });
    }

    fn stopped(&mut self, _: &mut Self::Context) {
        self.release();
    }
}

/// One request of the session, made by [`deliver`]. The transport made `notifier` the
/// request's own stream when the client can read one; the session sets its log level.
///
/// The reply comes back on a channel of its own rather than as the message's result: the
/// future of an actix `send` holds the whole message for as long as the reply takes, and a
/// shim flow's reply waits for a person, so that future was the largest thing a held flow
/// kept (BENCHMARKS.md, held flows).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct Handle {
    request: Request,
    /// Who sent it, as this request authenticated: the session's own caller (the transport
    /// checked), with its grants as they are now.
    principal: Principal,
    notifier: Option<Notifier>,
    cancel: Cancellation,
    reply: oneshot::Sender<Reply>,
    /// The span current where the request was handed over (a transport's span of the
    /// caller's trace, when it named one): the request's own span is made inside it.
    parent: tracing::Span,
}

/// Hands a request to `session` and returns its reply to come, or `MailboxError` when the
/// session stopped first. The request goes in at once when the session's mailbox has room; a
/// full mailbox makes it wait its turn, as `send` would. The request runs under the span
/// current here, though in the session's actor.
pub(crate) fn deliver(
    session: &Addr<Session>,
    request: Request,
    principal: Principal,
    notifier: Option<Notifier>,
    cancel: Cancellation,
) -> impl Future<Output = Result<Reply, MailboxError>> {
    let (reply, answer) = oneshot::channel();
    let handle = Handle {
        request,
        principal,
        notifier,
        cancel,
        reply,
        parent: tracing::Span::current(),
    };
    let waiting = match session.try_send(handle) {
        Ok(()) => None,
        Err(SendError::Full(handle)) => Some(Box::pin(session.send(handle))),
        // The handle is dropped with its reply channel: the answer reports the session gone.
        Err(SendError::Closed(_)) => None,
    };
    async move {
        if let Some(waiting) = waiting {
            waiting.await?;
        }
        answer.await.map_err(|_| MailboxError::Closed)
    }
}

impl Handler<Handle> for Session {
    type Result = ();

    fn handle(&mut self, msg: Handle, ctx: &mut Self::Context) {
        let Handle {
            request,
            principal,
            notifier,
            cancel,
            reply,
            parent,
        } = msg;
        // Nobody waits any more (the client left while the request was queued): as actix
        // skips a `send` whose caller is gone, the request is not run, and the session is not
        // kept alive by it.
        if reply.is_closed() {
            return;
        }
        let work = parent.in_scope(|| self.start(request, principal, notifier, cancel));
        ctx.spawn(work.map(move |r, _, _| {
            // The transport may have stopped waiting (its client left): nothing to tell.
            let _ = reply.send(r);
        }));
    }
}

impl Session {
    /// The work of one request: a session method answered at once, a refusal, or a flow.
    fn start(
        &mut self,
        request: Request,
        principal: Principal,
        notifier: Option<Notifier>,
        cancel: Cancellation,
    ) -> ResponseActFuture<Self, Reply> {
        self.touch();
        if self.ending {
            let error = McpError::unknown_session();
            return Box::pin(fut::ready(Reply::Error(error)));
        }
        self.principal = principal.clone();
        let caller = Caller::new(self.tenant.clone(), principal)
            .calling_from(self.charge.account().client());
        if let Some(result) = self.session_method(&caller, &request) {
            let reply =
                result.map_or_else(Reply::Error, |r| Reply::Result(StampedResult::Object(r)));
            return Box::pin(fut::ready(reply));
        }
        if self.flows.contains_key(&request.id) {
            let error = McpError::invalid_request(format!(
                "Request id {} is already in use in this session",
                request.id
            ));
            return Box::pin(fut::ready(Reply::Error(error)));
        }
        let most = self.legacy.config().max_requests_per_session;
        if self.flows.len() >= most {
            tracing::warn!(
                tenant = self.tenant.slug(),
                most,
                "legacy session request limit reached"
            );
            let error = McpError::new(
                ErrorCode::TooManyRequests,
                format!("This session already runs {most} requests, the most it may at once"),
            );
            return Box::pin(fut::ready(Reply::Error(error)));
        }
        // The flow keeps its params (a held shim flow for as long as its client takes to
        // answer): charged to the caller until it ends (`figures::kept_request`).
        let params = request.params.as_ref().map_or(0, figures::json_size);
        let charge = match self.legacy.ledger.charge(
            self.charge.account(),
            figures::FLOW + figures::kept_request(params),
        ) {
            Ok(charge) => charge,
            Err(refusal) => {
                tracing::warn!(tenant = self.tenant.slug(), %refusal, "legacy request refused");
                return Box::pin(fut::ready(Reply::Error(refusal.to_error())));
            }
        };
        let notifier = notifier.map(|n| n.with_log_level(Some(self.log_level)));
        let id = request.id.clone();
        self.flows.insert(id.clone(), cancel.clone());
        let shim = self.shim(&caller, notifier.as_ref());
        let call = Call::legacy(
            caller,
            request,
            self.client_capabilities.clone(),
            notifier,
            cancel,
            shim,
        );
        let work = dispatch(call, Protection::PassThrough, self.legacy.runtime.clone());
        Box::pin(work.into_actor(self).map(move |reply, act, ctx| {
            drop(charge);
            act.flows.remove(&id);
            act.last_active = Instant::now();
            if act.ending && act.flows.is_empty() {
                ctx.stop();
            }
            reply
        }))
    }
}

/// A notification the client sent in this session.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct Notify(pub(crate) Notification);

impl Handler<Notify> for Session {
    type Result = ();

    fn handle(&mut self, Notify(n): Notify, _: &mut Self::Context) {
        // Activity, but not use: a lone `notifications/initialized` must not keep an unused
        // session from its shorter timeout.
        self.last_active = Instant::now();
        let Some(id) = n.cancelled_request() else {
            return;
        };
        if let Some(flow) = self.flows.get(&id) {
            tracing::info!(request = %id, "legacy request cancelled by the client");
            flow.cancel();
        }
    }
}

/// Opens a GET stream: notifications not tied to a request (list changes, updates of
/// subscribed resources). The stream's charge ([`figures::SESSION_STREAM`]) goes with the
/// receiver: keep it in the stream's body.
#[derive(Debug, Message)]
#[rtype(result = "Result<(mpsc::Receiver<Box<OutgoingMessage>>, Charge), McpError>")]
pub(crate) struct OpenStream;

impl Handler<OpenStream> for Session {
    type Result = MessageResult<OpenStream>;

    fn handle(&mut self, _: OpenStream, ctx: &mut Self::Context) -> Self::Result {
        // Activity, but not use: an open stream keeps the session anyway, and one opened and
        // closed must not keep an unused session from its shorter timeout.
        self.last_active = Instant::now();
        let charge = match self
            .legacy
            .ledger
            .charge(self.charge.account(), figures::SESSION_STREAM)
        {
            Ok(charge) => charge,
            Err(refusal) => return MessageResult(Err(refusal.to_error())),
        };
        self.streams.retain(|s| !s.is_closed());
        if self.streams.len() >= MAX_STREAMS {
            // The oldest goes: a client that reconnects may not have seen its old stream end.
            self.streams.remove(0);
        }
        let (tx, rx) = mpsc::channel(STREAM_CAPACITY);
        self.streams.push(tx);
        self.follow_tenant(ctx);
        MessageResult(Ok((rx, charge)))
    }
}

impl Session {
    /// Follows the tenant's change feed, once: from the first stream the session has to
    /// deliver changes on.
    fn follow_tenant(&mut self, ctx: &mut Context<Self>) {
        if self.following_tenant {
            return;
        }
        self.following_tenant = true;
        let events = self.tenant.subscribe();
        ctx.add_stream(stream::unfold(events, |mut events| async move {
            match events.recv().await {
                Ok(event) => Some((Feed::Changed(event), events)),
                Err(RecvError::Lagged(_)) => Some((Feed::Lagged, events)),
                Err(RecvError::Closed) => None,
            }
        }));
    }
}

/// What the tenant's change feed delivers to a session.
enum Feed {
    Changed(ListChanged),
    /// Changes were missed.
    Lagged,
}

impl StreamHandler<Feed> for Session {
    fn handle(&mut self, feed: Feed, _: &mut Self::Context) {
        let event = match feed {
            Feed::Changed(event) => event,
            // Missed changes are unknown: announce every list the catalog has (missed
            // resource updates cannot be told).
            Feed::Lagged => {
                let catalog = self.tenant.catalog_for(&self.principal);
                let has = [
                    catalog.has_tools(),
                    catalog.has_prompts(),
                    catalog.has_resources(),
                ];
                for (event, has) in ListChanged::LISTS.iter().zip(has) {
                    if has {
                        self.notify(event.notification_method(), json!({}));
                    }
                }
                return;
            }
        };
        let params = match &event {
            ListChanged::ResourceUpdated(uri) if !self.subscriptions.contains(uri) => return,
            ListChanged::ResourceUpdated(uri) => json!({ "uri": uri }),
            _ => json!({}),
        };
        self.notify(event.notification_method(), params);
    }

    /// The tenant's feed ending must not end the session.
    fn finished(&mut self, _: &mut Self::Context) {}
}

/// Ends the session (DELETE, or shutdown): its flows are cancelled and its id forgotten.
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) struct End {
    /// For the log: who ended it.
    pub(crate) why: &'static str,
}

impl Handler<End> for Session {
    type Result = ();

    fn handle(&mut self, End { why }: End, ctx: &mut Self::Context) {
        tracing::info!(tenant = self.tenant.slug(), why, "legacy session ended");
        // Its flows end as cancelled (their streams close without a response); the session
        // stops once they have, so none is cut off mid-answer.
        self.ending = true;
        self.release();
        if self.flows.is_empty() {
            ctx.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::*;
    use crate::dispatch::RuntimeConfig;
    use crate::handler::{fn_tool, Catalog, ToolDescriptor};
    use crate::protocol::result::CallToolResult;
    use crate::protocol::{ClientCapabilities, ProtocolVersion, RequestId};

    fn request(id: u32, method: &str, params: Option<Value>) -> Request {
        Request {
            id: RequestId::Number(id.into()),
            method: method.into(),
            params: params.and_then(|p| p.as_object().cloned()),
            meta_capabilities: None,
            meta_version: None,
        }
    }

    fn session(tenant: &Arc<Tenant>) -> Addr<Session> {
        let legacy = Legacy::start(Arc::new(RuntimeConfig::default()));
        let init = Initialize {
            version: ProtocolVersion::V2025_11_25,
            client_capabilities: ClientCapabilities::default(),
            client_info: None,
        };
        let account = crate::budget::Account::new("t", &Principal::anonymous(), None);
        legacy
            .begin(
                init,
                tenant,
                &Principal::anonymous(),
                &account,
                SessionOn::Http,
            )
            .expect("a session")
            .addr
    }

    #[actix_rt::test]
    async fn requests_beyond_a_full_mailbox_wait_their_turn_and_are_all_answered() {
        let tenant = Arc::new(Tenant::new("t", Catalog::builder().build()));
        let session = session(&tenant);
        // Delivered before the session runs at all: more than its mailbox holds.
        let replies: Vec<_> = (0..64)
            .map(|i| {
                deliver(
                    &session,
                    request(i, "ping", None),
                    Principal::anonymous(),
                    None,
                    Cancellation::new(),
                )
            })
            .collect();
        for reply in replies {
            let reply = reply.await.expect("answered");
            assert!(matches!(reply, Reply::Result(_)), "{reply:?}");
        }
    }

    #[actix_rt::test]
    async fn a_request_abandoned_before_its_session_reads_it_is_not_run() {
        let ran = Arc::new(AtomicBool::new(false));
        let flag = ran.clone();
        let mark = fn_tool(
            ToolDescriptor::no_args("mark", "Records that it ran."),
            move |_ctx, _args| {
                let flag = flag.clone();
                async move {
                    flag.store(true, Ordering::SeqCst);
                    Ok(CallToolResult::text("ran").into())
                }
            },
        );
        let tenant = Arc::new(Tenant::new("t", Catalog::builder().tool(mark).build()));
        let session = session(&tenant);

        let call = request(1, "tools/call", Some(json!({"name": "mark"})));
        // Queued, then abandoned before the session reads it (its client left).
        drop(deliver(
            &session,
            call,
            Principal::anonymous(),
            None,
            Cancellation::new(),
        ));
        let ping = deliver(
            &session,
            request(2, "ping", None),
            Principal::anonymous(),
            None,
            Cancellation::new(),
        );
        let reply = ping.await.expect("the session answers the next request");
        assert!(matches!(reply, Reply::Result(_)), "{reply:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;

        assert!(!ran.load(Ordering::SeqCst), "the abandoned request ran");
    }
}
