//! What the client puts on the wire: the 2026-07-28 headers and `_meta` envelope (seen by a
//! scripted server), capabilities that follow the registered handlers, `Mcp-Param-*` learnt
//! from `tools/list` (and accepted by our server), invalid tools, and a legacy session's id.

use base64::Engine as _;
use roundtrip_client::protocol::input::Root;
use roundtrip_client::{Client, EraChoice, Error};
use serde_json::{json, Value};

use super::answers::{answering, named, Asked};
use super::scripted::{initialized, Reply, Scripted, Seen};
use crate::support::{Server, LAB};

const META: &str = "io.modelcontextprotocol/";

fn b64(s: &str) -> String {
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(s)
    )
}

/// A modern server whose tools/list names `tools`; every other request completes.
async fn modern_with(tools: Value) -> Scripted {
    Scripted::start(move |seen| match seen.method() {
        "tools/list" => Reply::result(seen, json!({"resultType": "complete", "tools": tools.clone(), "ttlMs": 0, "cacheScope": "private"})),
        _ => Reply::result(seen, json!({"resultType": "complete", "content": [], "contents": [], "messages": []})),
    })
    .await
}

async fn modern_client(server: &Scripted) -> Client {
    answering(&Asked::default(), named("x"))
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects")
}

fn meta(seen: &Seen) -> &Value {
    &seen.body["params"]["_meta"]
}

#[actix_web::test]
async fn a_modern_call_carries_version_method_and_name_headers_and_the_envelope() {
    let server = modern_with(json!([])).await;
    modern_client(&server)
        .await
        .call_tool("my-tool", json!({"a": 1}))
        .await
        .expect("completes");
    let call = &server.calls("tools/call")[0];
    assert_eq!(call.header("mcp-protocol-version"), Some("2026-07-28"));
    assert_eq!(call.header("mcp-method"), Some("tools/call"));
    assert_eq!(call.header("mcp-name"), Some("my-tool"));
    assert_eq!(
        call.header("accept"),
        Some("application/json, text/event-stream")
    );
    let meta = meta(call);
    assert_eq!(meta[format!("{META}protocolVersion")], "2026-07-28");
    assert_eq!(
        meta[format!("{META}clientInfo")],
        json!({"name": "roundtrip-it", "version": "0.0.0"})
    );
    assert_eq!(
        meta[format!("{META}clientCapabilities")],
        json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}})
    );
}

#[actix_web::test]
async fn declared_capabilities_follow_the_registered_handlers_in_both_eras() {
    let server = Scripted::start(|seen| match seen.method() {
        "initialize" => Reply::result(seen, initialized("2025-11-25")),
        "notifications/initialized" => Reply::empty(202),
        _ => Reply::result(seen, json!({"resultType": "complete", "tools": []})),
    })
    .await;
    let roots_only = || Client::builder().roots(vec![Root::new("file:///r", None)]);
    roots_only()
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects")
        .list_tools()
        .await
        .expect("tools");
    roots_only()
        .era(EraChoice::Legacy)
        .connect_http(&server.url)
        .await
        .expect("connects");
    let list = &server.calls("tools/list")[0];
    assert_eq!(
        meta(list)[format!("{META}clientCapabilities")],
        json!({"roots": {}})
    );
    let init = &server.calls("initialize")[0];
    assert_eq!(init.body["params"]["capabilities"], json!({"roots": {}}));
    assert_eq!(init.body["params"]["protocolVersion"], "2025-11-25");
}

#[actix_web::test]
async fn a_name_that_is_not_plain_ascii_is_base64_wrapped() {
    let server = modern_with(json!([])).await;
    modern_client(&server)
        .await
        .read_resource("file:///Zürich notes.txt")
        .await
        .expect("reads");
    let read = &server.calls("resources/read")[0];
    assert_eq!(
        read.header("mcp-name"),
        Some(b64("file:///Zürich notes.txt").as_str())
    );
}

