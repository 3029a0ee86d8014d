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
//! happen. Logs go to stderr only.
//!
//! Bounds ([`StdioLimits`]):
//! - At most `max_in_flight` requests run at once: the reader takes a slot before it reads a
//!   line, and a request keeps its slot until it is answered, so with every slot taken stdin
//!   is not read (`lines.rs`). Two kinds of request give their slot back early, since they
//!   wait on the client, who can only be heard if reading goes on: a `subscriptions/listen`
//!   once acknowledged, and a legacy call once the shim has sent its first server-to-client
//!   request (`messages.rs`). A `notifications/cancelled` for a request is read only once a
//!   slot is free. Listen streams are capped apart: `max_in_flight` of them open at once, one
//!   more is refused with -31429.
//! - A line longer than `max_line_bytes` is not kept: it is answered with -32600 (id null,
//!   the message names the cap) and the next line is served.
//! - Output goes through a bounded queue to one buffered writer (`output.rs`).
//!
//! A request the client cancels (`notifications/cancelled`) gets no response, a
//! `subscriptions/listen` included. At the end of input every other request is answered:
//! listen streams close at once with their closing result, and requests still running may
//! finish within `drain_timeout`; one still running then is cancelled and gets its own error
//! (-32603, the message says the drain timed out). [`serve`] reports how many did
//! ([`Served`]), so the command can exit non-zero.

mod lines;
mod messages;
mod output;
mod table;

use std::future::Future;
use std::io::Read;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use actix::Addr;
use serde_json::{json, Value};
use tokio::io::AsyncWrite;
use tokio::sync::mpsc;

use self::lines::{Input, Line, Permit, Slots};
use self::table::Table;
use crate::budget::Account;
use crate::dispatch::envelope::check_modern;
use crate::dispatch::{Call, Caller, Dispatcher, Reply, RuntimeConfig, StateKeys, WorkerState};
use crate::handler::Cancellation;
use crate::handler::{Notifier, OutgoingMessage, Principal, Tenant};
use crate::legacy::bridge::Answer;
use crate::legacy::session::{deliver, End, Notify};
use crate::legacy::{handshake, Legacy, Session, SessionId, SessionOn};
use crate::protocol::error::ErrorCode;
use crate::protocol::jsonrpc::{error_bytes, result_bytes, Malformed};
use crate::protocol::meta::legacy_progress_token;
use crate::protocol::{Incoming, McpError, Method, ProtocolVersion, Request, RequestId};

/// Session notifications queued for stdout; beyond it they are dropped, as on a GET stream.
const SESSION_BUFFER: usize = 64;

/// How much the stdio server takes in at once, and how long it waits at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioLimits {
    /// Requests running at once; with that many running, stdin is not read.
    pub max_in_flight: usize,
    /// The longest line read (newline excluded); a longer one is refused unread.
    pub max_line_bytes: usize,
    /// How long requests still running at the end of input may take to finish.
    pub drain_timeout: Duration,
}

impl Default for StdioLimits {
    fn default() -> Self {
        Self {
            max_in_flight: 64,
            max_line_bytes: 1 << 20,
            drain_timeout: Duration::from_secs(60),
        }
    }
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
    /// In flight, line length and the drain at end of input.
    pub limits: StdioLimits,
}

/// How a stdio run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Served {
    /// Requests still running when the drain timed out: each got the drain's error instead
    /// of its answer.
    pub timed_out: usize,
    /// Every line was written (false: stdout closed early).
    pub output_complete: bool,
}

/// Serves the lines of `input` until it ends and every request is answered (or the drain
/// timed out). Must run inside an actix System, on a `LocalSet`. `input` is read on a thread
/// of its own (`lines.rs`).
pub async fn serve<R, W>(stdio: Stdio, input: R, output: W) -> Served
where
    R: Read + Send + 'static,
    W: AsyncWrite + Unpin + 'static,
{
    let limits = stdio.limits.clone();
    let mut lines = lines::read_lines(
        input,
        Slots::new(limits.max_in_flight),
        limits.max_line_bytes,
    );
    let (out, writer) = output::start(output);
    let (dispatcher, worker) = Dispatcher::start_with(stdio.runtime.clone(), stdio.keys.clone());
    let mut server = Server {
        _dispatcher: dispatcher,
        worker,
        legacy: Legacy::start(stdio.runtime.clone()),
        session: None,
        owed: Rc::new(Table::default()),
        listening: Rc::new(Table::default()),
        out,
        stdio,
    };
    while let Some(Line { input, permit }) = lines.recv().await {
        match input {
            Input::Line(line) if line.trim_ascii().is_empty() => {}
            Input::Line(line) => server.handle(&line, permit).await,
            Input::TooLong { bytes } => {
                let e = McpError::invalid_request(format!(
                    "Line of {bytes} bytes exceeds stdio.max_line_bytes ({}); it was not read",
                    limits.max_line_bytes
                ));
                server.write(error_bytes(None, &e)).await;
            }
        }
    }
    let timed_out = server.drain(limits.drain_timeout).await;
    drop(server);
    let output_complete = writer.await.unwrap_or(false);
    Served {
        timed_out,
        output_complete,
    }
}

struct Server {
    stdio: Stdio,
    /// Keeps the worker's view current for as long as the server runs.
    _dispatcher: Addr<Dispatcher>,
    worker: WorkerState,
    legacy: Legacy,
    session: Option<(SessionId, Addr<Session>)>,
    /// The requests owed an answer, and what `notifications/cancelled` stops. Whoever takes a
    /// request out of it (its task with the answer, the client cancelling it, the drain timing
    /// it out) is the only one to answer it, so each is answered once at most.
    owed: Rc<Table>,
    /// What the end of input closes: each open `subscriptions/listen`.
    listening: Rc<Table>,
    out: mpsc::Sender<Vec<u8>>,
}

