//! DNS-rebinding protection: requests whose `Host` (over HTTP/2, `:authority`) or `Origin`
//! is not on the allow-list are refused (403) before anything else happens. The default allows only loopback names, which
//! is right for a server bound to localhost; a deployment behind a load balancer lists its
//! public host names, or `*` when the proxy already enforces them.
//!
//! Hosts are read with a real URL parser's rules (the `url` crate, WHATWG, as a browser reads
//! an `Origin`), never by matching prefixes: `[::1].evil.com` is not `[::1]`. Only the port is
//! cut off an authority, after the closing bracket of an IPv6 host. A header that is more than
//! a host and a port (userinfo, a path, whitespace) is refused. A repeated
//! `Host`, `Origin` or `Authorization` is refused first, with 400.

use std::future::{ready, Ready};

use actix_web::dev::{forward_ready, Service, ServiceRequest, ServiceResponse, Transform};
use actix_web::http::Version;
use actix_web::{web, HttpRequest};
use futures_util::future::Either;

use super::error::RpcError;
use super::headers::Headers;
use super::McpService;
use crate::protocol::error::ErrorCode;
use crate::protocol::McpError;

/// The guard as actix-web middleware on the MCP endpoint's service (`mod.rs` applies it): a
/// refused request is answered 403 before its body is read, so it costs nothing, and its
/// error has no id. Written as a `Transform` rather than with `middleware::from_fn`, whose
/// boxed service and future cost about a thousand instructions a request (BENCHMARKS.md).
#[derive(Debug, Clone, Copy)]
pub(crate) struct GuardMiddleware;

impl<S> Transform<S, ServiceRequest> for GuardMiddleware
where
    S: Service<ServiceRequest, Response = ServiceResponse, Error = actix_web::Error>,
{
    type Response = ServiceResponse;
    type Error = actix_web::Error;
    type Transform = Guarded<S>;
    type InitError = ();
    type Future = Ready<Result<Guarded<S>, ()>>;

    fn new_transform(&self, service: S) -> Self::Future {
        ready(Ok(Guarded { service }))
    }
}

/// A service behind the host guard.
#[derive(Debug)]
pub(crate) struct Guarded<S> {
    service: S,
}

impl<S> Service<ServiceRequest> for Guarded<S>
where
    S: Service<ServiceRequest, Response = ServiceResponse, Error = actix_web::Error>,
{
    type Response = ServiceResponse;
    type Error = actix_web::Error;
    type Future = Either<Ready<Result<ServiceResponse, actix_web::Error>>, S::Future>;

    forward_ready!(service);

    fn call(&self, req: ServiceRequest) -> Self::Future {
        if let Some(service) = req.app_data::<web::Data<McpService>>() {
            if let Some(name) = Headers::of(req.request()).repeated_singleton() {
                tracing::warn!(header = name, "refused a repeated header");
                service.metrics.record_rejection();
                let error = McpError::invalid_request(format!("Repeated {name} header"));
                return Either::Left(ready(Err(RpcError::refused(None, error).into())));
            }
            if let Err(why) = service.http.guard.check(req.request()) {
                tracing::warn!(why, "refused by the host/origin guard");
                service.metrics.record_rejection();
                let refusal = RpcError::refused(None, McpError::new(ErrorCode::Forbidden, why));
                return Either::Left(ready(Err(refusal.into())));
            }
        }
        Either::Right(self.service.call(req))
    }
}

/// The host names (and further origins) a request may name in `Host`, `:authority` and, when
/// it sends one, `Origin`; anything else is refused with 403.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostGuard {
    hosts: Vec<String>,
    origins: Vec<String>,
}

impl HostGuard {
    /// `hosts`: host names (no port) allowed in `Host` and in `Origin`. `origins`: further
    /// full origins (`https://app.example.com`) allowed in `Origin`. `*` in `hosts` allows any.
    /// Each is normalised as the parser reads a request's (`LOCALHOST` is `localhost`).
    pub fn new(hosts: Vec<String>, origins: Vec<String>) -> Self {
        Self {
            hosts: hosts
                .into_iter()
                .map(|h| match url::Host::parse(&h) {
                    Ok(host) if h != "*" => host.to_string(),
                    _ => h.to_ascii_lowercase(),
                })
                .collect(),
            origins: origins
                .into_iter()
                .map(|o| o.trim_end_matches('/').to_ascii_lowercase())
                .collect(),
        }
    }

