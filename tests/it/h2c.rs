//! HTTP/2 cleartext with prior knowledge (h2c) on the listener that serves HTTP/1.1: the same
//! endpoint, the same guard, and the legacy shim's held SSE streams multiplexed on one
//! connection, with the client's answer POSTed on another stream of that connection; a flow
//! whose stream the client resets ends as one whose HTTP/1.1 connection closed.
//!
//! Messages are checked as on HTTP/1.1: modern ones against the 2026-07-28 schema, legacy
//! ones by `check_legacy` (2025-11-25).

use roundtrip::config::Config;
use serde_json::{json, Value};

use crate::support::h2c_client::{within, H2cConnection, H2cStream};
use crate::support::legacy_client::{
    check_legacy, initialize_request, legacy_call, LEGACY_VERSION,
};
use crate::support::{assert_valid, mcp_headers, tool_call, Server, ALICE, DEMO};

/// The tenant holding the conformance fixtures, as `roundtrip serve` names it.
const CONFORMANCE: &str = "conformance";
/// The conformance fixture that asks for a name by form elicitation, then greets it.
const ELICITATION_TOOL: &str = "test_input_required_result_elicitation";

fn path(tenant: &str) -> String {
    format!("/t/{tenant}/mcp")
}

/// What every POST to the MCP endpoint sends: a JSON body, and both reply kinds accepted.
fn base_headers() -> Vec<(String, String)> {
    vec![
        ("content-type".into(), "application/json".into()),
        (
            "accept".into(),
            "application/json, text/event-stream".into(),
        ),
    ]
}

/// The headers of a modern request from alice: the MCP headers `body` implies, her key.
fn modern_headers(body: &Value) -> Vec<(String, String)> {
    let mut headers = base_headers();
    headers.extend(mcp_headers(Some(body)));
    headers.push(("authorization".into(), format!("Bearer {ALICE}")));
    headers
}

/// The headers of a request in legacy session `session`.
fn session_headers(session: &str) -> Vec<(String, String)> {
    let mut headers = base_headers();
    headers.push(("mcp-session-id".into(), session.to_owned()));
    headers.push(("mcp-protocol-version".into(), LEGACY_VERSION.to_owned()));
    headers
}

/// A test server, `tune`d, with the conformance fixtures on their own tenant.
async fn server_with_conformance(tune: impl FnOnce(&mut Config)) -> Server {
    let server = Server::start_with(tune).await;
    let catalog = roundtrip::catalogs::build(&[CONFORMANCE.into()]).expect("the fixtures");
    server.add_tenant(CONFORMANCE, catalog).await;
    server
}

/// A 2025-11-25 session on `conn` declaring form elicitation, the handshake finished with
/// `notifications/initialized`: its id.
async fn legacy_session(conn: &H2cConnection) -> String {
    let initialize = initialize_request(LEGACY_VERSION, json!({"elicitation": {}}));
    let reply = conn
        .post(&path(CONFORMANCE), &base_headers(), &initialize)
        .await;
    assert_eq!(reply.status, 200, "initialize over h2c");
    let session = reply
        .header("mcp-session-id")
        .expect("initialize over h2c begins a session")
        .to_owned();
    let init = reply.json().await;
    check_legacy(Some(&initialize), &init);
    assert_eq!(init["result"]["protocolVersion"], LEGACY_VERSION);

    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let ack = conn
        .post(&path(CONFORMANCE), &session_headers(&session), &initialized)
        .await;
    assert_eq!(ack.status, 202, "notifications/initialized over h2c");
    session
}

/// A legacy call of the elicitation fixture, without the modern envelope: the call, its SSE
/// stream (which stays open) and the shim's `elicitation/create` leg read off it.
async fn open_flow(conn: &H2cConnection, session: &str) -> (Value, H2cStream, Value) {
    let call = legacy_call(1, ELICITATION_TOOL, json!({}));
    let mut flow = conn
        .post(&path(CONFORMANCE), &session_headers(session), &call)
        .await;
    assert_eq!(flow.status, 200);
    assert!(
        flow.is_sse(),
        "a call whose handler asks gets an SSE stream"
    );
    let leg = flow.next_event().await.expect("the shim's leg");
    check_legacy(Some(&call), &leg);
    assert_eq!(leg["method"], "elicitation/create", "{leg}");
    (call, flow, leg)
}

/// Accepts the leg with `name`, POSTed on a new stream of the same connection.
async fn answer_leg(conn: &H2cConnection, session: &str, leg: &Value, name: &str) -> H2cStream {
    let answer = json!({"jsonrpc": "2.0", "id": leg["id"],
        "result": {"action": "accept", "content": {"name": name}}});
    conn.post(&path(CONFORMANCE), &session_headers(session), &answer)
        .await
}

