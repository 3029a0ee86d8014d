//! Bodies that are not valid JSON-RPC requests: each gets a JSON-RPC error with the right code,
//! a 4xx status and, when the body had a readable id, that id; never a 5xx or a hang.

use std::panic::AssertUnwindSafe;

use serde_json::{json, Value};

use crate::support::{meta, rpc, Server, ALICE, DEMO, LAB};

fn list_tools(params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params})
}

#[actix_web::test]
async fn malformed_json_is_a_parse_error_with_http_400() {
    let server = Server::start().await;
    let reply = server
        .raw(LAB, r#"{"jsonrpc": "2.0", "id": 1,"#)
        .send()
        .await;
    reply.error(-32700, 400);
    assert!(
        reply.json().get("id").is_none(),
        "no id can be read from broken JSON: {reply:?}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_batch_is_an_invalid_request_with_http_400() {
    let server = Server::start().await;
    let batch = json!([
        rpc(1, "tools/list", json!({})),
        rpc(2, "tools/list", json!({}))
    ]);
    server.post(LAB, &batch).send().await.error(-32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn params_that_are_not_an_object_are_an_invalid_request_that_keeps_the_id() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": "p-1", "method": "tools/list", "params": [1, 2]});
    let reply = server.send(LAB, &body).await;
    reply.error(-32600, 400);
    assert_eq!(reply.json()["id"], "p-1");
    server.stop().await;
}

#[actix_web::test]
async fn a_null_id_is_an_invalid_request() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": null, "method": "tools/list", "params": {"_meta": meta(json!({}))}});
    server.send(LAB, &body).await.error(-32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_object_id_is_an_invalid_request() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": {"n": 1}, "method": "tools/list", "params": {"_meta": meta(json!({}))}});
    server.send(LAB, &body).await.error(-32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_fractional_id_is_an_invalid_request() {
    // MCP's RequestId is a string or an integer; echoing 1.5 back would break the schema.
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": 1.5, "method": "tools/list", "params": {"_meta": meta(json!({}))}});
    server.send(LAB, &body).await.error(-32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_id_beyond_the_integer_range_is_an_invalid_request() {
    // Parsed as a double, it could only be echoed back rounded (and as a non-integer).
    let server = Server::start().await;
    let body = r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}"#;
    server.raw(LAB, body).send().await.error(-32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_missing_jsonrpc_member_is_an_invalid_request_that_keeps_the_id() {
    let server = Server::start().await;
    let body = json!({"id": 7, "method": "tools/list", "params": {"_meta": meta(json!({}))}});
    let reply = server.send(LAB, &body).await;
    reply.error(-32600, 400);
    assert_eq!(reply.json()["id"], 7);
    server.stop().await;
}

#[actix_web::test]
async fn a_method_that_is_not_a_string_is_an_invalid_request_that_keeps_the_id() {
    let server = Server::start().await;
    let body =
        json!({"jsonrpc": "2.0", "id": 8, "method": 42, "params": {"_meta": meta(json!({}))}});
    let reply = server.send(LAB, &body).await;
    reply.error(-32600, 400);
    assert_eq!(reply.json()["id"], 8);
    server.stop().await;
}

#[actix_web::test]
async fn a_client_response_is_refused_because_no_server_request_awaits_it() {
    let server = Server::start().await;
    let body = json!({"jsonrpc": "2.0", "id": "srv-1", "result": {"action": "accept"}});
    let reply = server.send(LAB, &body).await;
    reply.error(-32600, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_client_notification_is_accepted_with_202_and_no_body() {
    let server = Server::start().await;
    let body =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    let reply = server.send(LAB, &body).await;
    assert_eq!(reply.status, 202, "{reply:?}");
    assert!(reply.body.is_empty(), "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_notification_needs_a_known_tenant_and_a_valid_key_like_any_request() {
    let server = Server::start().await;
    let body =
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}});
    server.send("nobody", &body).await.error(-31004, 404);
    server.send(DEMO, &body).await.error(-31001, 401);
    let accepted = server.post(DEMO, &body).bearer(ALICE).send().await;
    assert_eq!(accepted.status, 202, "{accepted:?}");
    server.stop().await;
}

/// One malformed body and the codes it may get.
struct Case {
    name: &'static str,
    body: Vec<u8>,
    codes: &'static [i64],
}

fn case(name: &'static str, body: impl Into<Vec<u8>>, codes: &'static [i64]) -> Case {
    Case {
        name,
        body: body.into(),
        codes,
    }
}

fn json_case(name: &'static str, body: Value, codes: &'static [i64]) -> Case {
    case(name, serde_json::to_vec(&body).expect("JSON"), codes)
}

fn call_with(params: Value) -> Value {
    let mut p =
        json!({"name": "ask_form", "arguments": {}, "_meta": meta(json!({"elicitation": {}}))});
    for (k, v) in params.as_object().expect("object") {
        p[k] = v.clone();
    }
    json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": p})
}

fn corpus() -> Vec<Case> {
    const PARSE: &[i64] = &[-32700];
    const INVALID: &[i64] = &[-32600];
    const PARAMS: &[i64] = &[-32602];
    let deep_arrays = "[".repeat(100_000);
    let deep_objects = format!("{}1{}", r#"{"a":"#.repeat(5_000), "}".repeat(5_000));
    let deep_params = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"x":{}1{}}}}}"#,
        "[".repeat(1_000),
        "]".repeat(1_000)
    );
    let mut invalid_utf8 =
        br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"x":""#.to_vec();
    invalid_utf8.extend_from_slice(&[0xff, 0xfe, 0xc3]);
    invalid_utf8.extend_from_slice(br#""}}"#);
    let mut bom = vec![0xef, 0xbb, 0xbf];
    bom.extend_from_slice(br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#);
    vec![
        case("empty body", "", PARSE),
        case("whitespace only", "  \n ", PARSE),
        case("truncated object", r#"{"jsonrpc":"2.0","#, PARSE),
        case(
            "trailing garbage",
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"} x"#,
            PARSE,
        ),
        case("single quotes", r#"{'jsonrpc':'2.0'}"#, PARSE),
        case("deeply nested arrays", deep_arrays, PARSE),
        case("deeply nested objects", deep_objects, PARSE),
        case("deeply nested params", deep_params, PARSE),
        case("invalid UTF-8 in a string", invalid_utf8, PARSE),
        case("a byte-order mark", bom, PARSE),
        case(
            "a number too large for a double",
            r#"{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}"#,
            PARSE,
        ),
        case(
            "NaN",
            r#"{"jsonrpc":"2.0","id":NaN,"method":"tools/list"}"#,
            PARSE,
        ),
        case("null", "null", INVALID),
        case("a string", r#""str""#, INVALID),
        case("a number", "42", INVALID),
        case("an empty object", "{}", INVALID),
        case("an empty batch", "[]", INVALID),
        json_case(
            "jsonrpc 1.0",
            json!({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}),
            INVALID,
        ),
        json_case(
            "jsonrpc as a number",
            json!({"jsonrpc": 2.0, "id": 1, "method": "tools/list"}),
            INVALID,
        ),
        json_case(
            "an id that is an array",
            json!({"jsonrpc": "2.0", "id": [1], "method": "tools/list"}),
            INVALID,
        ),
        json_case(
            "an id that is a boolean",
            json!({"jsonrpc": "2.0", "id": true, "method": "tools/list"}),
            INVALID,
        ),
        json_case(
            "a method that is null",
            json!({"jsonrpc": "2.0", "id": 1, "method": null}),
            INVALID,
        ),
        json_case(
            "params null",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": null}),
            INVALID,
        ),
        json_case(
            "params a string",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": "x"}),
            INVALID,
        ),
        json_case(
            "a response with both result and error",
            json!({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}}),
            INVALID,
        ),
        json_case(
            "no params at all",
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
            PARAMS,
        ),
        json_case("missing _meta", list_tools(json!({})), PARAMS),
        json_case(
            "_meta not an object",
            list_tools(json!({"_meta": "2026-07-28"})),
            PARAMS,
        ),
        json_case("_meta null", list_tools(json!({"_meta": null})), PARAMS),
        json_case(
            "protocolVersion not a string",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": 20260728, "io.modelcontextprotocol/clientCapabilities": {}}}),
            ),
            &[-32602, -32020],
        ),
        json_case(
            "capabilities not an object",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": ["elicitation"]}}),
            ),
            PARAMS,
        ),
        json_case(
            "capabilities null",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": null}}),
            ),
            PARAMS,
        ),
        json_case(
            "an unknown logLevel",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/logLevel": "loud"}}),
            ),
            PARAMS,
        ),
        json_case(
            "a logLevel that is a number",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "io.modelcontextprotocol/logLevel": 3}}),
            ),
            PARAMS,
        ),
        json_case(
            "a progressToken that is an object",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": {"t": 1}}}),
            ),
            PARAMS,
        ),
        json_case(
            "a progressToken that is a boolean",
            list_tools(
                json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}, "progressToken": true}}),
            ),
            PARAMS,
        ),
        json_case(
            "a tool name that is a number",
            call_with(json!({"name": 5})),
            &[-32602, -32020],
        ),
        json_case(
            "arguments as an array",
            call_with(json!({"arguments": [1, 2]})),
            PARAMS,
        ),
        json_case(
            "arguments as a string",
            call_with(json!({"arguments": "a=1"})),
            PARAMS,
        ),
        json_case(
            "inputResponses null",
            call_with(json!({"inputResponses": null})),
            PARAMS,
        ),
        json_case(
            "inputResponses an array",
            call_with(json!({"inputResponses": [{"action": "accept"}]})),
            PARAMS,
        ),
        json_case(
            "inputResponses a number",
            call_with(json!({"inputResponses": 12345})),
            PARAMS,
        ),
        json_case(
            "an inputResponses value that is not an object",
            call_with(json!({"inputResponses": {"form": 12345}})),
            PARAMS,
        ),
        json_case(
            "an inputResponses value that is a string",
            call_with(json!({"inputResponses": {"form": "accept"}})),
            PARAMS,
        ),
        json_case(
            "requestState a number",
            call_with(json!({"requestState": 7})),
            PARAMS,
        ),
        json_case(
            "requestState an object",
            call_with(json!({"requestState": {"round": 1}})),
            PARAMS,
        ),
        json_case(
            "requestState an empty string",
            call_with(json!({"requestState": ""})),
            PARAMS,
        ),
        json_case(
            "requestState garbage",
            call_with(json!({"requestState": "not-a-token"})),
            PARAMS,
        ),
        json_case(
            "a cursor on a list",
            list_tools(json!({"cursor": "page-2", "_meta": meta(json!({}))})),
            PARAMS,
        ),
        json_case(
            "completion without a ref",
            rpc(
                1,
                "completion/complete",
                json!({"argument": {"name": "topic", "value": "r"}}),
            ),
            PARAMS,
        ),
        json_case(
            "listen without a filter",
            rpc(1, "subscriptions/listen", json!({})),
            PARAMS,
        ),
    ]
}

#[actix_web::test]
async fn every_malformed_envelope_gets_a_json_rpc_error_and_the_server_keeps_serving() {
    let server = Server::start().await;
    let mut failures = Vec::new();
    let cases = corpus();
    assert!(cases.len() >= 30);
    for c in &cases {
        let reply = server.raw(LAB, c.body.clone()).send_unchecked().await;
        if let Err(panic) = std::panic::catch_unwind(AssertUnwindSafe(|| reply.check())) {
            let why = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                .unwrap_or_default();
            failures.push(format!("{}: {why}", c.name));
            continue;
        }
        let code = (!reply.is_sse() && reply.content_type().starts_with("application/json"))
            .then(|| reply.json()["error"]["code"].as_i64())
            .flatten();
        let ok = (400..500).contains(&reply.status) && code.is_some_and(|c2| c.codes.contains(&c2));
        if !ok {
            failures.push(format!(
                "{}: expected one of {:?} with a 4xx, got {reply:?}",
                c.name, c.codes
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} malformed envelopes were mishandled:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    let tools = server
        .send(LAB, &rpc(99, "tools/list", json!({})))
        .await
        .result();
    assert!(tools["tools"].as_array().is_some_and(|t| !t.is_empty()));
    server.stop().await;
}
