//! The soak's traffic: what one worker sends per turn, and how each answer is judged.
//!
//! A worker cycles through [`CYCLE`] (half echo calls, then sealed flows, legacy shim flows,
//! a listen stream, hostile requests), starting at its own offset so the kinds interleave
//! across workers. Hostile requests take turns across the run: malformed JSON, a tampered
//! `requestState`, an unknown tenant, and every [`OVERSIZED_EVERY`]th one an oversized body
//! (rare, so that at a high rate the driver spends its time on requests, not on megabytes). Each must get its
//! own error (status and JSON-RPC code); any other answer is unexpected, as is any failed
//! check of ordinary traffic.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use serde_json::Value;

use super::report::Tally;
use crate::bench::connection::Connection;
use crate::bench::flow::{self, Bodies, CheckError, ResultTypeCheck, MRTR_GREETING, MRTR_TOOL};
use crate::bench::legacy::{LegacyHttp, SseReader};

/// A worker's turns, in order.
const CYCLE: [Kind; 20] = {
    use Kind::*;
    [
        Echo, Flow, Echo, Hostile, Echo, Legacy, Echo, Flow, Echo, Listen, //
        Echo, Flow, Echo, Hostile, Echo, Legacy, Echo, Flow, Echo, Hostile,
    ]
};

/// Every this many hostile requests, one is an oversized body.
pub(super) const OVERSIZED_EVERY: u64 = 25;

/// The oversized body: past the default `http.max_body_bytes` (1 MiB).
pub(super) const OVERSIZED_BYTES: usize = (1 << 20) + 1024;

/// Listen streams open at once across the run (a caller may hold only so many).
pub(super) const MAX_OPEN_LISTENS: usize = 8;

/// How long a listen stream stays open before the soak closes it.
const LISTEN_HOLD: Duration = Duration::from_secs(2);

/// A tenant no server has.
const UNKNOWN_TENANT: &str = "no-such-tenant-soak";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Echo,
    Flow,
    Legacy,
    Listen,
    Hostile,
}

impl Kind {
    /// Requests a turn of this kind sends, charged against the rate before it starts.
    pub(super) fn requests(self) -> u32 {
        match self {
            Kind::Echo | Kind::Listen | Kind::Hostile => 1,
            Kind::Flow | Kind::Legacy => 2,
        }
    }
}

/// What every worker shares: the target, the bodies, the current interval's tally, the
/// whole run's counts, and the listen streams open.
pub(super) struct Shared {
    pub(super) url: String,
    pub(super) authorization: Option<String>,
    pub(super) timeout: Duration,
    pub(super) bodies: Bodies,
    pub(super) tally: RefCell<Tally>,
    pub(super) totals: RefCell<Totals>,
    pub(super) open_listens: Cell<usize>,
    /// Hostile requests so far, which decides the kind of the next.
    pub(super) hostile: Cell<u64>,
    /// The oversized body, built once.
    pub(super) oversized: String,
}

/// The whole run's counts beside the interval tallies.
#[derive(Default)]
pub(super) struct Totals {
    pub(super) traffic: std::collections::BTreeMap<&'static str, u64>,
    pub(super) unexpected: std::collections::BTreeMap<&'static str, u64>,
    pub(super) first_unexpected: Option<String>,
}

/// A `tools/call` body of [`OVERSIZED_BYTES`] and more.
pub(super) fn oversized_body() -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","pad":"{}"}}}}"#,
        "x".repeat(OVERSIZED_BYTES)
    )
}

impl Shared {
    fn answered(&self, took: Duration) {
        self.tally.borrow_mut().answered(took);
    }

    fn expected_error(&self, took: Duration) {
        let mut tally = self.tally.borrow_mut();
        tally.answered(took);
        tally.expected_errors += 1;
    }

    fn unexpected(&self, what: &'static str, e: &CheckError) {
        self.tally.borrow_mut().unexpected += 1;
        let mut totals = self.totals.borrow_mut();
        *totals.unexpected.entry(what).or_default() += 1;
        if totals.first_unexpected.is_none() {
            totals.first_unexpected = Some(format!("{what}: {e}"));
        }
    }

    fn sent(&self, what: &'static str) {
        *self.totals.borrow_mut().traffic.entry(what).or_default() += 1;
    }
}

