//! Wire checks applied to every message the server sends, by [`check_message`]: JSON-RPC
//! framing, the committed schema (the generic type and the method's or error code's own type),
//! the request id echoed, the HTTP status the spec fixes for the code, no `resultType` on errors
//! or notifications, and the MRTR rules for input-required results. Tests then assert what is
//! specific to them.

use serde_json::Value;

use super::protocol::{LOG_LEVEL, SERVER_INFO, SUBSCRIPTION_ID};
use super::schema;

/// What was sent, as far as the checks need it.
#[derive(Debug, Clone)]
pub(super) struct Sent {
    pub(super) body: Option<Value>,
    pub(super) mcp_endpoint: bool,
}

impl Sent {
    pub(super) fn method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }

    /// The request id, when the body had a readable one (a string or an integer). A body that
    /// is a JSON-RPC response (it has `result` or `error`) has no request id to echo.
    fn id(&self) -> Option<&Value> {
        let body = self.body.as_ref()?;
        if body.get("method").is_none()
            && (body.get("result").is_some() || body.get("error").is_some())
        {
            return None;
        }
        let id = body.get("id")?;
        match id {
            Value::String(_) => Some(id),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(id),
            _ => None,
        }
    }

    fn meta(&self, key: &str) -> Option<&Value> {
        self.body.as_ref()?.get("params")?.get("_meta")?.get(key)
    }
}

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

fn level_rank(level: &str) -> usize {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .unwrap_or_else(|| panic!("unknown log level {level:?}"))
}

/// The checks every message from the server passes. `responses_before`: how many responses
/// came earlier on the same stream (nothing may follow a request's response).
pub(super) fn check_message(sent: &Sent, message: &Value, status: u16, responses_before: usize) {
    assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
    let listening = sent.method() == Some("subscriptions/listen");
    assert_eq!(
        responses_before, 0,
        "a message after the stream's response: {message}"
    );

    if let Some(method) = message.get("method") {
        let method = method.as_str().expect("a string method");
        assert!(
            message.get("id").is_none(),
            "a modern server never sends a JSON-RPC request: {message}"
        );
        schema::assert_valid("JSONRPCNotification", message);
        if let Some(def) = schema::notification_def(method) {
            schema::assert_valid(def, message);
        }
        let params = &message["params"];
        assert!(
            params.get("resultType").is_none(),
            "notifications carry no resultType: {message}"
        );
        let subscription = params.get("_meta").and_then(|m| m.get(SUBSCRIPTION_ID));
        if listening {
            assert_eq!(
                subscription,
                sent.body.as_ref().and_then(|b| b.get("id")),
                "every notification on a listen stream carries its subscriptionId: {message}"
            );
            assert!(
                method != "notifications/progress" && method != "notifications/message",
                "no progress or logs on a listen stream: {message}"
            );
        } else {
            assert!(
                subscription.is_none(),
                "request-scoped notifications carry no subscriptionId: {message}"
            );
        }
        match method {
            "notifications/progress" => assert_eq!(
                Some(&params["progressToken"]),
                sent.meta("progressToken"),
                "progress echoes the request's token: {message}"
            ),
            "notifications/message" => {
                let asked = sent
                    .meta(LOG_LEVEL)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| panic!("a log without a logLevel: {message}"));
                let level = params["level"].as_str().expect("a level");
                assert!(
                    level_rank(level) >= level_rank(asked),
                    "a {level} log for a request that asked for {asked} and above"
                );
            }
            _ => {}
        }
        return;
    }

    // Refused before the body was read (guard, size, time): the id is not known.
    if ![403, 408, 413].contains(&status) {
        if let Some(id) = sent.id() {
            assert_eq!(
                message.get("id"),
                Some(id),
                "the response carries the request's id: {message}"
            );
        }
    }
    schema::assert_valid("JSONRPCResponse", message);

    if let Some(error) = message.get("error") {
        assert!(message.get("result").is_none(), "{message}");
        schema::assert_valid("JSONRPCErrorResponse", message);
        assert!(
            error.get("resultType").is_none()
                && error
                    .get("data")
                    .and_then(|d| d.get("resultType"))
                    .is_none(),
            "errors carry no resultType: {message}"
        );
        let code = error["code"].as_i64().expect("an integer code");
        if let Some((def, whole)) = schema::error_def(code) {
            schema::assert_valid(def, if whole { message } else { error });
        }
        if sent.mcp_endpoint {
            let expected = match code {
                -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => Some(400),
                -32601 => Some(404),
                _ => None,
            };
            if let Some(expected) = expected {
                assert_eq!(status, expected, "HTTP status of error {code}: {message}");
            }
        }
        return;
    }

    assert_eq!(status, 200, "a result travels with HTTP 200: {message}");
    schema::assert_valid("JSONRPCResultResponse", message);
    let method = sent.method().unwrap_or_default();
    let result = &message["result"];
    assert!(
        result.get("resultType").and_then(Value::as_str).is_some(),
        "every modern result has resultType: {message}"
    );
    assert!(
        result["_meta"].get(SERVER_INFO).is_some() || listening,
        "every result carries serverInfo in _meta: {message}"
    );
    if let Some(def) = schema::result_response_def(method) {
        schema::assert_valid(def, message);
    }
    if result["resultType"] == "input_required" {
        assert!(
            matches!(method, "tools/call" | "prompts/get" | "resources/read"),
            "input_required from {method}: {message}"
        );
        schema::assert_valid("InputRequiredResult", result);
        assert!(
            result.get("inputRequests").is_some() || result.get("requestState").is_some(),
            "an input-required result has inputRequests or requestState: {message}"
        );
        assert!(
            result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
            "input-required results carry no caching hints: {message}"
        );
        if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
            for request in requests.values() {
                schema::assert_valid("InputRequest", request);
                assert!(
                    request.get("id").is_none() && request.get("jsonrpc").is_none(),
                    "embedded input requests are not JSON-RPC messages: {message}"
                );
            }
        }
    }
}
