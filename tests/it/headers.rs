//! HTTP headers that mirror the body (SEP-2243): `MCP-Protocol-Version`, `Mcp-Method`,
//! `Mcp-Name` and `Mcp-Param-*`. A missing or different header is -32020 with HTTP 400.

use serde_json::{json, Value};

use crate::support::{b64_header, rpc, tool_call, Server, LAB};

fn list() -> Value {
    rpc("l", "tools/list", json!({}))
}

#[actix_web::test]
async fn a_missing_protocol_version_header_is_a_header_mismatch() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &list())
        .without("mcp-protocol-version")
        .send()
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_protocol_version_header_that_differs_from_meta_is_a_header_mismatch() {
    let server = Server::start().await;
    for header in ["2025-11-25", "1999-01-01", "2026-07-29"] {
        let reply = server
            .post(LAB, &list())
            .header("mcp-protocol-version", header)
            .send()
            .await;
        reply.error(-32020, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_missing_mcp_method_header_is_a_header_mismatch() {
    let server = Server::start().await;
    let reply = server.post(LAB, &list()).without("mcp-method").send().await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_mcp_method_header_that_differs_from_the_body_is_a_header_mismatch() {
    let server = Server::start().await;
    for header in ["prompts/list", "TOOLS/LIST", "Tools/List", "tools/list/"] {
        let reply = server
            .post(LAB, &list())
            .header("mcp-method", header)
            .send()
            .await;
        reply.error(-32020, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_missing_mcp_name_header_is_a_header_mismatch_for_the_three_named_methods() {
    let server = Server::start().await;
    for body in [
        tool_call(1, "quiet", json!({}), json!({})),
        rpc(
            2,
            "prompts/get",
            json!({"name": "summary", "arguments": {"topic": "rust"}}),
        ),
        rpc(3, "resources/read", json!({"uri": "lab://static"})),
    ] {
        let reply = server.post(LAB, &body).without("mcp-name").send().await;
        reply.error(-32020, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn an_mcp_name_header_that_differs_from_the_body_is_a_header_mismatch() {
    let server = Server::start().await;
    for (body, other) in [
        (tool_call(1, "quiet", json!({}), json!({})), "chatty"),
        (tool_call(1, "quiet", json!({}), json!({})), "QUIET"),
        (
            rpc(
                2,
                "prompts/get",
                json!({"name": "summary", "arguments": {"topic": "rust"}}),
            ),
            "ask_form",
        ),
        (
            rpc(3, "resources/read", json!({"uri": "lab://static"})),
            "lab://roots",
        ),
    ] {
        let reply = server
            .post(LAB, &body)
            .header("mcp-name", other)
            .send()
            .await;
        reply.error(-32020, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_base64_encoded_mcp_name_is_decoded_before_comparing() {
    let server = Server::start().await;
    let ascii = server
        .post(LAB, &tool_call(1, "quiet", json!({}), json!({})))
        .header("mcp-name", &b64_header("quiet"))
        .send()
        .await;
    assert_eq!(ascii.result()["content"][0]["text"], "quiet");

    // A URI that is not plain ASCII can only travel encoded (the harness encodes it).
    let uri = "lab://items/crème-brûlée";
    let read = server
        .send(LAB, &rpc(2, "resources/read", json!({"uri": uri})))
        .await
        .result();
    assert_eq!(read["contents"][0]["text"], "item crème-brûlée");

    let wrong = server
        .post(LAB, &tool_call(3, "quiet", json!({}), json!({})))
        .header("mcp-name", &b64_header("chatty"))
        .send()
        .await;
    wrong.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_invalid_base64_mcp_name_is_a_header_mismatch() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &tool_call(1, "quiet", json!({}), json!({})))
        .header("mcp-name", "=?base64?not*base64?=")
        .send()
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_raw_utf8_mcp_name_is_refused_as_invalid_not_as_missing() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &tool_call(1, "quiet", json!({}), json!({})))
        .header("mcp-name", "qu\u{ee}et")
        .send()
        .await;
    let error = reply.error(-32020, 400);
    let message = error["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("Mcp-Name header is not valid") && message.contains("base64"),
        "{message}"
    );
    server.stop().await;
}

fn regional(args: Value) -> Value {
    tool_call("r", "regional", args, json!({}))
}

#[actix_web::test]
async fn mcp_param_headers_that_match_the_arguments_are_accepted() {
    let server = Server::start().await;
    let reply = server
        .post(
            LAB,
            &regional(json!({"region": "eu-west", "count": 42, "note": "n"})),
        )
        .header("mcp-param-region", "eu-west")
        .header("Mcp-Param-Count", "42")
        .send()
        .await;
    assert_eq!(reply.result()["structuredContent"]["count"], 42);
    // Arguments that are absent (or null) need no header.
    let none = server
        .send(LAB, &regional(json!({"note": "n", "count": null})))
        .await;
    none.result();
    server.stop().await;
}

#[actix_web::test]
async fn integer_mcp_param_headers_are_compared_numerically() {
    let server = Server::start().await;
    for header in ["042", "42", "+42", "42.0"] {
        let reply = server
            .post(LAB, &regional(json!({"count": 42})))
            .header("mcp-param-count", header)
            .send()
            .await;
        assert_eq!(reply.status, 200, "header {header:?}: {reply:?}");
    }
    let reply = server
        .post(LAB, &regional(json!({"count": 42})))
        .header("mcp-param-count", "43")
        .send()
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_base64_encoded_mcp_param_header_is_decoded_before_comparing() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &regional(json!({"region": " zürich "})))
        .header("mcp-param-region", &b64_header(" zürich "))
        .send()
        .await;
    reply.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_missing_mcp_param_header_is_a_header_mismatch() {
    let server = Server::start().await;
    let reply = server
        .send(LAB, &regional(json!({"region": "eu-west"})))
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_mismatched_mcp_param_header_is_a_header_mismatch() {
    let server = Server::start().await;
    for (args, header, value) in [
        (json!({"region": "eu-west"}), "mcp-param-region", "us-east"),
        (json!({"region": "eu-west"}), "mcp-param-region", "EU-WEST"),
        (json!({"count": 42}), "mcp-param-count", "forty-two"),
        (json!({"count": "42"}), "mcp-param-count", "43"),
    ] {
        let reply = server
            .post(LAB, &regional(args))
            .header(header, value)
            .send()
            .await;
        reply.error(-32020, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn an_mcp_param_header_without_its_argument_is_a_header_mismatch() {
    let server = Server::start().await;
    let reply = server
        .post(LAB, &regional(json!({"note": "n"})))
        .header("mcp-param-region", "eu-west")
        .send()
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_mcp_param_header_is_a_header_mismatch() {
    let server = Server::start().await;
    for second in ["eu-west", "us-east"] {
        let reply = server
            .post(LAB, &regional(json!({"region": "eu-west"})))
            .header("mcp-param-region", "eu-west")
            .also("mcp-param-region", second)
            .send()
            .await;
        reply.error(-32020, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_repeated_mcp_header_with_a_different_value_is_a_header_mismatch() {
    // Whoever reads the second value (a proxy, a gateway) would route a different request
    // than the one the server checked.
    let server = Server::start().await;
    let call = tool_call(1, "quiet", json!({}), json!({}));
    let mut accepted = Vec::new();
    for (header, first, second) in [
        ("mcp-name", "quiet", "boom"),
        ("mcp-method", "tools/call", "tools/list"),
        ("mcp-protocol-version", "2026-07-28", "2025-11-25"),
    ] {
        let reply = server
            .post(LAB, &call)
            .header(header, first)
            .also(header, second)
            .send()
            .await;
        if reply.status == 200 {
            accepted.push(header);
        } else {
            reply.error(-32020, 400);
        }
    }
    assert!(
        accepted.is_empty(),
        "repeated headers accepted (the first value wins): {accepted:?}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn an_mcp_param_mismatch_is_reported_before_the_request_state_is_looked_at() {
    let server = Server::start().await;
    let mut call = regional(json!({"region": "eu"}));
    call["params"]["requestState"] = json!("v2.not-a-real.state");
    call["params"]["inputResponses"] = json!(7);
    let reply = server
        .post(LAB, &call)
        .header("mcp-param-region", "us")
        .send()
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}

#[actix_web::test]
async fn an_mcp_param_mismatch_is_reported_before_an_unknown_version() {
    let server = Server::start().await;
    let mut call = regional(json!({"region": "eu"}));
    call["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"] = json!("1999-01-01");
    let reply = server
        .post(LAB, &call)
        .header("mcp-protocol-version", "1999-01-01")
        .header("mcp-param-region", "us")
        .send()
        .await;
    reply.error(-32020, 400);
    server.stop().await;
}