impl Server {
    async fn write(&self, bytes: Vec<u8>) {
        let _ = self.out.send(bytes).await;
    }

    /// One line; `permit` is its slot, kept by a request that runs on and freed otherwise.
    async fn handle(&mut self, line: &[u8], permit: Permit) {
        let incoming = match Incoming::parse(line) {
            Ok(incoming) => incoming,
            Err(Malformed { id, error }) => {
                return self.write(error_bytes(id.as_ref(), &error)).await;
            }
        };
        match incoming {
            Incoming::Request(request) => self.request(request, permit).await,
            Incoming::Notification(n) => {
                if let Some(id) = n.cancelled_request() {
                    self.owed.cancel(&id);
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

    async fn request(&mut self, mut request: Request, permit: Permit) {
        let id = request.id.clone();
        if self.owed.contains(&id) {
            let e = McpError::invalid_request(format!("Request id {id} is already in use"));
            return self.write(error_bytes(Some(&id), &e)).await;
        }
        let modern = request.is_modern();
        if request.method == Method::Initialize && !modern {
            return self.initialize(request).await;
        }
        if !modern {
            if let Some((_, session)) = &self.session {
                let (notifier, rx) =
                    Notifier::channel(legacy_progress_token(request.params.as_ref()), None);
                let cancel = Cancellation::new();
                let reply = deliver(
                    session,
                    request,
                    self.stdio.principal.clone(),
                    Some(notifier),
                    cancel.clone(),
                );
                let reply = async move { reply.await.unwrap_or_else(|_| Reply::unavailable()) };
                return self.spawn(id, cancel, reply, Some(rx), permit);
            }
        }
        // Modern, or neither: the envelope checks say what is wrong with the latter.
        let envelope = match check_modern(&mut request, None) {
            Ok(envelope) => envelope,
            Err(mut e) => {
                if !modern && e.data.is_none() {
                    e = e.with_data(json!({ "supported": ProtocolVersion::MODERN_STRS }));
                }
                return self.write(error_bytes(Some(&id), &e)).await;
            }
        };
        let (notifier, rx) = envelope.notifier().unzip();
        let cancel = Cancellation::new();
        let caller = Caller::new(self.stdio.tenant.clone(), self.stdio.principal.clone());
        let call = Call::modern(caller, request, envelope, notifier, cancel.clone());
        let reply = self.worker.run(call);
        self.spawn(id, cancel, reply, rx, permit);
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

    /// Runs one request, holding `permit` while it runs: its messages go out while it is
    /// pending, then its response, unless someone else answered it meanwhile.
    fn spawn(
        &self,
        id: RequestId,
        cancel: Cancellation,
        reply: impl Future<Output = Reply> + 'static,
        rx: Option<mpsc::Receiver<Box<OutgoingMessage>>>,
        permit: Permit,
    ) {
        let serial = self.owed.insert(id.clone(), cancel.clone());
        let owed = self.owed.clone();
        let listening = self.listening.clone();
        let out = self.out.clone();
        let tenant = self.stdio.tenant.clone();
        let max_listens = self.stdio.limits.max_in_flight;
        actix_rt::spawn(async move {
            let mut permit = Some(permit);
            let reply = messages::pump(reply, rx, &out, &mut permit).await;
            let answer = match reply {
                Reply::Result(r) => Some(r.response_bytes(&id)),
                Reply::Error(e) => Some(error_bytes(Some(&id), &e)),
                Reply::Listen(_) if listening.len() >= max_listens => {
                    let e = McpError::new(
                        ErrorCode::TooManyRequests,
                        format!(
                            "{max_listens} listen streams are open, the most stdio holds \
                             (stdio.max_in_flight)"
                        ),
                    );
                    Some(error_bytes(Some(&id), &e))
                }
                Reply::Listen(listen) => {
                    // Listening waits on the client; it must not stop the reader.
                    drop(permit.take());
                    let close = Cancellation::new();
                    let listen_serial = listening.insert(id.clone(), close.clone());
                    let closing = messages::follow(*listen, &tenant, &cancel, &close, &out).await;
                    listening.take(&id, listen_serial);
                    closing.map(|closing| result_bytes(&id, &closing))
                }
                Reply::Cancelled => None,
            };
            if let (true, Some(answer)) = (owed.take(&id, serial), answer) {
                let _ = out.send(answer).await;
            }
            drop(permit);
        });
    }

    /// End of input: listen streams, which would never finish, close at once with their
    /// closing result; requests still running may finish within `timeout`. Each one still
    /// running then is cancelled and answered with an error of its own. How many were.
    async fn drain(&self, timeout: Duration) -> usize {
        self.listening.cancel_all();
        let deadline = tokio::time::Instant::now() + timeout;
        while !self.owed.is_empty() && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let late = self.owed.cancel_and_take_all();
        for id in &late {
            let e = McpError::new(
                ErrorCode::InternalError,
                format!(
                    "The request was still running when the input ended and the drain timed \
                     out (stdio.drain_timeout_ms = {}); it was cancelled",
                    timeout.as_millis()
                ),
            );
            tracing::warn!(%id, "drain timed out: request cancelled");
            self.write(error_bytes(Some(id), &e)).await;
        }
        if let Some((sid, session)) = &self.session {
            // stdio sessions are never in a fleet's directory.
            self.legacy.sessions.remove(sid);
            session.do_send(End {
                why: "end of input",
            });
        }
        late.len()
    }
}
