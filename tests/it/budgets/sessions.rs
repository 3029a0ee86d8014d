//! Byte budgets on legacy sessions: what a session keeps (`figures::SESSION` and its
//! capabilities), its GET streams, its held flows (`figures::FLOW` and 2¼ times their params)
//! and the answers they hold are charged to its caller, its tenant and the process; the
//! session's end gives them back. Bounded capabilities.

use std::time::Duration;

use awc::http::Method;
use roundtrip_runtime::budget::figures::{kept_request, FLOW, SESSION, SESSION_STREAM};
use serde_json::json;

use super::assert_refused;
use crate::support::legacy_client::{all_caps, legacy_call, LEGACY_VERSION};
use crate::support::{tool_call, Server, ALICE, BOB, DEMO, LAB, LAB2};

/// Room for two sessions declaring nothing, not three.
const TWO_SESSIONS: u64 = 2 * SESSION + SESSION / 2;

#[actix_web::test]
async fn a_caller_over_its_byte_budget_is_refused_with_429_while_another_caller_is_served() {
    let server = Server::start_with(|c| c.budgets.caller_bytes = TWO_SESSIONS).await;
    let first = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    let _second = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    let refused = server
        .initialize_reply(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    assert_refused(&refused, -31429, 429, Some("caller"));
    assert!(refused.header("mcp-session-id").is_none());
    // Nothing held is lost, and another caller of the same tenant is served.
    assert_eq!(first.ping().await.json()["result"], json!({}));
    let bob = server
        .initialize_reply(DEMO, Some(BOB), LEGACY_VERSION, json!({}))
        .await;
    assert_eq!(bob.status, 200, "{bob:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_over_its_byte_budget_is_refused_with_429_while_another_tenant_is_served() {
    let server = Server::start_with(|c| c.budgets.tenant_bytes = TWO_SESSIONS).await;
    let _a = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    let _b = server
        .legacy_session_as(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    let refused = server
        .initialize_reply(DEMO, Some(BOB), LEGACY_VERSION, json!({}))
        .await;
    assert_refused(&refused, -31429, 429, Some("tenant"));
    let other = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    assert_eq!(other.status, 200, "{other:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_tenants_own_memory_budget_replaces_the_servers_for_that_tenant_only() {
    let server = Server::start().await;
    let body = json!({"memory_budget_bytes": TWO_SESSIONS});
    let patched = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await;
    assert_eq!(
        patched.problem_or_json()["memory_budget_bytes"],
        TWO_SESSIONS
    );
    let _a = server.legacy_session(LAB, json!({})).await;
    let _b = server
        .legacy_session_as(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    // Two anonymous sessions from one address fill the tenant's budget.
    let refused = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    let error = assert_refused(&refused, -31429, 429, Some("tenant"));
    assert_eq!(error["data"]["budget"]["max"], TWO_SESSIONS);
    let other = server
        .initialize_reply(LAB2, None, LEGACY_VERSION, json!({}))
        .await;
    assert_eq!(other.status, 200, "{other:?}");
    server.stop().await;
}

#[actix_web::test]
async fn the_process_over_its_byte_ceiling_refuses_with_503_and_still_answers_calls() {
    let server = Server::start_with(|c| c.budgets.process_bytes = TWO_SESSIONS).await;
    let held = server.legacy_session(LAB, json!({})).await;
    let _other = server.legacy_session(LAB2, json!({})).await;
    let refused = server
        .initialize_reply(DEMO, Some(ALICE), LEGACY_VERSION, json!({}))
        .await;
    assert_refused(&refused, -31503, 503, Some("process"));
    assert_eq!(held.ping().await.json()["result"], json!({}));
    let call = tool_call(1, "echo", json!({"text": "still here"}), json!({}));
    let reply = server.post(DEMO, &call).bearer(ALICE).send().await;
    assert_eq!(reply.status, 200, "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn deleting_a_session_gives_its_bytes_back() {
    let server = Server::start_with(|c| c.budgets.caller_bytes = TWO_SESSIONS).await;
    let first = server.legacy_session(LAB, json!({})).await;
    let _second = server.legacy_session(LAB, json!({})).await;
    let refused = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    assert_refused(&refused, -31429, 429, Some("caller"));
    assert_eq!(first.delete().await.status, 200);
    // The session's actor stops (and lets go of its charge) just after the DELETE answers.
    let mut again = None;
    for _ in 0..50 {
        let reply = server
            .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
            .await;
        if reply.status == 200 {
            again = Some(reply);
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(again.is_some(), "the deleted session's budget came back");
    server.stop().await;
}

#[actix_web::test]
async fn a_held_flow_is_charged_its_params_until_it_ends() {
    // A session and a flow with 20 kB of arguments (charged 2¼ times) leave no room for a
    // second session; once the flow ends there is.
    let budget = SESSION + FLOW + kept_request(20_000) + SESSION / 2;
    let server = Server::start_with(|c| c.budgets.caller_bytes = budget).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let pad = "x".repeat(20_000);
    let mut flow = session
        .open(&legacy_call(1, "ask_form", json!({"pad": pad})))
        .await;
    let leg = flow.next_request().await;
    let refused = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    assert_refused(&refused, -31429, 429, Some("caller"));
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    assert_eq!(session.answer(&leg["id"], answer).await.status, 202);
    let _ = flow.response().await;
    let again = server
        .initialize_reply(LAB, None, LEGACY_VERSION, json!({}))
        .await;
    assert_eq!(again.status, 200, "the flow's bytes came back: {again:?}");
    server.stop().await;
}

#[actix_web::test]
async fn an_answer_that_would_pass_the_budget_is_refused_and_its_leg_goes_on_waiting() {
    let budget = SESSION + FLOW + 10_000;
    let server = Server::start_with(|c| c.budgets.caller_bytes = budget).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut flow = session.open(&legacy_call(1, "ask_form", json!({}))).await;
    let leg = flow.next_request().await;
    let big = json!({"action": "accept", "content": {"name": "x".repeat(40_000)}});
    let refused = session.answer(&leg["id"], big).await;
    assert_refused(&refused, -31429, 429, Some("caller"));
    let answer = json!({"action": "accept", "content": {"name": "Ada"}});
    assert_eq!(session.answer(&leg["id"], answer).await.status, 202);
    let response = flow.response().await;
    assert!(response.get("result").is_some(), "{response}");
    server.stop().await;
}

#[actix_web::test]
async fn a_request_whose_params_would_pass_the_budget_is_refused_with_429() {
    let budget = SESSION + FLOW + 10_000;
    let server = Server::start_with(|c| c.budgets.caller_bytes = budget).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let big = "x".repeat(30_000);
    let reply = session
        .post(&legacy_call(2, "quiet", json!({"text": big})))
        .send_unchecked()
        .await;
    assert_refused(&reply, -31429, 429, Some("caller"));
    let small = session
        .post(&legacy_call(3, "quiet", json!({"text": "hi"})))
        .send_unchecked()
        .await;
    assert_eq!(small.status, 200, "{small:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_get_stream_past_the_budget_is_refused_with_429() {
    // One session and one GET stream fit; a second stream does not.
    let budget = SESSION + SESSION_STREAM + SESSION_STREAM / 2;
    let server = Server::start_with(|c| c.budgets.caller_bytes = budget).await;
    let session = server.legacy_session(LAB, json!({})).await;
    let first = session.listen().await;
    assert!(first.is_sse(), "the first stream opens");
    let second = session.listen().await;
    assert_eq!(second.status, 429, "the second stream is refused");
    assert!(second.headers.get("retry-after").is_some());
    server.stop().await;
}

#[actix_web::test]
async fn an_experimental_capability_above_16_kib_is_refused_with_invalid_params_naming_the_cap() {
    let server = Server::start().await;
    let big = "x".repeat(20_000);
    let reply = server
        .initialize_reply(
            LAB,
            None,
            LEGACY_VERSION,
            json!({"experimental": {"blob": big}}),
        )
        .await;
    assert_eq!(reply.status, 400, "{reply:?}");
    let error = &reply.json()["error"];
    assert_eq!(error["code"], -32602, "{error}");
    let message = error["message"].as_str().expect("a message");
    assert!(
        message.contains("experimental") && message.contains("16384"),
        "{message}"
    );
    assert!(reply.header("mcp-session-id").is_none());
    server.stop().await;
}

#[actix_web::test]
async fn a_process_budget_above_three_quarters_of_the_machine_stops_the_start() {
    let mut config = roundtrip::config::Config {
        listen: "127.0.0.1:0".into(),
        ..roundtrip::config::Config::default()
    };
    config.budgets.process_bytes = 1 << 60;
    config.data_dir = crate::support::scratch_dir().display().to_string();
    let error = match roundtrip::wiring::start(&config).await {
        Ok(_) => panic!("a server started with a 1 EiB memory budget"),
        Err(e) => e.to_string(),
    };
    assert!(error.contains("process memory budget"), "{error}");
}

#[test]
fn a_process_budget_above_three_quarters_of_the_machine_stops_stdio() {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(["stdio", "--tenant", "conformance"])
        .env("ROUNDTRIP_DATA_DIR", crate::support::scratch_dir())
        .env("ROUNDTRIP_BUDGETS__PROCESS_BYTES", (1u64 << 60).to_string())
        .env_remove("RUST_LOG")
        .stdin(std::process::Stdio::null())
        .output()
        .expect("roundtrip stdio runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success(),
        "stdio served with a 1 EiB memory budget"
    );
    assert!(stderr.contains("process memory budget"), "{stderr}");
    assert!(out.stdout.is_empty(), "nothing on stdout");
}
