//! Envelope checks, done once per request before dispatch: the `_meta` envelope, the HTTP
//! headers that must mirror the body (SEP-2243), and the protocol version.
//!
//! This is the one place that decides a request's era; everything after it receives the
//! decision as a value.

use std::borrow::Cow;

use base64::Engine;
use serde_json::{Map, Value};

use tokio::sync::mpsc::Receiver;

use crate::handler::{Catalog, HeaderKind, HeaderParam, Notifier, OutgoingMessage};
use crate::protocol::{McpError, Method, ProtocolVersion, Request, RequestMeta};

/// Methods of earlier revisions that 2026-07-28 removed: answered -32601 (HTTP 404) whatever
/// their envelope, so a legacy client learns at once that this server is modern-only.
fn removed_in_modern(method: &Method) -> bool {
    matches!(
        method,
        Method::Initialize
            | Method::Ping
            | Method::LoggingSetLevel
            | Method::ResourcesSubscribe
            | Method::ResourcesUnsubscribe
            | Method::TasksResult
            | Method::TasksList
    )
}

/// The MCP headers of an HTTP request (absent on stdio), borrowed from the request: they
/// are only compared with the body, never kept. `None` is a header not sent.
#[derive(Clone, Copy)]
pub struct HttpHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<HeaderText<'a>>,
    /// `Mcp-Method`.
    pub method: Option<HeaderText<'a>>,
    /// `Mcp-Name`.
    pub name: Option<HeaderText<'a>>,
    /// `Mcp-Param-{Name}` headers, read by name.
    pub params: &'a dyn ParamHeaders,
}

impl Default for HttpHeaders<'_> {
    /// No header sent.
    fn default() -> Self {
        HttpHeaders {
            protocol_version: None,
            method: None,
            name: None,
            params: &NoParams,
        }
    }
}

/// The headers `params` reads from hold every header of the request, its `Authorization`
/// too: they are left out.
impl std::fmt::Debug for HttpHeaders<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpHeaders")
            .field("protocol_version", &self.protocol_version)
            .field("method", &self.method)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A request's `Mcp-Param-{Name}` headers, read by the names a tool declares. Only a call of
/// a tool that mirrors arguments into them reads any, so a transport can look them up then
/// rather than gather them from every header of every request.
pub trait ParamHeaders {
    /// Every value sent as `Mcp-Param-{name}` (`name` in any case), in order.
    fn values(&self, name: &str) -> Vec<HeaderText<'_>>;
}

/// No `Mcp-Param-*` header sent.
#[derive(Debug)]
pub struct NoParams;

impl ParamHeaders for NoParams {
    fn values(&self, _name: &str) -> Vec<HeaderText<'_>> {
        Vec::new()
    }
}

/// Headers gathered beforehand: each `{Name}` as sent, and its value.
impl ParamHeaders for Vec<(&str, HeaderText<'_>)> {
    fn values(&self, name: &str) -> Vec<HeaderText<'_>> {
        self.iter()
            .filter(|(sent, _)| sent.eq_ignore_ascii_case(name))
            .map(|(_, value)| *value)
            .collect()
    }
}

/// A header value as it arrived: text, or bytes that are not visible ASCII. A value that is
/// not ASCII (raw UTF-8, say) must travel base64-wrapped (`=?base64?…?=`); such a header is
/// refused as invalid, never taken for a missing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderText<'a> {
    /// Visible ASCII, as sent.
    Text(&'a str),
    /// Present, but not visible ASCII.
    Invalid,
}

impl<'a> HeaderText<'a> {
    /// The text, or the error naming the header `name` that is not valid.
    fn text(self, name: &str) -> Result<&'a str, McpError> {
        match self {
            HeaderText::Text(t) => Ok(t),
            HeaderText::Invalid => Err(McpError::header_mismatch(format!(
                "{name} header is not valid: a value that is not ASCII must be base64-wrapped (=?base64?...?=)"
            ))),
        }
    }
}

/// What the HTTP checks need: the headers, and the catalog whose tools say which arguments
/// are mirrored into `Mcp-Param-*` headers.
#[derive(Debug, Clone, Copy)]
pub struct HttpCheck<'a> {
    /// The request's MCP headers, to compare with its body.
    pub headers: &'a HttpHeaders<'a>,
    /// The catalog the caller sees: its tools' `x-mcp-header` arguments must be mirrored.
    pub catalog: &'a Catalog,
}

/// A request that passed the envelope checks: only [`check_modern`] makes one, so a modern
/// call built from it cannot have skipped them.
#[derive(Debug, Clone)]
pub struct Envelope {
    version: ProtocolVersion,
    meta: RequestMeta,
}