/// One worker: a keep-alive connection for modern requests, another to the unknown tenant,
/// a legacy session, and what its hostile turns need.
pub(super) struct Worker {
    shared: Rc<Shared>,
    connection: Connection,
    stranger: Connection,
    legacy: LegacyHttp,
    session: Option<String>,
    /// The last sealed state this worker was given, to tamper with.
    state: Option<String>,
    next_id: u64,
    turn: usize,
}

impl Worker {
    pub(super) fn new(shared: Rc<Shared>, index: usize) -> Worker {
        let authorization = shared.authorization.as_deref();
        let connection = Connection::new(&shared.url, authorization, shared.timeout);
        let stranger = Connection::new(
            &unknown_tenant_url(&shared.url),
            authorization,
            shared.timeout,
        );
        let legacy = LegacyHttp::new(&shared.url, authorization, shared.timeout);
        Worker {
            shared,
            connection,
            stranger,
            legacy,
            session: None,
            state: None,
            next_id: (index as u64) << 32,
            turn: index * 7,
        }
    }

    /// The kind of this worker's next turn (what the rate is charged for). A listen stream
    /// takes its place among the [`MAX_OPEN_LISTENS`] here, when it is chosen: counted only
    /// once acknowledged, the streams still opening (up to one per worker, and many under
    /// load) came on top of the open ones, and went past the server's per-caller cap.
    pub(super) fn next_kind(&mut self) -> Kind {
        self.turn += 1;
        match CYCLE[self.turn % CYCLE.len()] {
            Kind::Listen if self.shared.open_listens.get() >= MAX_OPEN_LISTENS => Kind::Echo,
            Kind::Listen => {
                self.shared
                    .open_listens
                    .set(self.shared.open_listens.get() + 1);
                Kind::Listen
            }
            kind => kind,
        }
    }

    pub(super) async fn run(&mut self, kind: Kind) {
        match kind {
            Kind::Echo => self.echo().await,
            Kind::Flow => self.flow().await,
            Kind::Legacy => self.legacy_flow().await,
            Kind::Listen => self.listen().await,
            Kind::Hostile => self.hostile().await,
        }
    }

    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    async fn echo(&mut self) {
        self.shared.sent("echo");
        let id = self.id();
        let body = self.shared.bodies.call(id);
        let started = Instant::now();
        let checked = self
            .connection
            .post("echo", &body)
            .await
            .and_then(|(status, body)| {
                let text = &self.shared.bodies.text;
                flow::check_complete(status, &body, id, text, ResultTypeCheck::Required)
            });
        self.judge("echo", started, checked);
    }

    /// Round 1 of a sealed flow: its state, kept for tampering.
    async fn round1(&mut self) -> Option<String> {
        let id = self.id();
        let body = self.shared.bodies.round1(id);
        let started = Instant::now();
        let state = self
            .connection
            .post(MRTR_TOOL, &body)
            .await
            .and_then(|(status, body)| flow::check_round1(status, &body, id));
        let state = self.judge("flow", started, state)?;
        self.state = Some(state.clone());
        Some(state)
    }

    async fn flow(&mut self) {
        self.shared.sent("flow");
        let Some(state) = self.round1().await else {
            return;
        };
        let id = self.id();
        let body = self.shared.bodies.round2(id, &state);
        let started = Instant::now();
        let checked = self
            .connection
            .post(MRTR_TOOL, &body)
            .await
            .and_then(|(status, body)| {
                flow::check_complete(status, &body, id, MRTR_GREETING, ResultTypeCheck::Required)
            });
        self.judge("flow", started, checked);
    }

    async fn legacy_flow(&mut self) {
        self.shared.sent("legacy");
        let session = match self.session.clone() {
            Some(session) => session,
            None => {
                let started = Instant::now();
                let opened = self.legacy.initialize().await;
                let Some(session) = self.judge("legacy", started, opened) else {
                    return;
                };
                self.session = Some(session.clone());
                session
            }
        };
        let id = self.id();
        match self.legacy.call(&session, id, Duration::ZERO).await {
            Ok((call, answer)) => {
                self.shared.answered(call);
                self.shared.answered(answer);
            }
            Err(e) => {
                if matches!(e, CheckError::Status(404)) {
                    self.session = None;
                }
                self.shared.unexpected("legacy", &e);
            }
        }
    }

