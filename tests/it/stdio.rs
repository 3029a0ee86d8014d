//! `roundtrip stdio --tenant SLUG`: the real binary, driven line by line over its stdin and
//! stdout, in both eras.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use serde_json::{json, Value};

use crate::support::{meta, scratch_dir};

/// A `roundtrip stdio` child process and its output, one JSON message per line.
pub(crate) struct StdioServer {
    pub(crate) child: Child,
    pub(crate) stdin: Option<ChildStdin>,
    pub(crate) lines: Receiver<String>,
    stderr: Receiver<String>,
}

impl StdioServer {
    fn start(tenant: &str) -> StdioServer {
        Self::start_with(tenant, &[])
    }

    /// Starts it with settings from `env` (`ROUNDTRIP_STDIO__MAX_IN_FLIGHT`, …).
    pub(crate) fn start_with(tenant: &str, env: &[(&str, &str)]) -> StdioServer {
        let mut child = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
            .args(["stdio", "--tenant", tenant])
            .envs(env.iter().copied())
            .env("ROUNDTRIP_DATA_DIR", scratch_dir())
            .env("ROUNDTRIP_LOG", "info")
            .env_remove("RUST_LOG")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("roundtrip stdio starts");
        let lines = forward(child.stdout.take().expect("stdout"));
        let stderr = forward(child.stderr.take().expect("stderr"));
        StdioServer {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr,
        }
    }

    pub(crate) fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write a line");
        stdin.flush().expect("flush");
    }

    pub(crate) fn send_raw(&mut self, bytes: &[u8]) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(bytes).expect("write bytes");
        stdin.write_all(b"\n").expect("write a newline");
        stdin.flush().expect("flush");
    }

    /// The next line on stdout, which must be one JSON-RPC message.
    pub(crate) fn next(&self) -> Value {
        let line = self
            .lines
            .recv_timeout(Duration::from_secs(10))
            .expect("a line on stdout within 10 s");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// No further line arrives within `wait`.
    pub(crate) fn silent_for(&self, wait: Duration) -> bool {
        self.lines.recv_timeout(wait).is_err()
    }

    /// Closes stdin and waits for the process to exit; its exit status and every line it
    /// wrote that was not read yet.
    pub(crate) fn end_input(&mut self) -> (std::process::ExitStatus, Vec<String>) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("the process exits");
        (status, drain(&self.lines))
    }

    /// Closes stdin and waits for the process to exit; its stderr.
    pub(crate) fn finish(mut self) -> (std::process::ExitStatus, String) {
        drop(self.stdin.take());
        let status = self.child.wait().expect("the process exits");
        (status, drain(&self.stderr).join("\n"))
    }
}

impl Drop for StdioServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every line until the pipe closes.
fn drain(lines: &Receiver<String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        out.push(line);
    }
    out
}

fn forward(pipe: impl std::io::Read + Send + 'static) -> Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

pub(crate) fn modern(id: u64, method: &str, mut params: Value, caps: Value) -> Value {
    params["_meta"] = meta(caps);
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

pub(crate) fn initialize(id: u64, caps: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": caps,
        "clientInfo": {"name": "legacy-test", "version": "1"}
    }})
}

#[test]
fn a_modern_client_probes_with_server_discover_and_is_served_statelessly() {
    let mut server = StdioServer::start("conformance");
    server.send(&modern(1, "server/discover", json!({}), json!({})));
    let discover = server.next();
    assert_eq!(discover["id"], 1);
    assert_eq!(discover["result"]["resultType"], "complete");
    assert!(discover["result"]["supportedVersions"]
        .as_array()
        .is_some_and(|v| v.contains(&json!("2026-07-28"))));

    server.send(&modern(
        2,
        "tools/call",
        json!({"name": "test_simple_text"}),
        json!({}),
    ));
    let call = server.next();
    assert_eq!(call["id"], 2);
    assert_eq!(call["result"]["resultType"], "complete");
}

#[test]
fn a_modern_input_required_result_on_stdio_is_returned_not_sent_as_a_request() {
    let mut server = StdioServer::start("conformance");
    let caps = json!({"elicitation": {}});
    server.send(&modern(
        1,
        "tools/call",
        json!({"name": "test_input_required_result_elicitation"}),
        caps.clone(),
    ));
    let first = server.next();
    assert_eq!(
        first["id"], 1,
        "the response, not a server request: {first}"
    );
    assert_eq!(first["result"]["resultType"], "input_required");
    let state = first["result"]["requestState"].clone();
    assert!(first["result"]["inputRequests"]["user_name"].is_object());

    let mut retry = modern(
        2,
        "tools/call",
        json!({"name": "test_input_required_result_elicitation",
               "inputResponses": {"user_name": {"action": "accept", "content": {"name": "Ada"}}}}),
        caps,
    );
    if !state.is_null() {
        retry["params"]["requestState"] = state;
    }
    server.send(&retry);
    let second = server.next();
    assert_eq!(second["id"], 2);
    assert_eq!(second["result"]["content"][0]["text"], "Hello, Ada!");
}

#[test]
fn a_request_without_envelope_or_session_names_the_supported_versions() {
    let mut server = StdioServer::start("conformance");
    server.send(&json!({"jsonrpc": "2.0", "id": 7, "method": "tools/list"}));
    let reply = server.next();
    assert_eq!(reply["id"], 7);
    assert_eq!(reply["error"]["code"], -32602);
    assert_eq!(reply["error"]["data"]["supported"], json!(["2026-07-28"]));
}

