//! The bench's HTTP/1.1 client, blocking and hand-written: a keep-alive connection for
//! `initialize` and answers, and a connection per held shim flow (HTTP/1.1 carries one open
//! response per connection).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Instant;

use roundtrip::bench::initialize_body;

use crate::{
    answer_body, call_body, flow_name, greets, settle, FlowPlan, FlowRun, FLOWS_PER_SESSION,
    TENANT_PATH,
};

/// The head of an HTTP response.
struct Head {
    status: u16,
    length: Option<usize>,
    session: Option<String>,
}

fn read_head(reader: &mut impl BufRead) -> Head {
    let mut status = String::new();
    reader.read_line(&mut status).expect("status line");
    let status = status
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP status line: {status:?}"));
    let mut head = Head {
        status,
        length: None,
        session: None,
    };
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("header");
        let line = line.trim_end();
        if line.is_empty() {
            return head;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        match name.to_ascii_lowercase().as_str() {
            "content-length" => head.length = value.trim().parse().ok(),
            "mcp-session-id" => head.session = Some(value.trim().to_owned()),
            _ => {}
        }
    }
}

fn write_post(stream: &mut TcpStream, port: u16, session: Option<&str>, body: &str) {
    let session = session
        .map(|s| format!("Mcp-Session-Id: {s}\r\n"))
        .unwrap_or_default();
    write!(
        stream,
        "POST {TENANT_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n{session}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .expect("write");
}

/// A keep-alive connection for `initialize` and for answers.
pub(crate) struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    port: u16,
}

impl Connection {
    pub(crate) fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream.set_nodelay(true).expect("nodelay");
        Connection {
            reader: BufReader::new(stream.try_clone().expect("clone")),
            writer: stream,
            port,
        }
    }

    /// POSTs `body`; the status, the session header and the body.
    fn post(&mut self, session: Option<&str>, body: &str) -> (Head, Vec<u8>) {
        write_post(&mut self.writer, self.port, session, body);
        let head = read_head(&mut self.reader);
        let mut body = vec![0; head.length.unwrap_or(0)];
        self.reader.read_exact(&mut body).expect("body");
        (head, body)
    }

    /// A new legacy session: its id.
    pub(crate) fn initialize(&mut self) -> String {
        let (head, _) = self.post(None, &initialize_body());
        assert_eq!(head.status, 200, "initialize failed");
        head.session.expect("an Mcp-Session-Id")
    }
}

/// Opens `plan.flows` flows, a connection each, calls `measure` while all are open, then
/// answers every leg on `conn` and reads every flow's result.
pub(crate) fn hold_flows(
    plan: &FlowPlan,
    conn: &mut Connection,
    measure: impl FnOnce() -> u64,
) -> FlowRun {
    let started = Instant::now();
    let mut open = open_flows(plan.port, conn, plan.flows);
    let opened_in = started.elapsed();
    settle();
    let rss_kib = measure();
    answer_all(conn, &open);
    let completed = finish_all(&mut open);
    FlowRun {
        opened_in,
        rss_kib,
        completed,
        lost: plan.flows - completed,
    }
}

/// A shim flow held open: its connection, its leg read, its answer not yet sent.
struct OpenFlow {
    reader: BufReader<TcpStream>,
    session: String,
    leg_id: String,
    name: String,
}

fn open_flows(port: u16, conn: &mut Connection, n: usize) -> Vec<OpenFlow> {
    let mut session = String::new();
    let mut open = Vec::with_capacity(n);
    for i in 0..n {
        if i % FLOWS_PER_SESSION == 0 {
            session = conn.initialize();
        }
        open.push(open_flow(port, &session, i));
    }
    open
}

/// Flow `i`: the call on a connection of its own, read up to the shim's leg.
fn open_flow(port: u16, session: &str, i: usize) -> OpenFlow {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    write_post(&mut stream, port, Some(session), &call_body(i));
    let mut reader = BufReader::new(stream);
    let head = read_head(&mut reader);
    assert_eq!(head.status, 200, "flow {i} refused");
    let leg = next_event(&mut reader).unwrap_or_else(|| panic!("flow {i}: no leg"));
    assert_eq!(leg["method"], "elicitation/create", "flow {i}: {leg}");
    let leg_id = leg["id"].as_str().expect("a string leg id").to_owned();
    OpenFlow {
        reader,
        session: session.to_owned(),
        leg_id,
        name: flow_name(i),
    }
}

fn answer_all(conn: &mut Connection, open: &[OpenFlow]) {
    for flow in open {
        let (head, _) = conn.post(Some(&flow.session), &answer_body(&flow.leg_id, &flow.name));
        assert_eq!(head.status, 202, "answer refused");
    }
}

/// Reads every flow's final response: how many greeted their own name.
fn finish_all(open: &mut [OpenFlow]) -> usize {
    let mut completed = 0;
    for flow in open {
        if greets(next_event(&mut flow.reader).as_ref(), &flow.name) {
            completed += 1;
        }
    }
    completed
}

/// The next JSON-RPC message on an SSE stream (chunked transfer encoding), skipping
/// keep-alive comments; `None` when the stream ends.
fn next_event(reader: &mut BufReader<TcpStream>) -> Option<serde_json::Value> {
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        // Chunk sizes and SSE framing lines interleave; only `data:` lines matter here.
        if let Some(data) = line.trim_end().strip_prefix("data: ") {
            return serde_json::from_str(data).ok();
        }
    }
}
