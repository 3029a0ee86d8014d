//! The bench's h2c client: HTTP/2 cleartext with prior knowledge (the `h2` crate over tokio's
//! `TcpStream`) on a current-thread runtime. The flows ride as streams of a few connections,
//! `streams_per_connection` each; each connection also carries its flows' `initialize` and
//! answers, so a flow's whole life is on one connection.
//!
//! The run stays inside the runtime from the first connection to the last, the settle before
//! the RSS reading included: actix pings an HTTP/2 connection every keep-alive interval (5 s)
//! and closes it when no pong comes back, and only a polled connection answers.

use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use h2::client::SendRequest;
use h2::RecvStream;
use roundtrip::bench::initialize_body;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::task::JoinHandle;

use crate::{
    answer_body, call_body, flow_name, greets, FlowPlan, FlowRun, FLOWS_PER_SESSION, SETTLE,
    TENANT_PATH,
};

/// How long one step may take (a response head, a leg), and the whole finishing pass.
const WAIT: Duration = Duration::from_secs(60);
/// The client's receive windows. Held streams are not read while the bench measures, and the
/// server's keep-alive comments pile up in them meanwhile; h2's default connection window
/// (64 KiB, shared by every stream) would stall the connection well before that matters here.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 64 << 20;

/// Opens `plan.flows` flows over h2c, calls `measure` while all are open, then answers every
/// leg and reads every flow's result.
pub(crate) fn hold_flows(plan: &FlowPlan, measure: impl FnOnce() -> u64) -> FlowRun {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime");
    runtime.block_on(hold(plan, measure))
}

async fn hold(plan: &FlowPlan, measure: impl FnOnce() -> u64) -> FlowRun {
    let started = Instant::now();
    let connections = connect_all(plan).await;
    let mut open = open_flows(&connections, plan).await;
    let opened_in = started.elapsed();
    tokio::time::sleep(SETTLE).await;
    let rss_kib = measure();
    answer_all(&connections, &open).await;
    let completed = finish_all(&mut open).await;
    drop(open);
    close_all(connections).await;
    FlowRun {
        opened_in,
        rss_kib,
        completed,
        lost: plan.flows - completed,
    }
}

/// As many connections as the flows need at `plan.streams_per_connection` each.
async fn connect_all(plan: &FlowPlan) -> Vec<Connection> {
    let count = plan.flows.div_ceil(plan.streams_per_connection);
    let mut connections = Vec::with_capacity(count);
    for _ in 0..count {
        connections.push(Connection::open(plan.port).await);
    }
    connections
}

/// Flow `i` goes on connection `i / streams_per_connection`; every `FLOWS_PER_SESSION`
/// flows get a new session, begun on the connection of the first of them.
async fn open_flows(connections: &[Connection], plan: &FlowPlan) -> Vec<OpenFlow> {
    let mut open = Vec::with_capacity(plan.flows);
    let mut session = String::new();
    for i in 0..plan.flows {
        let conn = i / plan.streams_per_connection;
        if i % FLOWS_PER_SESSION == 0 {
            session = connections[conn].initialize().await;
        }
        open.push(open_flow(&connections[conn], conn, &session, i).await);
    }
    open
}

/// A shim flow held open: its stream, its leg read, its answer not yet sent.
struct OpenFlow {
    /// Which connection carries it (and its answer).
    conn: usize,
    events: SseStream,
    session: String,
    leg_id: String,
    name: String,
}

/// Flow `i`: the call on a new stream of `connection`, read up to the shim's leg.
async fn open_flow(connection: &Connection, conn: usize, session: &str, i: usize) -> OpenFlow {
    let response = connection.post(Some(session), call_body(i)).await;
    assert_eq!(response.status(), 200, "flow {i} refused");
    let mut events = SseStream::new(response.into_body());
    let leg = events
        .next_message(tokio::time::Instant::now() + WAIT)
        .await
        .unwrap_or_else(|| panic!("flow {i}: no leg"));
    assert_eq!(leg["method"], "elicitation/create", "flow {i}: {leg}");
    let leg_id = leg["id"].as_str().expect("a string leg id").to_owned();
    OpenFlow {
        conn,
        events,
        session: session.to_owned(),
        leg_id,
        name: flow_name(i),
    }
}

async fn answer_all(connections: &[Connection], open: &[OpenFlow]) {
    for flow in open {
        let body = answer_body(&flow.leg_id, &flow.name);
        let response = connections[flow.conn].post(Some(&flow.session), body).await;
        assert_eq!(response.status(), 202, "answer refused");
        drain(response.into_body()).await;
    }
}

