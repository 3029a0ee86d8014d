//! Every request header the MCP endpoint reads, read here: `Accept`, `Authorization`,
//! `Mcp-Session-Id`, `MCP-Protocol-Version`, `traceparent` and `tracestate`, and the SEP-2243 headers the envelope checks
//! compare with the body. Borrowed from the request, never copied, and looked up by
//! [`HeaderName`] constants: a lookup by `&str` builds a `HeaderName` first, and for a name
//! that is not a standard header that copies it into a new allocation, several per request
//! (BENCHMARKS.md, "instructions per request").

use actix_web::http::header::{self, HeaderMap, HeaderName};
use actix_web::HttpRequest;

use crate::dispatch::envelope::{HeaderText, HttpHeaders, ParamHeaders};
use crate::protocol::{Era, McpError, ProtocolVersion};

/// `Mcp-Session-Id`, as the client sends it and as `initialize` answers it.
pub(crate) const SESSION_ID: HeaderName = HeaderName::from_static("mcp-session-id");
/// `MCP-Protocol-Version`.
const PROTOCOL_VERSION: HeaderName = HeaderName::from_static("mcp-protocol-version");
/// `Mcp-Method` (SEP-2243).
const METHOD: HeaderName = HeaderName::from_static("mcp-method");
/// `Mcp-Name` (SEP-2243).
const NAME: HeaderName = HeaderName::from_static("mcp-name");

/// `traceparent` (W3C Trace Context).
const TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
/// `tracestate` (W3C Trace Context).
const TRACESTATE: HeaderName = HeaderName::from_static("tracestate");

/// The headers of one request.
#[derive(Clone, Copy)]
pub(crate) struct Headers<'a>(&'a HeaderMap);

impl<'a> Headers<'a> {
    pub(crate) fn of(req: &'a HttpRequest) -> Self {
        Self(req.headers())
    }

    /// The value of `name`, if sent as visible ASCII.
    fn text(&self, name: &HeaderName) -> Option<&'a str> {
        self.0.get(name).and_then(|v| v.to_str().ok())
    }

    /// The caller's trace, as W3C Trace Context names it: `traceparent`, and `tracestate`
    /// if sent.
    pub(crate) fn trace_context(&self) -> Option<(&'a str, Option<&'a str>)> {
        Some((self.text(&TRACEPARENT)?, self.text(&TRACESTATE)))
    }

    /// `Host`: present but unreadable is the empty host, which no guard allows.
    pub(crate) fn host(&self) -> Option<&'a str> {
        let host = self.0.get(header::HOST)?;
        Some(host.to_str().unwrap_or_default())
    }

    /// `Origin`: present but unreadable is the empty origin, which no guard allows.
    pub(crate) fn origin(&self) -> Option<&'a str> {
        let origin = self.0.get(header::ORIGIN)?;
        Some(origin.to_str().unwrap_or_default())
    }

    /// The first of `Host`, `Origin` and `Authorization` sent more than once, if one is.
    /// Each names one thing (the host, the page, the caller), and a proxy reading the first
    /// of two must not see another than we do: a repeated one is refused, never picked.
    pub(crate) fn repeated_singleton(&self) -> Option<&'static str> {
        [
            (header::HOST, "Host"),
            (header::ORIGIN, "Origin"),
            (header::AUTHORIZATION, "Authorization"),
        ]
        .into_iter()
        .find(|(name, _)| self.0.get_all(name).nth(1).is_some())
        .map(|(_, shown)| shown)
    }

    /// Whether the client reads SSE on a POST (a missing `Accept` accepts anything).
    pub(crate) fn accepts_sse(&self) -> bool {
        self.text(&header::ACCEPT)
            .is_none_or(|a| a.contains("text/event-stream") || a.contains("*/*"))
    }

    /// Whether a GET asks for an SSE stream: it must say so.
    pub(crate) fn asks_for_sse(&self) -> bool {
        self.text(&header::ACCEPT)
            .is_some_and(|a| a.contains("text/event-stream"))
    }

    /// The bearer token of `Authorization: Bearer <token>` (the scheme in any case), trimmed.
    /// The scheme and its space are compared as bytes: a search for the space cost a hundred
    /// instructions of every authenticated request.
    pub(crate) fn bearer(&self) -> Option<&'a str> {
        const SCHEME: &[u8] = b"bearer ";
        let value = self.text(&header::AUTHORIZATION)?;
        let scheme = value.as_bytes().get(..SCHEME.len())?;
        // ASCII when it matches, so the token starts on a character boundary.
        scheme
            .eq_ignore_ascii_case(SCHEME)
            .then(|| value[SCHEME.len()..].trim())
    }

    /// The legacy session the request names.
    pub(crate) fn session_id(&self) -> Option<&'a str> {
        self.text(&SESSION_ID).map(str::trim)
    }

    /// `MCP-Protocol-Version`, trimmed.
    pub(crate) fn protocol_version(&self) -> Option<&'a str> {
        self.text(&PROTOCOL_VERSION).map(str::trim)
    }

    /// The era of the version `MCP-Protocol-Version` names, if it names one served here.
    pub(crate) fn version_era(&self) -> Option<Era> {
        self.protocol_version()
            .and_then(ProtocolVersion::parse)
            .map(|v| v.era())
    }

    /// `Mcp-Method`, trimmed.
    pub(crate) fn mcp_method(&self) -> Option<&'a str> {
        self.text(&METHOD).map(str::trim)
    }

    /// The MCP headers the envelope checks compare with the body. A repeated MCP header is
    /// refused: intermediaries route on these headers, and two values would let them see one
    /// request and the server another. `Mcp-Param-*` headers are looked up by name, and
    /// only by a check that needs them.
    pub(crate) fn mcp(&self) -> Result<HttpHeaders<'a>, McpError> {
        let single = |name: &HeaderName| {
            let mut values = self.0.get_all(name);
            let first = values.next().map(text);
            match values.next() {
                Some(_) => Err(McpError::header_mismatch(format!("Repeated {name} header"))),
                None => Ok(first),
            }
        };
        Ok(HttpHeaders {
            protocol_version: single(&PROTOCOL_VERSION)?,
            method: single(&METHOD)?,
            name: single(&NAME)?,
            params: self.0,
        })
    }
}

