//! JSON-RPC 2.0 framing: classify one incoming message and build outgoing ones.
//!
//! Classification is done by hand rather than by a serde enum so that every malformed shape
//! maps to the right code (-32600 for a non-request, -32602 is left to the method) and so the
//! request id, when there is one, is recovered for the error response.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::error::McpError;

/// A JSON-RPC id: a string or a number. Null ids are not requests.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    Number(serde_json::Number),
    String(String),
}

impl std::fmt::Display for RequestId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Number(n) => write!(f, "{n}"),
            Self::String(s) => write!(f, "{s}"),
        }
    }
}

/// A request: it has an id and wants a response.
#[derive(Debug, Clone)]
pub struct Request {
    pub id: RequestId,
    pub method: String,
    /// `params`, when present, is always an object (checked at classification).
    pub params: Option<Map<String, Value>>,
}

/// A notification: no id, no response.
#[derive(Debug, Clone)]
pub struct Notification {
    pub method: String,
    pub params: Option<Map<String, Value>>,
}

impl Notification {
    /// The request a `notifications/cancelled` withdraws.
    pub fn cancelled_request(&self) -> Option<RequestId> {
        if self.method != "notifications/cancelled" {
            return None;
        }
        let id = self.params.as_ref()?.get("requestId")?;
        serde_json::from_value(id.clone()).ok()
    }
}

/// A response the peer sends back to a request of ours (legacy server-to-client requests).
#[derive(Debug, Clone)]
pub struct Response {
    pub id: RequestId,
    pub outcome: Result<Value, Value>,
}

/// One classified JSON-RPC message.
#[derive(Debug, Clone)]
pub enum Incoming {
    Request(Request),
    Notification(Notification),
    Response(Response),
}

/// A message that could not be classified, with the id when one could be read.
#[derive(Debug, Clone)]
pub struct Malformed {
    pub id: Option<RequestId>,
    pub error: McpError,
}

impl Incoming {
    /// Parses one message body. Batches (arrays) are rejected: MCP does not allow them.
    pub fn parse(body: &[u8]) -> Result<Incoming, Malformed> {
        let value: Value = serde_json::from_slice(body).map_err(|e| Malformed {
            id: None,
            error: McpError::parse_error(e),
        })?;
        Self::classify(value)
    }

    pub fn classify(value: Value) -> Result<Incoming, Malformed> {
        let Value::Object(mut obj) = value else {
            let what = if value.is_array() {
                "Batch requests are not supported"
            } else {
                "A JSON-RPC message must be an object"
            };
            return Err(Malformed {
                id: None,
                error: McpError::invalid_request(what),
            });
        };
        let id = match obj.remove("id") {
            None => None,
            Some(v) => Some(parse_id(v).map_err(|error| Malformed { id: None, error })?),
        };
        let bad = |id: &Option<RequestId>, msg: &'static str| Malformed {
            id: id.clone(),
            error: McpError::invalid_request(msg),
        };
        if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(bad(&id, "jsonrpc must be \"2.0\""));
        }
        match obj.remove("method") {
            Some(Value::String(method)) => {
                let params = match obj.remove("params") {
                    None => None,
                    Some(Value::Object(p)) => Some(p),
                    Some(_) => return Err(bad(&id, "params must be an object")),
                };
                Ok(match id {
                    Some(id) => Incoming::Request(Request { id, method, params }),
                    None => Incoming::Notification(Notification { method, params }),
                })
            }
            Some(_) => Err(bad(&id, "method must be a string")),
            None => {
                let Some(id) = id else {
                    return Err(bad(&None, "A message needs a method or an id"));
                };
                let outcome = match (obj.remove("result"), obj.remove("error")) {
                    (Some(result), None) => Ok(result),
                    (None, Some(error @ Value::Object(_))) => Err(error),
                    _ => {
                        return Err(bad(
                            &Some(id),
                            "A response needs exactly one of result and error",
                        ))
                    }
                };
                Ok(Incoming::Response(Response { id, outcome }))
            }
        }
    }
}