    /// Loopback only: `localhost`, `127.0.0.1` and `[::1]`, on any port: the `HttpConfig` default.
    pub fn localhost() -> Self {
        Self::new(
            vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            Vec::new(),
        )
    }

    /// Whether every host the request names is allowed, and it names one.
    ///
    /// A request can name its host twice: in `Host`, and in the request URI's authority,
    /// where actix puts HTTP/2's `:authority` pseudo-header and HTTP/1.1's absolute-form
    /// target. Where they differ the URI wins in HTTP (RFC 9112 §3.2.2, RFC 9113 §8.3.1) and
    /// `Host` may win at a proxy, so both must be allowed: a request cannot pick whichever
    /// suits it. An unreadable `Host` names no host, which is refused. Only HTTP/2 may
    /// leave `Host` out (HTTP/1.1 must send it, RFC 9112 §3.2).
    fn hosts_allowed(&self, req: &HttpRequest) -> bool {
        let host = Headers::of(req).host();
        let authority = req.uri().authority().map(|a| a.as_str());
        match (host, authority) {
            (None, None) => false,
            (None, Some(_)) if req.version() < Version::HTTP_2 => false,
            _ => host
                .into_iter()
                .chain(authority)
                .all(|a| self.authority_allowed(a)),
        }
    }

    /// Whether `authority` (`host[:port]`) is exactly a host and a port, with an allowed host.
    ///
    /// The host is read by the URL parser's host rules (`url::Host::parse`: percent-decoding,
    /// IDNA, WHATWG IPv4), with one shortcut: a host written exactly as an allowed one (ASCII
    /// case aside) is that host, since the allow-list holds the parser's own spelling. So the
    /// usual `Host: 127.0.0.1:8080` costs a comparison, not a parse.
    fn authority_allowed(&self, authority: &str) -> bool {
        let Some((host, port)) = clean(authority).and_then(split_port) else {
            return false;
        };
        if !(port.is_empty()
            || port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok())
        {
            return false;
        }
        if self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
            return true;
        }
        url::Host::parse(host).is_ok_and(|parsed| self.host_allowed(&parsed.to_string()))
    }

    fn url_host_allowed(&self, url: &url::Url) -> bool {
        url.host_str().is_some_and(|host| self.host_allowed(host))
    }

    /// Whether `host`, as the parser spells it, is on the allow-list.
    fn host_allowed(&self, host: &str) -> bool {
        self.hosts
            .iter()
            .any(|h| h == "*" || h.eq_ignore_ascii_case(host))
    }

    /// Why the request is refused, if it is.
    pub fn check(&self, req: &HttpRequest) -> Result<(), &'static str> {
        if !self.hosts_allowed(req) {
            return Err("Host not allowed");
        }
        let Some(origin) = Headers::of(req).origin() else {
            return Ok(());
        };
        let listed = origin.trim_end_matches('/').to_ascii_lowercase();
        if self.origins.contains(&listed) {
            return Ok(());
        }
        // An origin is a scheme, a host and a port: `/` is the only path the parser may add.
        let allowed = clean(origin)
            .and_then(|o| url::Url::parse(o).ok())
            .filter(|url| url.origin().is_tuple() && is_bare_origin(url) && url.path() == "/")
            .is_some_and(|url| self.url_host_allowed(&url));
        if allowed {
            Ok(())
        } else {
            Err("Origin not allowed")
        }
    }
}

/// The header's text when it is all visible ASCII: the parser drops tabs and newlines inside
/// a URL, so `local\thost` would read as `localhost`, which no proxy would agree with.
fn clean(text: &str) -> Option<&str> {
    (!text.is_empty() && text.bytes().all(|b| b.is_ascii_graphic())).then_some(text)
}