/// Found by a scan of the names, which builds no `HeaderName` (for a name that is not a
/// standard header's, an allocation): asked only for a tool that mirrors arguments.
impl ParamHeaders for HeaderMap {
    fn values(&self, name: &str) -> Vec<HeaderText<'_>> {
        self.iter()
            .filter(|(sent, _)| {
                sent.as_str()
                    .strip_prefix("mcp-param-")
                    .is_some_and(|suffix| suffix.eq_ignore_ascii_case(name))
            })
            .map(|(_, value)| text(value))
            .collect()
    }
}

fn text(value: &header::HeaderValue) -> HeaderText<'_> {
    value.to_str().map_or(HeaderText::Invalid, HeaderText::Text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::test::TestRequest;

    #[test]
    fn the_bearer_token_follows_a_bearer_scheme_of_any_case_and_nothing_else() {
        let bearer = |value: &str| {
            let req = TestRequest::default()
                .insert_header(("authorization", value))
                .to_http_request();
            Headers::of(&req).bearer().map(str::to_owned)
        };
        assert_eq!(bearer("Bearer rt_abc").as_deref(), Some("rt_abc"));
        assert_eq!(bearer("bEaReR  rt_abc ").as_deref(), Some("rt_abc"));
        assert_eq!(bearer("Basic rt_abc"), None);
        assert_eq!(bearer("Bearer"), None);
        assert_eq!(bearer("Bearerx rt_abc"), None);
    }

    #[test]
    fn an_mcp_param_header_is_read_by_its_name_in_any_case_with_every_value_sent() {
        let req = TestRequest::default()
            .append_header(("mcp-param-region", "eu"))
            .append_header(("Mcp-Param-Region", "us"))
            .append_header(("mcp-param-zone", "a"))
            .to_http_request();
        let headers = Headers::of(&req);
        let mcp = headers.mcp().expect("no repeated header");

        let region = [HeaderText::Text("eu"), HeaderText::Text("us")];
        assert_eq!(mcp.params.values("Region"), region);
        assert_eq!(mcp.params.values("zone"), [HeaderText::Text("a")]);
        assert!(mcp.params.values("tier").is_empty());
        assert!(mcp.params.values("not a name").is_empty());
    }

    #[test]
    fn a_second_host_origin_or_authorization_is_named_and_one_of_each_is_not() {
        for (name, shown) in [
            ("host", "Host"),
            ("origin", "Origin"),
            ("authorization", "Authorization"),
        ] {
            let req = TestRequest::default()
                .append_header((name, "a"))
                .append_header((name, "a"))
                .to_http_request();
            assert_eq!(Headers::of(&req).repeated_singleton(), Some(shown));
        }
        let once = TestRequest::default()
            .insert_header(("host", "a"))
            .insert_header(("origin", "b"))
            .insert_header(("authorization", "c"))
            .insert_header(("accept", "x"))
            .append_header(("accept", "y"))
            .to_http_request();
        assert_eq!(Headers::of(&once).repeated_singleton(), None);
    }
}
