//! stdio under load and abuse: back-pressure (`stdio.max_in_flight`), the line cap
//! (`stdio.max_line_bytes`) and the drain at the end of input (`stdio.drain_timeout_ms`).
//! The binary where its settings and exit code matter, the in-process server where a lab
//! tool (`slow`, `nap`) is needed.

use std::collections::HashSet;
use std::io::Write;
use std::time::Duration;

use roundtrip::bench::proc_status_kb;
use roundtrip_runtime::handler::Principal;
use roundtrip_runtime::transport::stdio::StdioLimits;
use serde_json::{json, Value};

use crate::stdio::{answer_paris, begin_sampling_call, modern, StdioServer};
use crate::support::stdio_in_process::StdioInProcess;
use crate::support::{rpc, tool_call, Server, LAB};

/// The in-process server on the lab tenant, with `limits`.
async fn lab_stdio(limits: StdioLimits) -> (Server, StdioInProcess) {
    let server = Server::start().await;
    let stdio = StdioInProcess::start_with(server.tenant(LAB), Principal::new("local"), limits);
    (server, stdio)
}

/// The default limits but `max_in_flight`.
fn in_flight(max_in_flight: usize) -> StdioLimits {
    StdioLimits {
        max_in_flight,
        ..StdioLimits::default()
    }
}

/// A modern `tools/call` of the lab tool `name`, without arguments.
fn call(id: u64, name: &str) -> Value {
    tool_call(id, name, json!({}), json!({}))
}

#[test]
fn a_hundred_thousand_piped_requests_get_a_hundred_thousand_answers_in_bounded_memory() {
    const REQUESTS: u64 = 100_000;
    const PEAK_RSS_LIMIT_KB: u64 = 200 * 1024;
    let mut server = StdioServer::start_with("conformance", &[]);
    let pid = server.child.id();
    let mut stdin = server.stdin.take().expect("stdin");
    let writer = std::thread::spawn(move || {
        let mut input = std::io::BufWriter::new(&mut stdin);
        for id in 1..=REQUESTS {
            let line = modern(id, "tools/list", json!({}), json!({}));
            writeln!(input, "{line}").expect("the server reads on");
        }
        input.flush().expect("flush");
    });
    let mut ids = HashSet::new();
    let mut peak_kb = 0;
    while let Ok(line) = server.lines.recv_timeout(Duration::from_secs(30)) {
        let reply: Value = serde_json::from_str(&line).expect("one JSON message per line");
        assert!(reply["result"]["tools"].is_array(), "{reply}");
        let id = reply["id"].as_u64().expect("a numeric id");
        assert!(ids.insert(id), "id {id} answered twice");
        if ids.len() % 5_000 == 0 || ids.len() as u64 == REQUESTS {
            peak_kb = peak_kb.max(proc_status_kb(pid, "VmHWM").unwrap_or(0));
        }
        if ids.len() as u64 == REQUESTS {
            break;
        }
    }
    writer.join().expect("every line written");
    let (status, stderr) = server.finish();
    assert_eq!(ids.len() as u64, REQUESTS, "answers: {}", ids.len());
    assert!(status.success(), "{status}: {stderr}");
    assert!(peak_kb > 0, "the server's VmHWM was read");
    assert!(
        peak_kb < PEAK_RSS_LIMIT_KB,
        "peak RSS {peak_kb} KiB, over {PEAK_RSS_LIMIT_KB} KiB"
    );
}

#[test]
fn a_line_over_the_cap_gets_an_error_naming_the_cap_and_the_next_line_is_answered() {
    let mut server = StdioServer::start_with("conformance", &[]);
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","pad":"{}"}}"#,
        "x".repeat(2 << 20)
    );
    server.send_raw(huge.as_bytes());
    let error = server.next();
    assert_eq!(error["id"], Value::Null, "{error}");
    assert_eq!(error["error"]["code"], -32600, "{error}");
    let message = error["error"]["message"].as_str().expect("a message");
    assert!(
        message.contains("stdio.max_line_bytes (1048576)"),
        "{message}"
    );
    server.send(&modern(2, "server/discover", json!({}), json!({})));
    assert_eq!(server.next()["id"], 2);
}

#[test]
fn a_line_of_exactly_the_cap_is_served() {
    let mut server = StdioServer::start_with(
        "conformance",
        &[("ROUNDTRIP_STDIO__MAX_LINE_BYTES", "1000")],
    );
    let mut line = modern(1, "server/discover", json!({}), json!({})).to_string();
    let pad = 1000 - line.len();
    line.push_str(&" ".repeat(pad));
    server.send_raw(line.as_bytes());
    assert_eq!(server.next()["id"], 1);
    line.push(' ');
    server.send_raw(line.as_bytes());
    assert_eq!(server.next()["error"]["code"], -32600);
}

#[actix_web::test]
async fn with_max_in_flight_requests_running_the_next_line_is_not_read() {
    let (_server, mut stdio) = lab_stdio(in_flight(2)).await;
    stdio.send(&call(1, "slow")).await;
    stdio.send(&call(2, "slow")).await;
    stdio.send(&rpc(3, "server/discover", json!({}))).await;
    assert!(
        stdio.silent_for(Duration::from_millis(500)).await,
        "the third line was read and answered while two slow calls ran"
    );
}

