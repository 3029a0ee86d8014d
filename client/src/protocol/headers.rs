//! The 2026-07-28 HTTP headers a request mirrors from its body (SEP-2243), and how their
//! values are written.
//!
//! A value that is not safe plain ASCII (anything outside printable ASCII, leading or trailing
//! whitespace) is sent as `=?base64?{base64 of its UTF-8}?=`, and so is a plain value that
//! would read as that sentinel. The server decodes before comparing.

use base64::Engine as _;
use serde_json::Value;

/// `MCP-Protocol-Version`.
pub const PROTOCOL_VERSION: &str = "mcp-protocol-version";
/// `Mcp-Method`: the body's method.
pub const METHOD: &str = "mcp-method";
/// `Mcp-Name`: `params.name` (tools/call, prompts/get) or `params.uri` (resources/read).
pub const NAME: &str = "mcp-name";
/// `Mcp-Session-Id` (legacy sessions).
pub const SESSION_ID: &str = "mcp-session-id";
/// The prefix of the headers mirroring `x-mcp-header` tool arguments.
pub const PARAM_PREFIX: &str = "mcp-param-";

const SENTINEL_START: &str = "=?base64?";
const SENTINEL_END: &str = "?=";

/// The params key `Mcp-Name` mirrors for `method`, if it has one.
pub fn name_key(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        _ => None,
    }
}

/// `value` as a header value: plain when it is safe, base64-wrapped otherwise.
pub fn encode(value: &str) -> String {
    let plain = value.bytes().all(|b| (0x20..0x7f).contains(&b))
        && value.trim_matches(' ') == value
        && !(value.starts_with(SENTINEL_START) && value.ends_with(SENTINEL_END));
    if plain {
        value.to_owned()
    } else {
        let encoded = base64::engine::general_purpose::STANDARD.encode(value);
        format!("{SENTINEL_START}{encoded}{SENTINEL_END}")
    }
}

/// The header value of a tool argument: strings as they are (encoded when needed), integers
/// in decimal, booleans as `true`/`false`. `None` (no header) for null and for anything
/// else, which a valid annotation never points at.
pub fn argument_value(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(encode(s)),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        // An integer written as 42.0 is still the integer 42.
        Value::Number(n) => n
            .as_f64()
            .filter(|f| f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0)
            .map(|f| format!("{}", f as i64)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn b64(s: &str) -> String {
        format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode(s)
        )
    }

    #[test]
    fn plain_ascii_with_inner_spaces_is_sent_as_it_is() {
        assert_eq!(encode("us west 1"), "us west 1");
        assert_eq!(encode(""), "");
        assert_eq!(
            encode("file:///path/to/file%20name.txt"),
            "file:///path/to/file%20name.txt"
        );
    }

    #[test]
    fn unsafe_values_are_base64_wrapped() {
        for value in [
            "Hello, 世界",
            " padded ",
            " lead",
            "trail ",
            "line1\nline2",
            "a\r\nb",
            "\tx",
            "del\u{7f}",
        ] {
            assert_eq!(encode(value), b64(value), "{value:?}");
        }
    }

    #[test]
    fn a_value_that_looks_like_the_sentinel_is_wrapped_too() {
        assert_eq!(encode("=?base64?abc?="), b64("=?base64?abc?="));
    }

    #[test]
    fn arguments_are_written_by_type() {
        assert_eq!(argument_value(&json!(42)).as_deref(), Some("42"));
        assert_eq!(argument_value(&json!(-7)).as_deref(), Some("-7"));
        assert_eq!(argument_value(&json!(42.0)).as_deref(), Some("42"));
        assert_eq!(argument_value(&json!(false)).as_deref(), Some("false"));
        assert_eq!(argument_value(&json!("x")).as_deref(), Some("x"));
        assert_eq!(argument_value(&json!(null)), None);
        assert_eq!(argument_value(&json!({"a": 1})), None);
    }
}