impl Envelope {
    /// The protocol version the request speaks.
    pub fn version(&self) -> ProtocolVersion {
        self.version
    }

    /// The request's `_meta` envelope.
    pub fn meta(&self) -> &RequestMeta {
        &self.meta
    }

    /// The `_meta` envelope, taken: its capabilities move into the call rather than being
    /// copied.
    pub(crate) fn into_meta(self) -> RequestMeta {
        self.meta
    }

    /// Progress or log notifications may precede the result, so the transport must be ready
    /// to stream.
    pub fn may_notify(&self) -> bool {
        self.meta.progress_token.is_some() || self.meta.log_level.is_some()
    }

    /// The request's notification channel, for what it asked to receive, when it may notify.
    pub fn notifier(&self) -> Option<(Notifier, Receiver<Box<OutgoingMessage>>)> {
        self.may_notify()
            .then(|| Notifier::channel(self.meta.progress_token.clone(), self.meta.log_level))
    }
}

/// Checks a modern request: removed methods (-32601) first, then `_meta` (-32602), headers
/// against the body, `Mcp-Param-*` included (-32020), then the version (-32022), in that order,
/// so that a header that disagrees with the body is reported as a mismatch even when the
/// body's version is unknown, and before any work is spent on the request.
pub fn check_modern(
    request: &mut Request,
    http: Option<HttpCheck<'_>>,
) -> Result<Envelope, McpError> {
    if removed_in_modern(&request.method) {
        let error = McpError::method_not_found(request.method.as_str());
        return Err(if request.method == Method::Initialize {
            error.with_data(serde_json::json!({ "supported": ProtocolVersion::MODERN_STRS }))
        } else {
            error
        });
    }
    let meta = RequestMeta::require(
        request.params.as_mut(),
        request.meta_capabilities.take(),
        request.meta_version,
    )?;
    if let Some(http) = http {
        check_headers(request, &meta, http.headers)?;
        if request.method == Method::ToolsCall {
            check_tool_param_headers(request, http)?;
        }
    }
    let version = ProtocolVersion::parse(&meta.protocol_version)
        .filter(|v| ProtocolVersion::MODERN.contains(v))
        .ok_or_else(|| {
            McpError::unsupported_version(&meta.protocol_version, ProtocolVersion::MODERN_STRS)
        })?;
    Ok(Envelope { version, meta })
}

/// `Mcp-Param-*` of a `tools/call`, for a tool this catalog has (an unknown tool is dispatch's
/// to report). A catalog whose tools mirror no argument has nothing to check, and its tools
/// are not looked up for it.
fn check_tool_param_headers(request: &Request, http: HttpCheck<'_>) -> Result<(), McpError> {
    if !http.catalog.mirrors_params() {
        return Ok(());
    }
    let Some(name) = request.target() else {
        return Ok(());
    };
    let header_params = http.catalog.header_params(name);
    if header_params.is_empty() {
        return Ok(());
    }
    let args = request
        .params
        .as_ref()
        .and_then(|p| p.get("arguments"))
        .and_then(Value::as_object);
    check_param_headers(header_params, args, http.headers)
}

fn check_headers(request: &Request, meta: &RequestMeta, h: &HttpHeaders) -> Result<(), McpError> {
    let version = h
        .protocol_version
        .map(|v| v.text("MCP-Protocol-Version"))
        .transpose()?;
    match version.map(str::trim) {
        None => {
            return Err(McpError::header_mismatch(
                "Missing MCP-Protocol-Version header",
            ))
        }
        Some(v) if v != meta.protocol_version => {
            return Err(McpError::header_mismatch(format!(
                "MCP-Protocol-Version header '{v}' does not match _meta protocolVersion '{}'",
                meta.protocol_version
            )))
        }
        Some(_) => {}
    }
    let method = h.method.map(|m| m.text("Mcp-Method")).transpose()?;
    match method.map(str::trim) {
        None => return Err(McpError::header_mismatch("Missing Mcp-Method header")),
        Some(m) if m != request.method.as_str() => {
            return Err(McpError::header_mismatch(format!(
                "Mcp-Method header '{m}' does not match body method '{}'",
                request.method
            )))
        }
        Some(_) => {}
    }
    if let Some(body_name) = request.target() {
        let Some(raw) = h.name else {
            return Err(McpError::header_mismatch(format!(
                "Missing Mcp-Name header for {}",
                request.method
            )));
        };
        let header_name = decode_header_value(raw.text("Mcp-Name")?)?;
        if header_name != body_name {
            return Err(McpError::header_mismatch(format!(
                "Mcp-Name header '{header_name}' does not match body value '{body_name}'"
            )));
        }
    }
    Ok(())
}