/// `authority` cut into its host and its port (empty when there is none): an IPv6 host keeps
/// its brackets, and anything after them other than `:port` makes it no authority at all.
fn split_port(authority: &str) -> Option<(&str, &str)> {
    // Only a bracketed host is searched for its `]`: the usual authority is read once.
    let bracketed = authority.starts_with('[').then(|| authority.find(']'));
    let (host, rest) = match bracketed.flatten() {
        Some(end) => authority.split_at(end + 1),
        None => return Some(authority.split_once(':').unwrap_or((authority, ""))),
    };
    match rest {
        "" => Some((host, "")),
        _ => rest.strip_prefix(':').map(|port| (host, port)),
    }
}

/// No userinfo, query or fragment: nothing but a scheme, a host, a port and a path.
fn is_bare_origin(url: &url::Url) -> bool {
    url.username().is_empty()
        && url.password().is_none()
        && url.query().is_none()
        && url.fragment().is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use actix_web::http::header;
    use actix_web::test::TestRequest;

    #[test]
    fn loopback_host_with_port_is_allowed() {
        let req = TestRequest::default()
            .insert_header(("host", "127.0.0.1:8080"))
            .to_http_request();
        assert!(HostGuard::localhost().check(&req).is_ok());
    }

    #[test]
    fn an_authority_is_cut_at_its_port_and_a_bracketed_host_keeps_its_brackets() {
        let cases = [
            ("127.0.0.1:8080", Some(("127.0.0.1", "8080"))),
            ("localhost", Some(("localhost", ""))),
            ("[::1]:8080", Some(("[::1]", "8080"))),
            ("[::1]", Some(("[::1]", ""))),
            ("[::1].evil.com", None),
            // Unclosed, or closed without an opening: cut at the first colon like any other.
            ("[::1", Some(("[", ":1"))),
            ("a]:80", Some(("a]", "80"))),
        ];
        for (authority, split) in cases {
            assert_eq!(split_port(authority), split, "{authority}");
        }
    }

    #[test]
    fn a_foreign_host_is_refused() {
        let req = TestRequest::default()
            .insert_header(("host", "evil.example.com"))
            .to_http_request();
        assert!(HostGuard::localhost().check(&req).is_err());
    }

    #[test]
    fn a_foreign_origin_is_refused_even_with_a_good_host() {
        let req = TestRequest::default()
            .insert_header(("host", "localhost:8080"))
            .insert_header(("origin", "http://evil.example.com"))
            .to_http_request();
        assert!(HostGuard::localhost().check(&req).is_err());
    }

    #[test]
    fn an_http2_request_without_host_is_judged_by_its_authority() {
        // What an HTTP/2 request looks like: `:authority` in the URI, no `Host`.
        let req = TestRequest::default()
            .version(Version::HTTP_2)
            .uri("http://127.0.0.1:8080/t/demo/mcp")
            .to_http_request();
        assert!(req.headers().get(header::HOST).is_none());
        assert!(HostGuard::localhost().check(&req).is_ok());
    }

    #[test]
    fn an_http2_request_with_a_foreign_authority_is_refused() {
        let req = TestRequest::default()
            .version(Version::HTTP_2)
            .uri("http://evil.example/t/demo/mcp")
            .to_http_request();
        assert_eq!(HostGuard::localhost().check(&req), Err("Host not allowed"));
    }

    #[test]
    fn an_http1_request_without_host_is_refused_whatever_its_uri() {
        let req = TestRequest::default()
            .uri("http://localhost/t/demo/mcp")
            .to_http_request();
        assert!(req.headers().get(header::HOST).is_none());
        assert_eq!(HostGuard::localhost().check(&req), Err("Host not allowed"));
    }

    #[test]
    fn a_foreign_host_header_is_refused_beside_a_loopback_authority() {
        let req = TestRequest::default()
            .uri("http://localhost:8080/t/demo/mcp")
            .insert_header(("host", "evil.example"))
            .to_http_request();
        assert!(HostGuard::localhost().check(&req).is_err());
    }

    #[test]
    fn a_foreign_authority_is_refused_beside_a_loopback_host_header() {
        for version in [Version::HTTP_11, Version::HTTP_2] {
            let req = TestRequest::default()
                .version(version)
                .uri("http://evil.example/t/demo/mcp")
                .insert_header(("host", "localhost"))
                .to_http_request();
            assert!(HostGuard::localhost().check(&req).is_err(), "{version:?}");
        }
    }

    #[test]
    fn a_request_naming_no_host_at_all_is_refused() {
        let req = TestRequest::default().uri("/t/demo/mcp").to_http_request();
        assert!(HostGuard::localhost().check(&req).is_err());
    }

    #[test]
    fn host_names_compare_without_regard_to_case() {
        let req = TestRequest::default()
            .insert_header(("host", "LocalHost:8080"))
            .to_http_request();
        assert!(HostGuard::localhost().check(&req).is_ok());
        let listed = HostGuard::new(vec!["MCP.Example.com".into()], Vec::new());
        let req = TestRequest::default()
            .insert_header(("host", "mcp.example.COM"))
            .to_http_request();
        assert!(listed.check(&req).is_ok());
    }

    #[test]
    fn an_ipv6_loopback_host_is_allowed() {
        let req = TestRequest::default()
            .insert_header(("host", "[::1]:9000"))
            .to_http_request();
        assert!(HostGuard::localhost().check(&req).is_ok());
    }

    fn host_allowed(host: &str) -> bool {
        let req = TestRequest::default()
            .insert_header(("host", host))
            .to_http_request();
        HostGuard::localhost().check(&req).is_ok()
    }

    #[test]
    fn a_host_that_only_starts_with_an_allowed_one_is_refused() {
        for host in [
            "[::1].evil.com",
            "[::1]evil.com",
            "[::1]:3000.evil.com",
            "localhost.evil.com",
            "localhost:80@evil.com",
        ] {
            assert!(!host_allowed(host), "{host}");
        }
    }

    #[test]
    fn a_host_header_that_is_more_than_a_host_and_a_port_is_refused() {
        for host in [
            "evil.com@localhost",
            "localhost/x",
            "localhost?x",
            "localhost#x",
            "local host",
            "localhost:abc",
            "localhost:99999",
            "",
        ] {
            assert!(!host_allowed(host), "{host:?}");
        }
    }

    #[test]
    fn a_host_with_a_path_even_an_empty_one_is_refused() {
        for host in ["localhost/", "localhost:8080/", "[::1]/", "[::1]:80/"] {
            assert!(!host_allowed(host), "{host}");
        }
    }

    #[test]
    fn a_host_spelled_otherwise_is_judged_by_what_the_parser_reads() {
        // Percent-encoding and WHATWG IPv4 forms name the allowed host they parse to.
        for host in ["local%68ost:8080", "0x7f.1", "2130706433:80"] {
            assert!(host_allowed(host), "{host}");
        }
        for host in ["0x7f.2", "%65vil.com", "xn--:80"] {
            assert!(!host_allowed(host), "{host}");
        }
    }

    #[test]
    fn any_host_still_means_exactly_a_host_and_a_port() {
        let any = HostGuard::new(vec!["*".into()], Vec::new());
        let allowed = |host: &str| {
            let req = TestRequest::default()
                .insert_header(("host", host))
                .to_http_request();
            any.check(&req).is_ok()
        };
        for host in [
            "mcp.example.com",
            "mcp.example.com:443",
            "[2001:db8::1]:80",
            "10.0.0.1",
        ] {
            assert!(allowed(host), "{host}");
        }
        for host in ["a@b", "b/x", "b:99999", "b:x", "[::1]x", "[::1", "a b", ""] {
            assert!(!allowed(host), "{host:?}");
        }
    }

    #[test]
    fn loopback_hosts_with_and_without_a_port_are_allowed() {
        for host in [
            "[::1]",
            "[::1]:3000",
            "localhost",
            "127.0.0.1:1",
            "LOCALHOST:8080",
        ] {
            assert!(host_allowed(host), "{host}");
        }
    }

    #[test]
    fn an_origin_is_parsed_not_cut() {
        let check = |origin: &str| {
            let req = TestRequest::default()
                .insert_header(("host", "localhost"))
                .insert_header(("origin", origin))
                .to_http_request();
            HostGuard::localhost().check(&req).is_ok()
        };
        assert!(check("http://[::1]:3000"));
        assert!(check("https://localhost"));
        for origin in [
            "http://[::1].evil.com",
            "http://localhost.evil.com",
            "http://localhost@evil.com",
            "http://evil.com/localhost",
            "null",
            "localhost",
        ] {
            assert!(!check(origin), "{origin}");
        }
    }
}