    /// Opens a `subscriptions/listen` stream, checks its acknowledgement, and leaves it open
    /// for [`LISTEN_HOLD`] on a task of its own, then closes it. Its place among the open
    /// streams was taken when it was chosen ([`Worker::next_kind`]); it is given back here.
    async fn listen(&mut self) {
        self.shared.sent("listen");
        let id = self.id();
        let started = Instant::now();
        let request = self
            .legacy
            .post()
            .insert_header(("mcp-protocol-version", flow::PROTOCOL_VERSION))
            .insert_header(("mcp-method", "subscriptions/listen"));
        let opened = match request.send_body(listen_body(id)).await {
            Err(e) => Err(CheckError::Transport(e.to_string())),
            Ok(response) if response.status().as_u16() != 200 => {
                Err(CheckError::Status(response.status().as_u16()))
            }
            Ok(response) => {
                let mut stream = SseReader::new(response);
                match stream
                    .next()
                    .await
                    .and_then(|event| check_acknowledged(&event))
                {
                    Ok(()) => Ok(stream),
                    Err(e) => Err(e),
                }
            }
        };
        let shared = self.shared.clone();
        let Some(stream) = self.judge("listen", started, opened) else {
            shared.open_listens.set(shared.open_listens.get() - 1);
            return;
        };
        actix_rt::spawn(async move {
            actix_rt::time::sleep(LISTEN_HOLD).await;
            drop(stream);
            shared.open_listens.set(shared.open_listens.get() - 1);
        });
    }

    async fn hostile(&mut self) {
        let hostile = self.shared.hostile.get() + 1;
        self.shared.hostile.set(hostile);
        if hostile.is_multiple_of(OVERSIZED_EVERY) {
            return self.oversized().await;
        }
        match hostile % 3 {
            0 => self.malformed().await,
            1 => self.tampered().await,
            _ => self.unknown_tenant().await,
        }
    }

    async fn malformed(&mut self) {
        self.shared.sent("hostile_malformed_json");
        let started = Instant::now();
        let answer = self
            .connection
            .post("echo", r#"{"jsonrpc":"2.0","id":1,"method":"#)
            .await;
        self.expect("hostile_malformed_json", started, answer, 400, -32700);
    }

    async fn oversized(&mut self) {
        self.shared.sent("hostile_oversized_body");
        let started = Instant::now();
        let answer = self.connection.post("echo", &self.shared.oversized).await;
        self.expect("hostile_oversized_body", started, answer, 413, -31013);
    }

    async fn tampered(&mut self) {
        self.shared.sent("hostile_tampered_state");
        let state = match self.state.clone() {
            Some(state) => state,
            None => match self.round1().await {
                Some(state) => state,
                None => return,
            },
        };
        let id = self.id();
        let body = self.shared.bodies.round2(id, &tamper(&state));
        let started = Instant::now();
        let answer = self.connection.post(MRTR_TOOL, &body).await;
        self.expect("hostile_tampered_state", started, answer, 400, -32602);
    }

    async fn unknown_tenant(&mut self) {
        self.shared.sent("hostile_unknown_tenant");
        let id = self.id();
        let body = self.shared.bodies.call(id);
        let started = Instant::now();
        let answer = self.stranger.post("echo", &body).await;
        self.expect("hostile_unknown_tenant", started, answer, 404, -31004);
    }

    /// Counts a checked answer: answered when it passed, unexpected otherwise.
    fn judge<T>(
        &self,
        what: &'static str,
        started: Instant,
        outcome: Result<T, CheckError>,
    ) -> Option<T> {
        match outcome {
            Ok(value) => {
                self.shared.answered(started.elapsed());
                Some(value)
            }
            Err(e) => {
                self.shared.unexpected(what, &e);
                None
            }
        }
    }

    /// A hostile request must be refused with `status` and JSON-RPC `code`.
    fn expect(
        &self,
        what: &'static str,
        started: Instant,
        answer: Result<(u16, Bytes), CheckError>,
        status: u16,
        code: i64,
    ) {
        let checked = answer.and_then(|(got, body)| check_refusal(got, &body, status, code));
        match checked {
            Ok(()) => self.shared.expected_error(started.elapsed()),
            Err(e) => self.shared.unexpected(what, &e),
        }
    }
}

/// The endpoint's URL with its tenant replaced by one no server has.
fn unknown_tenant_url(url: &str) -> String {
    match url.rsplit_once("/t/") {
        Some((base, rest)) => {
            let tail = rest.split_once('/').map_or("", |(_, tail)| tail);
            format!("{base}/t/{UNKNOWN_TENANT}/{tail}")
        }
        None => format!("{}/t/{UNKNOWN_TENANT}/mcp", url.trim_end_matches('/')),
    }
}

/// The state with one character in its middle changed (to another base64url character).
fn tamper(state: &str) -> String {
    let mut bytes = state.as_bytes().to_vec();
    let at = bytes.len() / 2;
    if let Some(b) = bytes.get_mut(at) {
        *b = if *b == b'A' { b'B' } else { b'A' };
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn listen_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"subscriptions/listen","params":{{"notifications":{{"toolsListChanged":true}},"_meta":{{"io.modelcontextprotocol/protocolVersion":"{}","io.modelcontextprotocol/clientCapabilities":{{}}}}}}}}"#,
        flow::PROTOCOL_VERSION
    )
}

