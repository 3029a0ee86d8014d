//! stdio: one tenant, one JSON-RPC message per line on stdin and stdout, both eras.
//!
//! The era is decided per message, as on HTTP: a request with the modern `_meta` envelope is
//! served statelessly (clients probe with `server/discover`); `initialize` begins the
//! process's one legacy session, and requests without the envelope then belong to it. Other
//! requests get a JSON-RPC error naming the supported versions.
//!
//! Each request runs as its own task, with the process's one `WorkerState` (whose
//! Dispatcher actor keeps the key rings current). What it sends before its response
//! (progress, logs, and on the legacy session the shim's server-to-client requests) goes out
//! only while it is pending: its channel is dropped with the response. The legacy session's
//! own notifications (list changes, updates of subscribed resources) go out whenever they
//! happen. One writer task owns stdout, so lines never interleave. Logs go to stderr only.
//!
//! A request the client cancels (`notifications/cancelled`) gets no response, a
//! `subscriptions/listen` included; at the end of input a listen stream closes with its
//! closing result.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::io::BufRead;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use serde_json::{json, Value};
use tokio::io::{AsyncWrite, AsyncWriteExt};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::CancellationToken;

use crate::budget::Account;
use crate::dispatch::envelope::check_modern;
use crate::dispatch::{
    Call, Caller, Dispatcher, Listen, Reply, RuntimeConfig, StateKeys, WorkerState,
};
use crate::handler::{Notifier, OutgoingMessage, Principal, Tenant};
use crate::legacy::bridge::Answer;
use crate::legacy::session::{deliver, End, Notify};
use crate::legacy::{handshake, Legacy, Session, SessionId, SessionOn};
use crate::protocol::jsonrpc::{error_bytes, notification_bytes, result_bytes, Malformed};
use crate::protocol::meta::{has_modern_envelope, legacy_progress_token};
use crate::protocol::{Incoming, McpError, ProtocolVersion, Request, RequestId};

/// Lines read ahead of the server: beyond it the reader waits (backpressure).
const INPUT_BUFFER: usize = 256;
/// Messages queued for stdout.
const OUTPUT_BUFFER: usize = 1024;
/// How long requests still running at end of input may take to finish.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(10);
/// Session notifications queued for stdout; beyond it they are dropped, as on a GET stream.
const SESSION_BUFFER: usize = 64;

/// Reads stdin on a plain thread (a tokio stdin read cannot be cancelled, and would hold the
/// process open at exit) and hands each line over as bytes, waiting while the server is
/// behind. A line that is not UTF-8 is still a line: parsing answers it with -32700.
pub fn stdin_lines() -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(INPUT_BUFFER);
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        loop {
            let mut line = Vec::new();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) => break,
                Ok(_) => {
                    if line.last() == Some(&b'\n') {
                        line.pop();
                    }
                    if tx.blocking_send(line).is_err() {
                        break;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    tracing::error!(error = %e, "reading stdin failed");
                    break;
                }
            }
        }
    });
    rx
}

/// What the stdio server needs.
#[derive(Debug)]
pub struct Stdio {
    /// The one tenant the process serves.
    pub tenant: Arc<Tenant>,
    /// Who the local client is: stdio has no credentials, the process owner is the caller.
    pub principal: Principal,
    /// Timeouts, rounds, sealing and the legacy session's limits.
    pub runtime: Arc<RuntimeConfig>,
    /// The KeyManager and rings; needed when `runtime.sealing` is set.
    pub keys: Option<StateKeys>,
}

/// Serves `lines` until they end and every request has answered (or `DRAIN_TIMEOUT`
/// passed). Must run inside an actix System, on a `LocalSet`.
pub async fn serve<W>(stdio: Stdio, mut lines: mpsc::Receiver<Vec<u8>>, output: W)
where
    W: AsyncWrite + Unpin + 'static,
{
    let (out, out_rx) = mpsc::channel::<Vec<u8>>(OUTPUT_BUFFER);
    let writer = actix_rt::spawn(write_lines(out_rx, output));
    let (dispatcher, worker) = Dispatcher::start_with(stdio.runtime.clone(), stdio.keys.clone());
    let server = Server {
        _dispatcher: dispatcher,
        worker,
        legacy: Legacy::start(stdio.runtime.clone()),
        session: None,
        in_flight: Rc::new(RefCell::new(HashMap::new())),
        listening: Rc::new(RefCell::new(HashMap::new())),
        out,
        stdio,
    };
    let mut server = server;
    while let Some(line) = lines.recv().await {
        if !line.trim_ascii().is_empty() {
            server.handle(&line).await;
        }
    }
    server.drain().await;
    drop(server);
    let _ = writer.await;
}