#[actix_web::test]
async fn annotated_arguments_are_mirrored_once_tools_list_named_them() {
    let server = modern_with(
        json!([{"name": "custom", "inputSchema": {"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "priority": {"type": "integer", "x-mcp-header": "Priority"},
            "debug": {"type": "boolean", "x-mcp-header": "Debug"},
            "greeting": {"type": "string", "x-mcp-header": "Greeting"},
            "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
            "query": {"type": "string"}
        }}}]),
    )
    .await;
    let client = modern_client(&server).await;
    client.list_tools().await.expect("tools");
    client
        .call_tool(
            "custom",
            json!({"region": "us-west1", "priority": 42, "debug": true,
            "greeting": " Hello, 世界", "verbose": null, "query": "SELECT 1"}),
        )
        .await
        .expect("completes");
    let call = &server.calls("tools/call")[0];
    assert_eq!(call.header("mcp-param-region"), Some("us-west1"));
    assert_eq!(call.header("mcp-param-priority"), Some("42"));
    assert_eq!(call.header("mcp-param-debug"), Some("true"));
    assert_eq!(
        call.header("mcp-param-greeting"),
        Some(b64(" Hello, 世界").as_str())
    );
    assert_eq!(
        call.header("mcp-param-verbose"),
        None,
        "null is not mirrored"
    );
    assert_eq!(
        call.header("mcp-param-query"),
        None,
        "unannotated is not mirrored"
    );
}

#[actix_web::test]
async fn a_tool_with_invalid_annotations_is_dropped_and_never_called() {
    let server = modern_with(json!([
        {"name": "valid_tool", "inputSchema": {"type": "object", "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}}},
        {"name": "invalid_space", "inputSchema": {"type": "object", "properties": {"v": {"type": "string", "x-mcp-header": "My Region"}}}}
    ]))
    .await;
    let client = modern_client(&server).await;
    let tools = client.list_tools().await.expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["valid_tool"]);
    let err = client
        .call_tool("invalid_space", json!({"v": "x"}))
        .await
        .expect_err("refused");
    assert!(
        matches!(err, Error::InvalidTool { ref name, .. } if name == "invalid_space"),
        "{err:?}"
    );
    assert!(server.calls("tools/call").is_empty());
}

#[actix_web::test]
async fn our_server_accepts_the_mirrored_headers_even_before_tools_were_listed() {
    let server = Server::start().await;
    let client = answering(&Asked::default(), named("x"))
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    // Not listed yet: the server answers -32020, the client lists the tools and retries.
    let result = client
        .call_tool(
            "regional",
            json!({"region": "Zürich", "count": 3, "note": "n"}),
        )
        .await
        .expect("completes");
    assert_eq!(
        result.structured_content,
        Some(json!({"region": "Zürich", "count": 3, "note": "n"}))
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_session_sends_its_id_and_version_and_extra_headers_on_every_request() {
    let server = Scripted::start(|seen| match seen.method() {
        "initialize" => {
            Reply::result(seen, initialized("2025-06-18")).with_header("mcp-session-id", "sess-1")
        }
        "notifications/initialized" => Reply::empty(202),
        _ => Reply::result(seen, json!({"tools": []})),
    })
    .await;
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .bearer("t0ken")
        .header("x-tenant", "acme")
        .connect_http(&server.url)
        .await
        .expect("initializes");
    client.list_tools().await.expect("tools");
    let seen = server.seen();
    assert_eq!(seen[0].header("mcp-session-id"), None);
    assert_eq!(
        seen[0].header("mcp-protocol-version"),
        None,
        "initialize names its version in the body"
    );
    for later in &seen[1..] {
        assert_eq!(later.header("mcp-session-id"), Some("sess-1"), "{later:?}");
        assert_eq!(later.header("mcp-protocol-version"), Some("2025-06-18"));
        assert!(
            later.body["params"].get("_meta").is_none(),
            "no envelope on a legacy request"
        );
    }
    for any in &seen {
        assert_eq!(any.header("authorization"), Some("Bearer t0ken"));
        assert_eq!(any.header("x-tenant"), Some("acme"));
    }
    client.close().await;
    assert_eq!(
        server.seen().last().map(|s| (
            s.http.clone(),
            s.header("mcp-session-id").map(str::to_owned)
        )),
        Some(("DELETE".to_owned(), Some("sess-1".to_owned())))
    );
}