/// Decodes a header value: surrounding whitespace is not part of it, and
/// `=?base64?...?=` carries UTF-8 that is not safe as plain ASCII. A plain value is borrowed,
/// not copied: every modern HTTP request that names a target decodes its `Mcp-Name`.
pub fn decode_header_value(raw: &str) -> Result<Cow<'_, str>, McpError> {
    let raw = raw.trim();
    let Some(encoded) = raw
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    else {
        return Ok(Cow::Borrowed(raw));
    };
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(encoded)
        .map_err(|_| McpError::header_mismatch("Invalid base64 in an Mcp header value"))?;
    String::from_utf8(bytes)
        .map(Cow::Owned)
        .map_err(|_| McpError::header_mismatch("Mcp header value is not UTF-8"))
}

/// Checks `Mcp-Param-{Name}` headers of a `tools/call` against the arguments they mirror.
pub fn check_param_headers(
    params: &[HeaderParam],
    args: Option<&Map<String, Value>>,
    headers: &HttpHeaders,
) -> Result<(), McpError> {
    for p in params {
        let sent = headers.params.values(&p.header);
        if sent.len() > 1 {
            return Err(McpError::header_mismatch(format!(
                "Duplicate Mcp-Param-{} header",
                p.header
            )));
        }
        let header = sent.first().copied();
        let body = args
            .and_then(|a| a.get(&p.property))
            .filter(|v| !v.is_null());
        match (body, header) {
            (None, None) => {}
            (Some(_), None) => {
                return Err(McpError::header_mismatch(format!(
                    "Missing Mcp-Param-{} header for argument '{}'",
                    p.header, p.property
                )))
            }
            (None, Some(_)) => {
                return Err(McpError::header_mismatch(format!(
                    "Mcp-Param-{} header present but argument '{}' is absent",
                    p.header, p.property
                )))
            }
            (Some(body), Some(raw)) => {
                let value = decode_header_value(raw.text(&format!("Mcp-Param-{}", p.header))?)?;
                if !header_matches(p.kind, &value, body) {
                    return Err(McpError::header_mismatch(format!(
                        "Mcp-Param-{} header value does not match argument '{}'",
                        p.header, p.property
                    )));
                }
            }
        }
    }
    Ok(())
}