async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Vec<u8>>, mut output: W) {
    while let Some(mut line) = rx.recv().await {
        line.push(b'\n');
        if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
            tracing::warn!("stdout closed");
            break;
        }
    }
}

type InFlight = Rc<RefCell<HashMap<RequestId, CancellationToken>>>;

struct Server {
    stdio: Stdio,
    /// Keeps the worker's view current for as long as the server runs.
    _dispatcher: Addr<Dispatcher>,
    worker: WorkerState,
    legacy: Legacy,
    session: Option<(SessionId, Addr<Session>)>,
    /// What `notifications/cancelled` stops: each request's cancellation.
    in_flight: InFlight,
    /// What the end of input closes: each open `subscriptions/listen`.
    listening: InFlight,
    out: mpsc::Sender<Vec<u8>>,
}

impl Server {
    async fn write(&self, bytes: Vec<u8>) {
        let _ = self.out.send(bytes).await;
    }

    async fn handle(&mut self, line: &[u8]) {
        let incoming = match Incoming::parse(line) {
            Ok(incoming) => incoming,
            Err(Malformed { id, error }) => {
                return self.write(error_bytes(id.as_ref(), &error)).await;
            }
        };
        match incoming {
            Incoming::Request(request) => self.request(request).await,
            Incoming::Notification(n) => {
                if let Some(id) = n.cancelled_request() {
                    if let Some(token) = self.in_flight.borrow().get(&id) {
                        token.cancel();
                    }
                }
                if let Some((_, session)) = &self.session {
                    session.do_send(Notify(n));
                }
            }
            Incoming::Response(response) => {
                let Some((sid, _)) = &self.session else {
                    tracing::warn!(id = %response.id, "a response arrived, but no request of ours is pending");
                    return;
                };
                let answer = Answer {
                    session: sid.clone(),
                    response,
                };
                match self.legacy.bridge.send(answer).await {
                    Ok(Ok(())) => {}
                    Ok(Err(unanswered)) => tracing::warn!(%unanswered, "refused an answer"),
                    Err(_) => tracing::error!("legacy bridge unavailable"),
                }
            }
        }
    }

    async fn request(&mut self, request: Request) {
        let id = request.id.clone();
        if self.in_flight.borrow().contains_key(&id) {
            let e = McpError::invalid_request(format!("Request id {id} is already in use"));
            return self.write(error_bytes(Some(&id), &e)).await;
        }
        let modern = has_modern_envelope(request.params.as_ref());
        if request.method == "initialize" && !modern {
            return self.initialize(request).await;
        }
        if !modern {
            if let Some((_, session)) = &self.session {
                let (notifier, rx) =
                    Notifier::channel(legacy_progress_token(request.params.as_ref()), None);
                let cancel = CancellationToken::new();
                let reply = deliver(
                    session,
                    request,
                    self.stdio.principal.clone(),
                    Some(notifier),
                    cancel.clone(),
                );
                let reply = async move { reply.await.unwrap_or_else(|_| Reply::unavailable()) };
                return self.spawn(id, cancel, reply, Some(rx));
            }
        }
        // Modern, or neither: the envelope checks say what is wrong with the latter.
        let envelope = match check_modern(&request, None) {
            Ok(envelope) => envelope,
            Err(mut e) => {
                if !modern && e.data.is_none() {
                    e = e.with_data(json!({ "supported": ProtocolVersion::MODERN_STRS }));
                }
                return self.write(error_bytes(Some(&id), &e)).await;
            }
        };
        let (notifier, rx) = envelope.notifier().unzip();
        let cancel = CancellationToken::new();
        let caller = Caller::new(self.stdio.tenant.clone(), self.stdio.principal.clone());
        let call = Call::modern(caller, request, envelope, notifier, cancel.clone());
        let reply = self.worker.run(call);
        self.spawn(id, cancel, reply, rx);
    }