fn check_acknowledged(event: &[u8]) -> Result<(), CheckError> {
    let message: Value =
        serde_json::from_slice(event).map_err(|e| CheckError::Body(e.to_string()))?;
    match message.get("method").and_then(Value::as_str) {
        Some("notifications/subscriptions/acknowledged") => Ok(()),
        _ => Err(CheckError::Body(format!(
            "expected the listen acknowledgement, got {message}"
        ))),
    }
}

/// A refusal with the expected HTTP status and JSON-RPC error code.
fn check_refusal(got: u16, body: &[u8], status: u16, code: i64) -> Result<(), CheckError> {
    if got != status {
        return Err(CheckError::Status(got));
    }
    let message: Value =
        serde_json::from_slice(body).map_err(|e| CheckError::Body(e.to_string()))?;
    match message.pointer("/error/code").and_then(Value::as_i64) {
        Some(c) if c == code => Ok(()),
        _ => Err(CheckError::RpcError(format!(
            "expected error {code}, got {message}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unknown_tenant_url_keeps_the_server_and_the_path_after_the_tenant() {
        assert_eq!(
            unknown_tenant_url("http://127.0.0.1:8080/t/demo/mcp"),
            "http://127.0.0.1:8080/t/no-such-tenant-soak/mcp"
        );
    }

    #[test]
    fn a_tampered_state_differs_in_one_character() {
        let state = "v1.kid.QUJDREVGR0g";
        let tampered = tamper(state);
        assert_eq!(tampered.len(), state.len());
        let diff = state
            .bytes()
            .zip(tampered.bytes())
            .filter(|(a, b)| a != b)
            .count();
        assert_eq!(diff, 1);
    }

    #[test]
    fn a_refusal_must_have_the_expected_status_and_code() {
        let body =
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#;
        assert!(check_refusal(400, body, 400, -32700).is_ok());
        assert!(check_refusal(200, body, 400, -32700).is_err());
        assert!(check_refusal(400, body, 400, -32600).is_err());
        assert!(check_refusal(400, b"<html>", 400, -32700).is_err());
    }

    #[actix_rt::test]
    async fn a_listen_takes_its_place_among_the_open_ones_when_it_is_chosen() {
        let shared = Rc::new(Shared {
            url: "http://127.0.0.1:9/t/demo/mcp".into(),
            authorization: None,
            timeout: Duration::from_secs(1),
            bodies: Bodies::new("soak"),
            tally: RefCell::new(Tally::new()),
            totals: RefCell::new(Totals::default()),
            open_listens: Cell::new(0),
            hostile: Cell::new(0),
            oversized: String::new(),
        });
        // Many workers choosing at once, none of their streams open yet: no more listens
        // than the cap may be under way.
        let mut workers: Vec<_> = (0..64).map(|i| Worker::new(shared.clone(), i)).collect();
        let mut chosen = 0;
        for _ in 0..CYCLE.len() {
            for worker in &mut workers {
                chosen += usize::from(worker.next_kind() == Kind::Listen);
            }
        }
        assert_eq!(chosen, MAX_OPEN_LISTENS);
        assert_eq!(shared.open_listens.get(), MAX_OPEN_LISTENS);
    }

    #[test]
    fn the_cycle_is_half_echo_and_has_every_kind() {
        let echo = CYCLE.iter().filter(|k| **k == Kind::Echo).count();
        assert_eq!(echo * 2, CYCLE.len());
        for kind in [Kind::Flow, Kind::Legacy, Kind::Listen, Kind::Hostile] {
            assert!(CYCLE.contains(&kind), "{kind:?}");
        }
    }
}