fn header_matches(kind: HeaderKind, header: &str, body: &Value) -> bool {
    match (kind, body) {
        (HeaderKind::Integer, Value::Number(n)) => match (header.parse::<i64>(), n.as_i64()) {
            (Ok(h), Some(b)) => h == b,
            _ => header
                .parse::<f64>()
                .ok()
                .zip(n.as_f64())
                .is_some_and(|(h, b)| h == b),
        },
        (HeaderKind::Boolean, Value::Bool(b)) => header == if *b { "true" } else { "false" },
        (_, Value::String(s)) => header == s,
        (_, Value::Number(n)) => header == n.to_string(),
        (_, Value::Bool(b)) => header == b.to_string(),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{Incoming, RequestId};
    use serde_json::json;

    fn request(method: &str, params: Value) -> Request {
        Request {
            id: RequestId::Number(1.into()),
            method: method.into(),
            params: params.as_object().cloned(),
            meta_capabilities: None,
            meta_version: None,
        }
    }

    fn meta(version: &str) -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn check(r: &mut Request, h: &HttpHeaders) -> Result<Envelope, McpError> {
        let catalog = Catalog::builder().build();
        check_modern(
            r,
            Some(HttpCheck {
                headers: h,
                catalog: &catalog,
            }),
        )
    }

    fn headers<'a>(version: &'a str, method: &'a str, name: Option<&'a str>) -> HttpHeaders<'a> {
        HttpHeaders {
            protocol_version: Some(HeaderText::Text(version)),
            method: Some(HeaderText::Text(method)),
            name: name.map(HeaderText::Text),
            ..HttpHeaders::default()
        }
    }

    #[test]
    fn a_header_version_that_differs_from_meta_is_a_mismatch() {
        let mut r = request("tools/list", json!({"_meta": meta("v999.0.0")}));
        let e = check(&mut r, &headers("2026-07-28", "tools/list", None)).expect_err("mismatch");
        assert_eq!(e.code.code(), -32020);
    }

    #[test]
    fn an_unknown_version_in_both_places_is_unsupported() {
        let mut r = request("tools/list", json!({"_meta": meta("v999.0.0")}));
        let e = check(&mut r, &headers("v999.0.0", "tools/list", None)).expect_err("unsupported");
        assert_eq!(e.code.code(), -32022);
        assert_eq!(
            e.data,
            Some(json!({"supported": ["2026-07-28"], "requested": "v999.0.0"}))
        );
    }

    #[test]
    fn mcp_method_is_case_sensitive() {
        let mut r = request("tools/list", json!({"_meta": meta("2026-07-28")}));
        assert!(check(&mut r, &headers("2026-07-28", "TOOLS/LIST", None)).is_err());
    }

    #[test]
    fn mcp_name_is_decoded_before_comparing() {
        let call = || {
            request(
                "tools/call",
                json!({"name": "héllo", "_meta": meta("2026-07-28")}),
            )
        };
        let encoded = format!(
            "=?base64?{}?=",
            base64::engine::general_purpose::STANDARD.encode("héllo")
        );
        assert!(check(
            &mut call(),
            &headers("2026-07-28", "tools/call", Some(&encoded))
        )
        .is_ok());
        let e = check(&mut call(), &headers("2026-07-28", "tools/call", None))
            .expect_err("no Mcp-Name");
        assert_eq!(e.code.code(), -32020, "{}", e.message);
    }

    #[test]
    fn an_mcp_name_that_is_not_ascii_is_invalid_not_missing() {
        let mut r = request(
            "tools/call",
            json!({"name": "héllo", "_meta": meta("2026-07-28")}),
        );
        let mut h = headers("2026-07-28", "tools/call", None);
        h.name = Some(HeaderText::Invalid);
        let e = check(&mut r, &h).expect_err("invalid");
        assert_eq!(e.code.code(), -32020);
        assert!(
            e.message.contains("Mcp-Name header is not valid") && e.message.contains("base64"),
            "{}",
            e.message
        );
    }

    #[test]
    fn the_declared_capabilities_move_into_the_envelope_and_the_rest_of_meta_stays() {
        let mut r = request(
            "tools/list",
            json!({"_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
                "acme/trace": "t-1",
            }}),
        );
        let envelope = check_modern(&mut r, None).expect("valid");
        assert!(envelope.meta().client_capabilities.has("sampling"));
        assert_eq!(
            r.params.expect("params")["_meta"],
            json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "acme/trace": "t-1"})
        );
    }

    #[test]
    fn a_parsed_requests_version_and_capabilities_are_the_envelopes_and_the_rest_of_meta_stays() {
        let body = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"sampling":{}},"acme/trace":"t-1"}}}"#;
        let Ok(Incoming::Request(mut r)) = Incoming::parse(body) else {
            panic!("a request")
        };
        let envelope = check_modern(&mut r, None).expect("valid");
        assert_eq!(envelope.version, ProtocolVersion::V2026_07_28);
        assert!(envelope.meta().client_capabilities.has("sampling"));
        assert!(r.is_modern(), "the request still says it is modern");
        assert_eq!(
            r.params.expect("params")["_meta"],
            json!({"acme/trace": "t-1"})
        );
    }

    #[test]
    fn initialize_is_a_removed_method_even_without_meta_and_names_the_versions() {
        let mut r = request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {}}),
        );
        let e = check_modern(&mut r, None).expect_err("removed");
        assert_eq!(e.code.code(), -32601);
        assert_eq!(e.data, Some(json!({"supported": ["2026-07-28"]})));
    }

    #[test]
    fn integer_param_headers_compare_numerically() {
        let p = vec![HeaderParam {
            header: "Count".into(),
            property: "count".into(),
            kind: HeaderKind::Integer,
        }];
        let args = json!({"count": 42});
        let sent = vec![("count", HeaderText::Text("042"))];
        let h = HttpHeaders {
            params: &sent,
            ..Default::default()
        };
        assert!(check_param_headers(&p, args.as_object(), &h).is_ok());
    }

    #[test]
    fn a_param_header_without_its_argument_is_rejected() {
        let p = vec![HeaderParam {
            header: "Region".into(),
            property: "region".into(),
            kind: HeaderKind::String,
        }];
        let sent = vec![("region", HeaderText::Text("eu"))];
        let h = HttpHeaders {
            params: &sent,
            ..Default::default()
        };
        assert!(check_param_headers(&p, None, &h).is_err());
        assert!(check_param_headers(
            &p,
            json!({"region": "eu"}).as_object(),
            &HttpHeaders::default()
        )
        .is_err());
    }
}