    async fn initialize(&mut self, request: Request) {
        let id = request.id.clone();
        if self.session.is_some() {
            let e = McpError::invalid_request("The session is already initialized");
            return self.write(error_bytes(Some(&id), &e)).await;
        }
        let init = match handshake::parse(&request) {
            Ok(init) => init,
            Err(e) => return self.write(error_bytes(Some(&id), &e)).await,
        };
        let (notifications, mut queued) = mpsc::channel(SESSION_BUFFER);
        match self.legacy.begin(
            init,
            &self.stdio.tenant,
            &self.stdio.principal,
            &Account::of(&self.stdio.tenant, self.stdio.principal.id_arc(), None),
            SessionOn::Stdio(notifications),
        ) {
            Ok(begun) => {
                self.session = Some((begun.id, begun.addr));
                let out = self.out.clone();
                actix_rt::spawn(async move {
                    while let Some(message) = queued.recv().await {
                        let _ = out.send(message.to_bytes()).await;
                    }
                });
                self.write(result_bytes(&id, &Value::Object(begun.result)))
                    .await;
            }
            Err(refused) => {
                let e = refused.to_error();
                self.write(error_bytes(Some(&id), &e)).await;
            }
        }
    }

    /// Runs one request: its messages go out while it is pending, then its response.
    fn spawn(
        &self,
        id: RequestId,
        cancel: CancellationToken,
        reply: impl Future<Output = Reply> + 'static,
        rx: Option<mpsc::Receiver<Box<OutgoingMessage>>>,
    ) {
        self.in_flight
            .borrow_mut()
            .insert(id.clone(), cancel.clone());
        let in_flight = self.in_flight.clone();
        let listening = self.listening.clone();
        let out = self.out.clone();
        let tenant = self.stdio.tenant.clone();
        actix_rt::spawn(async move {
            let reply = pump(reply, rx, &out).await;
            match reply {
                Reply::Result(r) => {
                    let _ = out.send(result_bytes(&id, &r)).await;
                }
                Reply::Error(e) => {
                    let _ = out.send(error_bytes(Some(&id), &e)).await;
                }
                Reply::Listen(listen) => {
                    let close = CancellationToken::new();
                    listening.borrow_mut().insert(id.clone(), close.clone());
                    follow(listen, &tenant, &cancel, &close, &out).await;
                    listening.borrow_mut().remove(&id);
                }
                Reply::Cancelled => {}
            }
            in_flight.borrow_mut().remove(&id);
        });
    }

    /// End of input: requests still running may finish, within `DRAIN_TIMEOUT`; listen
    /// streams, which would never finish, close at once with their closing result.
    async fn drain(&self) {
        for listen in self.listening.borrow().values() {
            listen.cancel();
        }
        let deadline = tokio::time::Instant::now() + DRAIN_TIMEOUT;
        while !self.in_flight.borrow().is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for token in self.in_flight.borrow().values() {
            token.cancel();
        }
        if let Some((sid, _)) = &self.session {
            if let Some(session) = self.legacy.sessions.remove(sid) {
                session.do_send(End {
                    why: "end of input",
                });
            }
        }
    }
}

/// Writes the request's messages until its reply is ready, then the ones queued before it.
async fn pump(
    reply: impl Future<Output = Reply>,
    rx: Option<mpsc::Receiver<Box<OutgoingMessage>>>,
    out: &mpsc::Sender<Vec<u8>>,
) -> Reply {
    let Some(mut rx) = rx else {
        return reply.await;
    };
    let mut reply = std::pin::pin!(reply);
    loop {
        tokio::select! {
            biased;
            Some(message) = rx.recv() => {
                let _ = out.send(message.to_bytes()).await;
            }
            r = &mut reply => {
                while let Ok(message) = rx.try_recv() {
                    let _ = out.send(message.to_bytes()).await;
                }
                return r;
            }
        }
    }
}

/// `subscriptions/listen` on stdio: the acknowledgement, then each honoured change, until
/// the client cancels it (then nothing more: a cancelled request gets no response) or the
/// input ends (then the closing result).
async fn follow(
    mut listen: Listen,
    tenant: &Tenant,
    cancel: &CancellationToken,
    close: &CancellationToken,
    out: &mpsc::Sender<Vec<u8>>,
) {
    let (method, params) = listen.acknowledgement();
    let _ = out.send(notification_bytes(method, &params)).await;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return,
            _ = close.cancelled() => break,
            event = listen.events.recv() => match event {
                Ok(event) => {
                    if let Some((method, params)) = listen.render(&event) {
                        let _ = out.send(notification_bytes(method, &params)).await;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    let closing = listen.closing_result(tenant.view().server_info());
    let id = listen.subscription_id.clone();
    let _ = out.send(result_bytes(&id, &Value::Object(closing))).await;
}