fn parse_id(v: Value) -> Result<RequestId, McpError> {
    match v {
        Value::String(s) => Ok(RequestId::String(s)),
        Value::Number(n) if n.is_i64() || n.is_u64() => Ok(RequestId::Number(n)), // MCP: integer
        _ => Err(McpError::invalid_request("id must be a string or a number")),
    }
}

#[derive(Serialize)]
struct ResultMessage<'a> {
    jsonrpc: &'static str,
    id: &'a RequestId,
    result: &'a Value,
}

#[derive(Serialize)]
struct ErrorMessage<'a> {
    jsonrpc: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")] // MCP: `id?: RequestId`, never null
    id: Option<&'a RequestId>,
    error: Value,
}

#[derive(Serialize)]
struct NotificationMessage<'a> {
    jsonrpc: &'static str,
    method: &'a str,
    params: &'a Value,
}

/// Serialises a success response.
pub(crate) fn result_bytes(id: &RequestId, result: &Value) -> Vec<u8> {
    serde_json::to_vec(&ResultMessage {
        jsonrpc: "2.0",
        id,
        result,
    })
    .unwrap_or_default()
}

/// Serialises an error response; `id` is left out only when the request's id was unreadable.
pub(crate) fn error_bytes(id: Option<&RequestId>, error: &McpError) -> Vec<u8> {
    serde_json::to_vec(&ErrorMessage {
        jsonrpc: "2.0",
        id,
        error: error.to_value(),
    })
    .unwrap_or_default()
}

/// Serialises a notification.
pub(crate) fn notification_bytes(method: &str, params: &Value) -> Vec<u8> {
    serde_json::to_vec(&NotificationMessage {
        jsonrpc: "2.0",
        method,
        params,
    })
    .unwrap_or_default()
}

/// Serialises a server-to-client request (legacy sessions only).
pub(crate) fn request_bytes(id: &RequestId, method: &str, params: &Value) -> Vec<u8> {
    #[derive(Serialize)]
    struct RequestMessage<'a> {
        jsonrpc: &'static str,
        id: &'a RequestId,
        method: &'a str,
        params: &'a Value,
    }
    serde_json::to_vec(&RequestMessage {
        jsonrpc: "2.0",
        id,
        method,
        params,
    })
    .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(body: &str) -> Malformed {
        Incoming::parse(body.as_bytes()).expect_err("should be malformed")
    }

    #[test]
    fn malformed_json_is_a_parse_error() {
        assert_eq!(err("{").error.code.code(), -32700);
    }

    #[test]
    fn a_batch_is_an_invalid_request() {
        assert_eq!(err("[]").error.code.code(), -32600);
    }

    #[test]
    fn params_that_are_not_an_object_keep_the_id() {
        let m = err(r#"{"jsonrpc":"2.0","id":7,"method":"x","params":[1]}"#);
        assert_eq!(m.error.code.code(), -32600);
        assert_eq!(m.id, Some(RequestId::Number(7.into())));
    }

    #[test]
    fn a_message_without_id_is_a_notification() {
        let m = Incoming::parse(br#"{"jsonrpc":"2.0","method":"notifications/cancelled"}"#)
            .expect("valid");
        assert!(matches!(m, Incoming::Notification(_)));
    }

    #[test]
    fn a_result_is_a_response() {
        let m = Incoming::parse(br#"{"jsonrpc":"2.0","id":"s-1","result":{}}"#).expect("valid");
        assert!(matches!(
            m,
            Incoming::Response(Response { outcome: Ok(_), .. })
        ));
    }

    #[test]
    fn a_wrong_jsonrpc_version_is_invalid() {
        assert_eq!(
            err(r#"{"jsonrpc":"1.0","id":1,"method":"x"}"#)
                .error
                .code
                .code(),
            -32600
        );
    }
}