#[actix_web::test]
async fn an_echo_call_over_h2c_is_answered_with_a_modern_result() {
    let server = Server::start().await;
    let conn = H2cConnection::open(server.addr).await;
    let call = tool_call(1, "echo", json!({"text": "over h2c"}), json!({}));
    let reply = conn.post(&path(DEMO), &modern_headers(&call), &call).await;
    assert_eq!(reply.version, http::Version::HTTP_2);
    assert_eq!(reply.status, 200);
    let response = reply.json().await;
    assert_valid("JSONRPCResultResponse", &response);
    assert_valid("CallToolResultResponse", &response);
    assert_eq!(response["id"], 1);
    assert_eq!(response["result"]["resultType"], "complete", "{response}");
    assert_eq!(response["result"]["content"][0]["text"], "over h2c");
    conn.close().await;
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_shim_flow_runs_on_streams_of_one_h2c_connection() {
    let server = server_with_conformance(|_| {}).await;
    let conn = H2cConnection::open(server.addr).await;
    let session = legacy_session(&conn).await;
    let (call, mut flow, leg) = open_flow(&conn, &session).await;

    // The answer travels on another stream of the same connection.
    let accepted = answer_leg(&conn, &session, &leg, "Ada").await;
    assert_eq!(accepted.status, 202, "the answer reaches the waiting flow");
    assert!(accepted.body().await.is_empty(), "a 202 has no body");

    let response = flow.next_event().await.expect("the call's response");
    check_legacy(Some(&call), &response);
    assert_eq!(response["id"], 1);
    assert_eq!(response["result"]["content"][0]["text"], "Hello, Ada!");
    assert!(
        flow.next_event().await.is_none(),
        "the stream ends after the response"
    );
    drop(flow);
    conn.close().await;
    server.stop().await;
}

#[actix_web::test]
async fn resetting_a_flows_stream_over_h2c_forgets_its_pending_leg() {
    let server = server_with_conformance(|c| c.mcp.cancel_grace_ms = 100).await;
    let conn = H2cConnection::open(server.addr).await;
    let session = legacy_session(&conn).await;
    let (_, flow, leg) = open_flow(&conn, &session).await;
    // Dropping the unfinished response resets its stream (RST_STREAM); the connection lives on.
    drop(flow);
    // The server notices at its next write on the stream (keep-alives every 100 ms in tests),
    // which cancels the flow; the flow's run then has `mcp.cancel_grace_ms` (100 ms here) to
    // end, and forgets its leg as it does.
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    let stray = answer_leg(&conn, &session, &leg, "late").await;
    assert_eq!(stray.status, 400, "nobody waits for the answer any more");
    let error = stray.json().await;
    assert_eq!(error["error"]["code"], -32600, "{error}");
    conn.close().await;
    server.stop().await;
}

#[actix_web::test]
async fn the_host_guard_refuses_a_foreign_authority_over_h2c() {
    let server = Server::start().await;
    let conn = H2cConnection::open(server.addr).await;
    let call = tool_call(1, "echo", json!({"text": "rebound"}), json!({}));
    let reply = conn
        .post_as("evil.example", &path(DEMO), &modern_headers(&call), &call)
        .await;
    assert_eq!(reply.status, 403);
    drop(reply);
    // The loopback authority of the same connection is served.
    let allowed = conn.post(&path(DEMO), &modern_headers(&call), &call).await;
    assert_eq!(allowed.status, 200);
    drop(allowed);
    conn.close().await;
    server.stop().await;
}

#[actix_web::test]
async fn http_1_1_is_still_served_on_the_port_that_serves_h2c() {
    let server = Server::start().await;
    let conn = H2cConnection::open(server.addr).await;
    let call = tool_call(1, "echo", json!({"text": "either"}), json!({}));
    let over_h2c = conn.post(&path(DEMO), &modern_headers(&call), &call).await;
    assert_eq!(over_h2c.status, 200);
    assert_eq!(
        over_h2c.json().await["result"]["content"][0]["text"],
        "either"
    );

    let mut request = awc::Client::new().post(format!("http://{}{}", server.addr, path(DEMO)));
    for (name, value) in modern_headers(&call) {
        request = request.insert_header((name, value));
    }
    let mut over_http1 = within("an HTTP/1.1 reply", request.send_json(&call))
        .await
        .expect("HTTP/1.1 is answered");
    assert_eq!(over_http1.version(), awc::http::Version::HTTP_11);
    assert_eq!(over_http1.status().as_u16(), 200);
    let response: Value = within("the HTTP/1.1 body", over_http1.json())
        .await
        .expect("a JSON body");
    assert_eq!(response["result"]["content"][0]["text"], "either");
    conn.close().await;
    server.stop().await;
}