#[actix_web::test]
async fn a_line_waiting_for_a_slot_is_served_once_a_request_finishes() {
    let (_server, mut stdio) = lab_stdio(in_flight(1)).await;
    stdio.send(&call(1, "nap")).await;
    stdio.send(&rpc(2, "server/discover", json!({}))).await;
    assert_eq!(stdio.next().await["id"], 1, "the nap answers first");
    assert_eq!(stdio.next().await["id"], 2);
}

#[actix_web::test]
async fn a_listen_stream_does_not_hold_a_slot() {
    let (_server, mut stdio) = lab_stdio(in_flight(1)).await;
    let filter = json!({"notifications": {"toolsListChanged": true}});
    stdio.send(&rpc(1, "subscriptions/listen", filter)).await;
    assert_eq!(
        stdio.next().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    let discover = stdio.request(&rpc(2, "server/discover", json!({}))).await;
    assert_eq!(discover["result"]["resultType"], "complete", "{discover}");
    let served = stdio.finish().await;
    assert_eq!(stdio.next().await["id"], 1, "the listen's closing result");
    assert_eq!(served.timed_out, 0);
}

#[actix_web::test]
async fn listen_streams_past_max_in_flight_are_refused_with_too_many_requests() {
    let (_server, mut stdio) = lab_stdio(in_flight(1)).await;
    let filter = json!({"notifications": {"toolsListChanged": true}});
    stdio
        .send(&rpc(1, "subscriptions/listen", filter.clone()))
        .await;
    assert_eq!(
        stdio.next().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    let refused = stdio.request(&rpc(2, "subscriptions/listen", filter)).await;
    assert_eq!(refused["error"]["code"], -31429, "{refused}");
    let message = refused["error"]["message"].as_str().expect("a message");
    assert!(message.contains("stdio.max_in_flight"), "{message}");
}

#[actix_web::test]
async fn a_request_still_running_when_the_drain_times_out_gets_its_own_error() {
    let limits = StdioLimits {
        drain_timeout: Duration::from_millis(200),
        ..StdioLimits::default()
    };
    let (_server, mut stdio) = lab_stdio(limits).await;
    stdio.send(&call(7, "slow")).await;
    stdio.send(&call(8, "quiet")).await;
    assert_eq!(stdio.next().await["id"], 8);
    let served = stdio.finish().await;
    assert_eq!(served.timed_out, 1);
    let error = stdio.next().await;
    assert_eq!(error["id"], 7, "{error}");
    assert_eq!(error["error"]["code"], -32603, "{error}");
    let message = error["error"]["message"].as_str().expect("a message");
    assert!(message.contains("drain timed out"), "{message}");
}

#[test]
fn a_slow_request_in_flight_at_the_end_of_input_is_answered() {
    let mut server = StdioServer::start_with("conformance", &[]);
    // Three progress steps 50 ms apart: still running when stdin closes.
    server.send(&modern(
        1,
        "tools/call",
        json!({"name": "test_tool_with_progress"}),
        json!({}),
    ));
    let (status, lines) = server.end_input();
    assert!(status.success(), "{status}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let reply: Value = serde_json::from_str(&lines[0]).expect("JSON");
    assert_eq!(reply["id"], 1);
    assert_eq!(
        reply["result"]["content"][0]["text"],
        "Completed all 100 steps."
    );
}

#[test]
fn the_command_exits_1_when_the_drain_times_out() {
    let mut server =
        StdioServer::start_with("conformance", &[("ROUNDTRIP_STDIO__DRAIN_TIMEOUT_MS", "1")]);
    server.send(&modern(
        1,
        "tools/call",
        json!({"name": "test_tool_with_progress"}),
        json!({}),
    ));
    let (status, lines) = server.end_input();
    assert_eq!(status.code(), Some(1), "{lines:?}");
    assert_eq!(lines.len(), 1, "{lines:?}");
    let reply: Value = serde_json::from_str(&lines[0]).expect("JSON");
    assert_eq!(
        (reply["id"].clone(), reply["error"]["code"].clone()),
        (json!(1), json!(-32603))
    );
}

#[test]
fn a_legacy_call_waiting_for_the_client_s_answer_does_not_hold_a_slot() {
    let mut server =
        StdioServer::start_with("conformance", &[("ROUNDTRIP_STDIO__MAX_IN_FLIGHT", "1")]);
    // Without the slot given back, the answer below would never be read.
    let leg = begin_sampling_call(&mut server);
    answer_paris(&mut server, &leg);
}

#[test]
fn the_command_exits_1_when_stdout_closes_before_every_answer_is_written() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(["stdio", "--tenant", "conformance"])
        .env("ROUNDTRIP_DATA_DIR", crate::support::scratch_dir())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("roundtrip stdio starts");
    drop(child.stdout.take());
    let mut stdin = child.stdin.take().expect("stdin");
    for id in 1..=10 {
        let line = modern(id, "server/discover", json!({}), json!({}));
        // The server may already have stopped reading: a failed write is what we expect then.
        if writeln!(stdin, "{line}").is_err() {
            break;
        }
    }
    drop(stdin);
    let status = child.wait().expect("exits");
    assert_eq!(status.code(), Some(1), "{status}");
}
