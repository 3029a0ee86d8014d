//! The JSON-RPC error object as it goes on the wire, and the codes MCP gives meaning to.
//!
//! A wire error is its own type, apart from any Rust error enum: causes are logged where they
//! happen and only the code, a fixed message and documented `data` cross the wire. The HTTP
//! status of each code is decided here, once, because the spec ties some codes to a status.

use std::borrow::Cow;

use serde::Serialize;
use serde_json::{json, Value};

/// Error codes Roundtrip emits. MCP reserves -32020..=-32099; application codes live outside
/// -32768..=-32000, as the spec asks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ErrorCode {
    /// -32700: the message is not valid JSON (HTTP 400).
    ParseError,
    /// -32600: valid JSON, but not a JSON-RPC request MCP accepts (HTTP 400).
    InvalidRequest,
    /// -32601: no such method, or one this tenant does not offer (HTTP 404).
    MethodNotFound,
    /// -32602: the params are wrong for the method, `requestState` included (HTTP 400).
    InvalidParams,
    /// -32603: the server failed; the cause is logged, not sent (HTTP 200).
    InternalError,
    /// -32020: HTTP headers disagree with the body, or a required header is missing.
    HeaderMismatch,
    /// -32021: an input request needs a capability this request did not declare.
    MissingRequiredClientCapability,
    /// -32022: the requested protocol version is not served here.
    UnsupportedProtocolVersion,
    /// Roundtrip: no credentials, or credentials that do not authenticate (HTTP 401).
    Unauthorized,
    /// Roundtrip: Host or Origin not on the allow-list (HTTP 403).
    Forbidden,
    /// Roundtrip: no such tenant, or the tenant is not serving (HTTP 404).
    UnknownTenant,
    /// Roundtrip: the request body exceeds the configured limit (HTTP 413).
    PayloadTooLarge,
    /// Roundtrip: the request body did not arrive in time (HTTP 408).
    RequestTimeout,
    /// Roundtrip: no such legacy session, or it ended (HTTP 404).
    UnknownSession,
    /// Roundtrip: the process holds its maximum of legacy sessions (HTTP 503).
    TooManySessions,
    /// Roundtrip: a legacy session already runs its maximum of requests at once (HTTP 429).
    TooManyRequests,
    /// Roundtrip: -31429, what the caller or its tenant keeps would pass its budget (HTTP 429,
    /// `Retry-After`).
    OverBudget,
    /// Roundtrip: -31503, the process is at its memory ceiling or out of room for another
    /// long-lived stream (HTTP 503, `Retry-After`).
    OverCapacity,
    /// Roundtrip: -31503, the rate limits could not be checked (their Redis did not answer)
    /// and they fail closed (HTTP 503, `Retry-After`).
    LimitsUnavailable,
}

impl ErrorCode {
    /// The JSON-RPC `code` number.
    pub fn code(self) -> i32 {
        match self {
            Self::ParseError => -32700,
            Self::InvalidRequest => -32600,
            Self::MethodNotFound => -32601,
            Self::InvalidParams => -32602,
            Self::InternalError => -32603,
            Self::HeaderMismatch => -32020,
            Self::MissingRequiredClientCapability => -32021,
            Self::UnsupportedProtocolVersion => -32022,
            Self::Unauthorized => -31001,
            Self::Forbidden => -31003,
            Self::UnknownTenant => -31004,
            Self::PayloadTooLarge => -31013,
            Self::RequestTimeout => -31008,
            Self::UnknownSession => -31005,
            Self::TooManySessions => -31503,
            Self::TooManyRequests | Self::OverBudget => -31429,
            Self::OverCapacity | Self::LimitsUnavailable => -31503,
        }
    }

    /// HTTP status for a response carrying this error. The spec fixes 400 for malformed
    /// requests and the three modern codes, and 404 for -32601; other JSON-RPC errors travel
    /// as 200 with the error body.
    pub fn http_status(self) -> u16 {
        match self {
            Self::ParseError
            | Self::InvalidRequest
            | Self::InvalidParams
            | Self::HeaderMismatch
            | Self::MissingRequiredClientCapability
            | Self::UnsupportedProtocolVersion => 400,
            Self::MethodNotFound | Self::UnknownTenant | Self::UnknownSession => 404,
            Self::TooManySessions | Self::OverCapacity | Self::LimitsUnavailable => 503,
            Self::TooManyRequests | Self::OverBudget => 429,
            Self::Unauthorized => 401,
            Self::Forbidden => 403,
            Self::PayloadTooLarge => 413,
            Self::RequestTimeout => 408,
            Self::InternalError => 200,
        }
    }
}

/// A JSON-RPC error object: `{code, message, data?}`.
#[derive(Debug, Clone, PartialEq)]
pub struct McpError {
    /// What kind of error: decides the `code` number and the HTTP status.
    pub code: ErrorCode,
    /// The `message`, for people: fixed text or the client's own input, never a cause the
    /// server only logs.
    pub message: Cow<'static, str>,
    /// The `data` member, when the code documents one (`requiredCapabilities`, `supported`).
    pub data: Option<Value>,
}

/// The one message every `requestState` failure gets; the reason is only logged.
pub const INVALID_REQUEST_STATE: &str = "Invalid or expired requestState";