/// Reads every flow's final response: how many greeted their own name. A flow still silent
/// when the pass's time is up counts as lost.
async fn finish_all(open: &mut [OpenFlow]) -> usize {
    let deadline = tokio::time::Instant::now() + WAIT;
    let mut completed = 0;
    for flow in open {
        let response = flow.events.next_message(deadline).await;
        if greets(response.as_ref(), &flow.name) {
            completed += 1;
        }
    }
    completed
}

async fn close_all(connections: Vec<Connection>) {
    for connection in connections {
        connection.close().await;
    }
}

/// One h2c connection to the server.
struct Connection {
    send: SendRequest<Bytes>,
    authority: String,
    /// The task that drives the connection's I/O.
    io: JoinHandle<()>,
}

impl Connection {
    /// Connects and completes the HTTP/2 handshake with prior knowledge.
    async fn open(port: u16) -> Connection {
        let authority = format!("127.0.0.1:{port}");
        let tcp = TcpStream::connect(&authority).await.expect("connect");
        tcp.set_nodelay(true).expect("nodelay");
        let handshake = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake(tcp);
        let (send, connection) = within("the h2c handshake", handshake)
            .await
            .expect("the server speaks h2c");
        let io = tokio::spawn(async move {
            if let Err(e) = connection.await {
                eprintln!("legacy_memory: an h2c connection failed: {e}");
            }
        });
        Connection {
            send,
            authority,
            io,
        }
    }

    /// POSTs `body` (in `session`, if any) on a new stream: the response, body unread.
    async fn post(&self, session: Option<&str>, body: String) -> http::Response<RecvStream> {
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{}{TENANT_PATH}", self.authority))
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream");
        if let Some(session) = session {
            request = request.header("mcp-session-id", session);
        }
        let request = request.body(()).expect("a well-formed request");
        let mut send = within("a free stream", self.send.clone().ready())
            .await
            .expect("the connection is open");
        let (response, mut upload) = send
            .send_request(request, false)
            .expect("a new stream opens");
        upload
            .send_data(Bytes::from(body), true)
            .expect("the request body is sent");
        within("a response", response)
            .await
            .expect("the stream is answered")
    }

    /// A new legacy session: its id.
    async fn initialize(&self) -> String {
        let response = self.post(None, initialize_body()).await;
        assert_eq!(response.status(), 200, "initialize failed");
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("an Mcp-Session-Id")
            .to_owned();
        drain(response.into_body()).await;
        session
    }

    /// Sends GOAWAY once no stream is left, and waits for the connection to close.
    async fn close(self) {
        drop(self.send);
        if tokio::time::timeout(WAIT, self.io).await.is_err() {
            eprintln!("legacy_memory: an h2c connection did not close in {WAIT:?}");
        }
    }
}

/// Reads a body to its end, handing every byte back to the flow-control windows.
async fn drain(mut body: RecvStream) {
    while let Some(chunk) = within("a response body", body.data()).await {
        let chunk = chunk.expect("the body arrives");
        body.flow_control()
            .release_capacity(chunk.len())
            .expect("capacity released");
    }
}

/// An SSE response body read message by message.
struct SseStream {
    body: RecvStream,
    buf: Vec<u8>,
}

impl SseStream {
    fn new(body: RecvStream) -> SseStream {
        SseStream {
            body,
            buf: Vec::new(),
        }
    }

    /// The next JSON-RPC message, skipping keep-alive comments; `None` when the stream ends,
    /// fails, or stays silent until `deadline`.
    async fn next_message(&mut self, deadline: tokio::time::Instant) -> Option<Value> {
        loop {
            if let Some(message) = self.take_message() {
                return Some(message);
            }
            let chunk = tokio::time::timeout_at(deadline, self.body.data())
                .await
                .ok()??
                .ok()?;
            // Hand the bytes back to the flow-control windows, or the server stalls.
            self.body
                .flow_control()
                .release_capacity(chunk.len())
                .ok()?;
            self.buf.extend_from_slice(&chunk);
        }
    }

    /// The first `data:` message among the complete lines buffered; the lines up to it are
    /// consumed.
    fn take_message(&mut self) -> Option<Value> {
        while let Some(end) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            if let Some(data) = line.trim_end().strip_prefix("data: ") {
                return serde_json::from_str(data).ok();
            }
        }
        None
    }
}

/// `fut`, or a panic naming `what` if it takes longer than [`WAIT`].
async fn within<T>(what: &str, fut: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {WAIT:?}"))
}