#[test]
fn a_legacy_client_initializes_and_gets_results_without_result_type() {
    let mut server = StdioServer::start("conformance");
    server.send(&initialize(1, json!({})));
    let init = server.next();
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25");
    assert!(init["result"]["capabilities"]["tools"].is_object());
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "ping"}));
    assert_eq!(
        server.next(),
        json!({"jsonrpc": "2.0", "id": 2, "result": {}})
    );
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "test_simple_text"}}));
    let call = server.next();
    assert_eq!(call["id"], 3);
    assert!(call["result"].get("resultType").is_none(), "{call}");
    assert!(call["result"]["content"][0]["text"].is_string());
}

#[test]
fn the_shim_sends_its_request_while_the_call_is_pending_and_completes_with_the_answer() {
    let mut server = StdioServer::start("conformance");
    let leg = begin_sampling_call(&mut server);
    assert!(
        server.silent_for(Duration::from_millis(200)),
        "no response before the answer"
    );
    answer_paris(&mut server, &leg);
}

/// A legacy session declaring sampling, and a call of `test_sampling` (id 2): the shim's
/// `sampling/createMessage`, checked.
pub(crate) fn begin_sampling_call(server: &mut StdioServer) -> Value {
    server.send(&initialize(1, json!({"sampling": {}})));
    server.next();
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": "Capital of France?"}}}));
    let leg = server.next();
    assert_eq!(leg["method"], "sampling/createMessage", "{leg}");
    assert_eq!(
        leg["params"]["messages"][0]["content"]["text"],
        "Capital of France?"
    );
    leg
}

/// Answers `leg` with "Paris"; the call completes with it.
pub(crate) fn answer_paris(server: &mut StdioServer, leg: &Value) {
    server.send(&json!({"jsonrpc": "2.0", "id": leg["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "test"
    }}));
    let done = server.next();
    assert_eq!(done["id"], 2, "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "LLM response: Paris");
}

#[test]
fn a_cancelled_legacy_call_gets_no_response_and_its_late_answer_changes_nothing() {
    let mut server = StdioServer::start("conformance");
    server.send(&initialize(1, json!({"sampling": {}})));
    server.next();
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": "?"}}}));
    let leg = server.next();
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 2, "reason": "user gave up"}}),
    );
    server.send(&json!({"jsonrpc": "2.0", "id": leg["id"], "result": {
        "role": "assistant", "content": {"type": "text", "text": "late"}, "model": "test"
    }}));
    server.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "ping"}));
    assert_eq!(
        server.next(),
        json!({"jsonrpc": "2.0", "id": 3, "result": {}}),
        "only the ping is answered"
    );
    assert!(server.silent_for(Duration::from_millis(200)));
}

#[test]
fn stdout_carries_only_json_rpc_and_logs_go_to_stderr() {
    let mut server = StdioServer::start("conformance");
    server.send(&modern(1, "server/discover", json!({}), json!({})));
    let reply = server.next();
    assert_eq!(reply["jsonrpc"], "2.0");
    let (status, stderr) = server.finish();
    assert!(status.success(), "exits cleanly at end of input: {status}");
    assert!(stderr.contains("request done"), "logs on stderr: {stderr}");
}

#[test]
fn a_request_whose_input_ends_early_is_still_answered() {
    let mut server = StdioServer::start("conformance");
    server.send(&modern(1, "tools/list", json!({}), json!({})));
    let (status, lines) = server.end_input();
    assert!(status.success());
    assert_eq!(lines.len(), 1, "{lines:?}");
    let reply: Value = serde_json::from_str(&lines[0]).expect("JSON");
    assert_eq!(reply["id"], 1);
    assert!(reply["result"]["tools"].is_array());
}

#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_and_the_next_line_is_still_served() {
    let mut server = StdioServer::start("conformance");
    server.send_raw(b"\xff\xfe{");
    let error = server.next();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    server.send(&modern(2, "server/discover", json!({}), json!({})));
    assert_eq!(server.next()["id"], 2);
}

#[test]
fn a_listen_the_client_cancels_gets_no_response() {
    let mut server = StdioServer::start("conformance");
    let filter = json!({"notifications": {"toolsListChanged": true}});
    server.send(&modern(1, "subscriptions/listen", filter, json!({})));
    let ack = server.next();
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    server.send(
        &json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "done listening"}}),
    );
    server.send(&modern(2, "server/discover", json!({}), json!({})));
    let next = server.next();
    assert_eq!(next["id"], 2, "the cancelled listen was answered: {next}");
    assert!(server.silent_for(Duration::from_millis(200)));
}

#[test]
fn a_legacy_session_on_stdio_is_told_when_its_tenant_s_tools_change() {
    let mut server = StdioServer::start("conformance");
    server.send(&initialize(1, json!({})));
    server.next();
    server.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_trigger_tool_change", "arguments": {}}}));
    let mut seen = vec![server.next(), server.next()];
    seen.sort_by_key(|m| m.get("id").is_some());
    assert_eq!(
        seen[0]["method"], "notifications/tools/list_changed",
        "{seen:?}"
    );
    assert_eq!(seen[1]["id"], 2, "{seen:?}");
}