impl McpError {
    /// An error without `data`.
    pub fn new(code: ErrorCode, message: impl Into<Cow<'static, str>>) -> Self {
        Self {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// The same error with `data` set.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    /// -32700, "Parse error: " and the parser's `detail`.
    pub fn parse_error(detail: impl std::fmt::Display) -> Self {
        Self::new(ErrorCode::ParseError, format!("Parse error: {detail}"))
    }

    /// -32600 with `message`.
    pub fn invalid_request(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidRequest, message)
    }

    /// -32602 with `message`.
    pub fn invalid_params(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InvalidParams, message)
    }

    /// -32603 with `message`; say nothing the client should not see.
    pub fn internal(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::InternalError, message)
    }

    /// -32601 naming `method`.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::MethodNotFound,
            format!("Method not found: {method}"),
        )
    }

    /// -32020: a header disagrees with the body, is missing, or is not valid.
    pub fn header_mismatch(message: impl Into<Cow<'static, str>>) -> Self {
        Self::new(ErrorCode::HeaderMismatch, message)
    }

    /// -32021, with the capabilities the input requests need but the request did not declare
    /// as `data.requiredCapabilities`.
    pub fn missing_capabilities(required: Value) -> Self {
        Self::new(
            ErrorCode::MissingRequiredClientCapability,
            "The request's client capabilities do not declare what this input request needs",
        )
        .with_data(json!({ "requiredCapabilities": required }))
    }

    /// -32022, with the `supported` versions and the `requested` one in `data`.
    pub fn unsupported_version(requested: &str, supported: &[&str]) -> Self {
        Self::new(
            ErrorCode::UnsupportedProtocolVersion,
            "Unsupported protocol version",
        )
        .with_data(json!({ "supported": supported, "requested": requested }))
    }

    /// A legacy session that is not (or no longer) live for this caller.
    pub fn unknown_session() -> Self {
        Self::new(ErrorCode::UnknownSession, "Session not found")
    }

    /// -32602 [`INVALID_REQUEST_STATE`]: the one answer to a `requestState` that does not open,
    /// whatever the reason.
    pub fn invalid_request_state() -> Self {
        Self::invalid_params(INVALID_REQUEST_STATE)
    }

    /// -32602 "Resource not found", with the `uri` in `data`.
    pub fn resource_not_found(uri: &str) -> Self {
        Self::invalid_params(format!("Resource not found: {uri}")).with_data(json!({ "uri": uri }))
    }

    /// -31429: over a rate limit; `data.retryAfterMs` says when to try again (and the HTTP
    /// transport sends it as `Retry-After`, in whole seconds).
    pub fn rate_limited(retry_after: std::time::Duration) -> Self {
        let ms = u64::try_from(retry_after.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Self::new(
            ErrorCode::TooManyRequests,
            "Rate limit exceeded; try again later",
        )
        .with_data(json!({ "retryAfterMs": ms }))
    }

    /// -31503: the rate limits could not be checked and fail closed; `data.retryAfterMs` says
    /// when to try again (HTTP 503 with `Retry-After`, in whole seconds).
    pub fn limits_unavailable(retry_after: std::time::Duration) -> Self {
        let ms = u64::try_from(retry_after.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        Self::new(
            ErrorCode::LimitsUnavailable,
            "Rate limits cannot be checked now; try again later",
        )
        .with_data(json!({ "retryAfterMs": ms }))
    }

    /// `data.retryAfterMs` of a rate-limited error, in whole seconds rounded up.
    pub fn retry_after_secs(&self) -> Option<u64> {
        let ms = self.data.as_ref()?.get("retryAfterMs")?.as_u64()?;
        Some(ms.div_ceil(1000).max(1))
    }

    /// The HTTP status this error travels with: its code's ([`ErrorCode::http_status`]).
    pub fn http_status(&self) -> u16 {
        self.code.http_status()
    }

    /// The error object as JSON: `{code, message, data?}`.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(WireError {
            code: self.code.code(),
            message: &self.message,
            data: self.data.as_ref(),
        })
        .unwrap_or(Value::Null)
    }
}

impl std::fmt::Display for McpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.code())
    }
}

impl std::error::Error for McpError {}

#[derive(Serialize)]
struct WireError<'a> {
    code: i32,
    message: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a Value>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_codes_are_http_400_and_method_not_found_is_404() {
        for code in [
            ErrorCode::HeaderMismatch,
            ErrorCode::MissingRequiredClientCapability,
            ErrorCode::UnsupportedProtocolVersion,
            ErrorCode::InvalidParams,
        ] {
            assert_eq!(code.http_status(), 400);
        }
        assert_eq!(ErrorCode::MethodNotFound.http_status(), 404);
    }

    #[test]
    fn a_rate_limited_error_says_when_to_retry_in_whole_seconds() {
        let e = McpError::rate_limited(std::time::Duration::from_millis(1_200));
        assert_eq!(e.code.code(), -31429);
        assert_eq!(e.data, Some(json!({"retryAfterMs": 1200})));
        assert_eq!(e.retry_after_secs(), Some(2));
        assert_eq!(McpError::internal("x").retry_after_secs(), None);
    }

    #[test]
    fn limits_that_cannot_be_checked_are_503_with_when_to_retry() {
        let e = McpError::limits_unavailable(std::time::Duration::from_secs(1));
        assert_eq!((e.code.code(), e.http_status()), (-31503, 503));
        assert_eq!(e.data, Some(json!({"retryAfterMs": 1000})));
        assert_eq!(e.retry_after_secs(), Some(1));
    }

    #[test]
    fn wire_error_omits_absent_data() {
        let v = McpError::internal("boom").to_value();
        assert_eq!(v, json!({"code": -32603, "message": "boom"}));
    }
}
