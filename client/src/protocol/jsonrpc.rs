//! JSON-RPC 2.0 framing: the messages the client writes, and the classification of every
//! message a server sends (a response to one of ours, a request of its own, a notification).

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::Malformed;

/// A JSON-RPC id: the client numbers its own requests; a server's may be either kind.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => f.write_str(s),
        }
    }
}

/// A JSON-RPC error object, as the server sent it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code.
    pub code: i64,
    /// The server's message.
    pub message: String,
    /// Anything the server attached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// Invalid params.
    pub const INVALID_PARAMS: i64 = -32602;
    /// Method not found.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Internal error.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// The HTTP headers do not match the body (2026-07-28).
    pub const HEADER_MISMATCH: i64 = -32020;
    /// A client capability the request did not declare is needed (2026-07-28).
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The protocol version is not served (2026-07-28); `data.supported` lists what is.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

    /// An error of `code` with `message`.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The versions a -32022 names in `data.supported`.
    pub fn supported_versions(&self) -> Vec<&str> {
        self.data
            .as_ref()
            .and_then(|d| d.get("supported"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.code, self.message)
    }
}

/// One message from the server.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// The answer to a request of ours.
    Response {
        /// The id of our request (`None` only on an error the server could not tie to one).
        id: Option<RequestId>,
        /// The `result`, or the `error`.
        outcome: Result<Value, RpcError>,
    },
    /// A request of the server's own (legacy sessions only).
    Request {
        /// The server's id, echoed in our answer.
        id: RequestId,
        /// The method.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
    /// A notification (progress, logs, list changes).
    Notification {
        /// The method.
        method: String,
        /// The params, if any.
        params: Option<Value>,
    },
}

impl Incoming {
    /// Classifies a parsed JSON value.
    pub fn parse(value: Value) -> Result<Incoming, Malformed> {
        const WHAT: &str = "a JSON-RPC message";
        let Value::Object(mut message) = value else {
            return Err(Malformed::new(WHAT, "not a JSON object"));
        };
        if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(Malformed::new(WHAT, "jsonrpc is not \"2.0\""));
        }
        let id =
            match message.remove("id") {
                None | Some(Value::Null) => None,
                Some(id) => Some(serde_json::from_value::<RequestId>(id).map_err(|_| {
                    Malformed::new(WHAT, "an id that is neither string nor integer")
                })?),
            };
        if let Some(method) = message.remove("method") {
            let Value::String(method) = method else {
                return Err(Malformed::new(WHAT, "a method that is not a string"));
            };
            let params = message.remove("params");
            return Ok(match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            });
        }
        let outcome = match (message.remove("result"), message.remove("error")) {
            (Some(result), None) => Ok(result),
            (None, Some(error)) => Err(super::parse::<RpcError>("a JSON-RPC error", error)?),
            _ => {
                return Err(Malformed::new(
                    WHAT,
                    "a response with neither or both of result and error",
                ))
            }
        };
        Ok(Incoming::Response { id, outcome })
    }
}

/// A request message.
pub fn request(id: &RequestId, method: &str, params: &Map<String, Value>) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A notification message; `params` left out when `None`.
pub fn notification(method: &str, params: Option<Value>) -> Value {
    match params {
        Some(params) => json!({"jsonrpc": "2.0", "method": method, "params": params}),
        None => json!({"jsonrpc": "2.0", "method": method}),
    }
}

/// Our answer to a server's request.
pub fn response(id: &RequestId, outcome: Result<Value, RpcError>) -> Value {
    match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_an_error_a_request_and_a_notification_are_told_apart() {
        let result = Incoming::parse(json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
        assert!(matches!(
            result,
            Ok(Incoming::Response { outcome: Ok(_), .. })
        ));
        let error = Incoming::parse(
            json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32601, "message": "no"}}),
        );
        assert!(matches!(
            error,
            Ok(Incoming::Response {
                outcome: Err(RpcError { code: -32601, .. }),
                ..
            })
        ));
        let request = Incoming::parse(json!({"jsonrpc": "2.0", "id": "s-1", "method": "ping"}));
        assert!(matches!(request, Ok(Incoming::Request { .. })));
        let note = Incoming::parse(json!({"jsonrpc": "2.0", "method": "notifications/progress"}));
        assert!(matches!(note, Ok(Incoming::Notification { .. })));
    }

    #[test]
    fn a_response_without_result_or_error_is_malformed() {
        assert!(Incoming::parse(json!({"jsonrpc": "2.0", "id": 1})).is_err());
        assert!(Incoming::parse(json!({"id": 1, "result": {}})).is_err());
    }

    #[test]
    fn supported_versions_are_read_from_a_32022() {
        let e: RpcError = serde_json::from_value(json!({"code": -32022, "message": "m",
            "data": {"supported": ["2026-07-28", 5], "requested": "x"}}))
        .expect("an error object");
        assert_eq!(e.supported_versions(), vec!["2026-07-28"]);
    }
}
