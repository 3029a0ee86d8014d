//! The driver's HTTP/1.1 keep-alive connection for the modern modes (`call`, `mrtr`, `mix`).
//!
//! Why not `awc` here: a load generator has to cost much less per request than the server it
//! measures, or the ratios it reports are partly its own. Through `awc` the driver spent about
//! as much CPU per request as Roundtrip's server (27–30 µs against 30–32 µs, BENCHMARKS.md),
//! most of it building and parsing header maps, looking up its pool and re-parsing the URL. Here
//! a request is one write of a head prepared once, the tool's name, the length and the body; a
//! response is parsed by `httparse` straight from the read buffer. The legacy mode, which reads
//! a streamed SSE body, stays on `awc`.
//!
//! Framing is HTTP/1.1's own: a `Content-Length` body or a chunked one; a response that says
//! `Connection: close` (or a broken, timed-out or refused connection) is not reused, and the
//! next request opens a new one. So is a connection the server closed while it was idle (its
//! keep-alive timeout, 5 s for actix-web): one idle for [`PROBE_AFTER_IDLE`] is checked before
//! it carries a request, so that the request is not written into a closed connection and
//! reported as the server's failure.

use std::io::Write as _;
use std::time::{Duration, Instant};

use actix_web::http::Uri;
use actix_web::web::Bytes;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::flow::{CheckError, PROTOCOL_VERSION};

/// The most header lines a response may have.
const MAX_HEADERS: usize = 32;
/// The largest response the driver reads (the same cap `awc` was given).
const MAX_RESPONSE: usize = 1 << 20;
/// How long a connection may sit idle before it is checked for the server's close: well
/// under any keep-alive timeout, and long enough that a busy connection is never checked (a
/// check is a system call).
const PROBE_AFTER_IDLE: Duration = Duration::from_millis(500);

/// One client's connection to the endpoint, opened on first use and after any failure.
pub(crate) struct Connection {
    /// `host:port` to connect to.
    address: Result<String, String>,
    /// Every request's bytes up to the `mcp-name` value.
    head: Vec<u8>,
    stream: Option<TcpStream>,
    /// Bytes read and not yet consumed.
    input: Vec<u8>,
    /// The request being written (reused).
    output: Vec<u8>,
    timeout: Duration,
    /// When the stream's last exchange ended.
    idle_since: Instant,
}

impl Connection {
    /// A connection to `url` (`http://host:port/path`) that sends `authorization`, if any, with
    /// every request. A URL it cannot use makes every request fail as a transport error.
    pub(crate) fn new(url: &str, authorization: Option<&str>, timeout: Duration) -> Connection {
        let target = target(url);
        let (address, head) = match target {
            Ok((address, host, path)) => {
                let mut head = format!(
                    "POST {path} HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
                     accept: application/json, text/event-stream\r\n\
                     mcp-protocol-version: {PROTOCOL_VERSION}\r\nmcp-method: tools/call\r\n"
                );
                if let Some(authorization) = authorization {
                    head.push_str("authorization: ");
                    head.push_str(authorization);
                    head.push_str("\r\n");
                }
                head.push_str("mcp-name: ");
                (Ok(address), head.into_bytes())
            }
            Err(e) => (Err(e), Vec::new()),
        };
        Connection {
            address,
            head,
            stream: None,
            input: Vec::with_capacity(8192),
            output: Vec::with_capacity(1024),
            timeout,
            idle_since: Instant::now(),
        }
    }

    /// POSTs `body` as a `tools/call` of `name`; the status and body of the response.
    pub(crate) async fn post(
        &mut self,
        name: &str,
        body: &str,
    ) -> Result<(u16, Bytes), CheckError> {
        let exchanged = tokio::time::timeout(self.timeout, self.exchange(name, body)).await;
        match exchanged {
            Ok(Ok((status, body, reusable))) => {
                if reusable {
                    self.idle_since = Instant::now();
                } else {
                    self.stream = None;
                }
                Ok((status, body))
            }
            Ok(Err(e)) => {
                self.stream = None;
                Err(CheckError::Transport(e))
            }
            Err(_) => {
                self.stream = None;
                Err(CheckError::Transport(format!(
                    "no response within {:?}",
                    self.timeout
                )))
            }
        }
    }

    async fn exchange(&mut self, name: &str, body: &str) -> Result<(u16, Bytes, bool), String> {
        let long_idle = || self.idle_since.elapsed() >= PROBE_AFTER_IDLE;
        if self
            .stream
            .as_ref()
            .is_some_and(|s| long_idle() && !open_and_quiet(s))
        {
            self.stream = None;
        }
        if self.stream.is_none() {
            let address = self.address.as_ref().map_err(Clone::clone)?;
            let stream = TcpStream::connect(address.as_str())
                .await
                .map_err(|e| format!("connect {address}: {e}"))?;
            stream.set_nodelay(true).map_err(|e| e.to_string())?;
            self.stream = Some(stream);
            self.input.clear();
        }
        self.output.clear();
        self.output.extend_from_slice(&self.head);
        self.output.extend_from_slice(name.as_bytes());
        // Writing to a Vec cannot fail.
        let _ = write!(self.output, "\r\ncontent-length: {}\r\n\r\n", body.len());
        self.output.extend_from_slice(body.as_bytes());
        let Connection {
            stream,
            input,
            output,
            ..
        } = self;
        let stream = stream.as_mut().ok_or("no connection")?;
        stream.write_all(output).await.map_err(|e| e.to_string())?;
        read_response(stream, input).await
    }
}

/// Whether an idle connection is still open with nothing to read: not closed by the server
/// (a read would see its end), reset, or holding bytes no request asked for.
fn open_and_quiet(stream: &TcpStream) -> bool {
    matches!(
        stream.try_read(&mut [0; 1]),
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock
    )
}

/// `http://host:port/path` as the address to connect to, the `Host` header and the path.
fn target(url: &str) -> Result<(String, String, String), String> {
    let uri: Uri = url.parse().map_err(|e| format!("URL {url:?}: {e}"))?;
    if uri.scheme_str() != Some("http") {
        return Err(format!("URL {url:?}: the driver speaks plain http:// only"));
    }
    let authority = uri
        .authority()
        .ok_or_else(|| format!("URL {url:?} has no host"))?;
    let address = format!(
        "{}:{}",
        authority.host(),
        authority.port_u16().unwrap_or(80)
    );
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_owned();
    Ok((address, authority.as_str().to_owned(), path))
}

/// Reads one response from `stream`, `input` holding what was read before. The status, the
/// body, and whether the connection may carry another request.
async fn read_response(
    stream: &mut TcpStream,
    input: &mut Vec<u8>,
) -> Result<(u16, Bytes, bool), String> {
    let (status, head_len, framing, reusable) = loop {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut response = httparse::Response::new(&mut headers);
        match response
            .parse(input)
            .map_err(|e| format!("response head: {e}"))?
        {
            httparse::Status::Complete(head_len) => {
                let status = response.code.ok_or("response without a status")?;
                let (framing, close) = framing_of(response.headers)?;
                let reusable = !close && response.version == Some(1);
                break (status, head_len, framing, reusable);
            }
            httparse::Status::Partial => fill(stream, input).await?,
        }
    };
    let body = match framing {
        Framing::Length(length) => {
            if length > MAX_RESPONSE {
                return Err(format!("response body of {length} bytes"));
            }
            while input.len() < head_len + length {
                fill(stream, input).await?;
            }
            let body = Bytes::copy_from_slice(&input[head_len..head_len + length]);
            input.drain(..head_len + length);
            body
        }
        Framing::Chunked => {
            let (body, used) = loop {
                match dechunk(&input[head_len..])? {
                    Some(done) => break done,
                    None => fill(stream, input).await?,
                }
            };
            input.drain(..head_len + used);
            Bytes::from(body)
        }
    };
    Ok((status, body, reusable))
}

/// Reads more of the response, or fails at the end of the stream or past the size cap.
async fn fill(stream: &mut TcpStream, input: &mut Vec<u8>) -> Result<(), String> {
    if input.len() > MAX_RESPONSE + 64 * 1024 {
        return Err(format!("response over {MAX_RESPONSE} bytes"));
    }
    input.reserve(8192);
    match stream.read_buf(input).await {
        Ok(0) => Err("connection closed before the response ended".to_owned()),
        Ok(_) => Ok(()),
        Err(e) => Err(e.to_string()),
    }
}

/// How a response's body is delimited.
#[derive(Debug, PartialEq)]
enum Framing {
    Length(usize),
    Chunked,
}

/// The body's framing and whether the server asked to close the connection.
fn framing_of(headers: &[httparse::Header<'_>]) -> Result<(Framing, bool), String> {
    let mut framing = None;
    let mut close = false;
    for header in headers {
        let value = std::str::from_utf8(header.value).unwrap_or("");
        if header.name.eq_ignore_ascii_case("content-length") {
            let length = value
                .trim()
                .parse()
                .map_err(|_| format!("content-length {value:?}"))?;
            framing.get_or_insert(Framing::Length(length));
        } else if header.name.eq_ignore_ascii_case("transfer-encoding")
            && value.to_ascii_lowercase().contains("chunked")
        {
            framing = Some(Framing::Chunked);
        } else if header.name.eq_ignore_ascii_case("connection")
            && value.eq_ignore_ascii_case("close")
        {
            close = true;
        }
    }
    let framing = framing.ok_or("response without content-length or chunked encoding")?;
    Ok((framing, close))
}

/// Decodes a complete chunked body at the start of `input`: the body and the bytes it took,
/// or `None` while more must be read.
fn dechunk(input: &[u8]) -> Result<Option<(Vec<u8>, usize)>, String> {
    let mut body = Vec::new();
    let mut at = 0;
    loop {
        let Some(line_end) = find_crlf(&input[at..]) else {
            return Ok(None);
        };
        let line = std::str::from_utf8(&input[at..at + line_end]).map_err(|e| e.to_string())?;
        let size_hex = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size_hex, 16).map_err(|_| format!("chunk size {size_hex:?}"))?;
        at += line_end + 2;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            loop {
                let Some(end) = find_crlf(&input[at..]) else {
                    return Ok(None);
                };
                at += end + 2;
                if end == 0 {
                    return Ok(Some((body, at)));
                }
            }
        }
        // The body never exceeds the cap, so this cannot overflow, whatever size the peer
        // claims; and once it passes, `at + size + 2` cannot either.
        if size > MAX_RESPONSE - body.len() {
            return Err(format!("chunked body over {MAX_RESPONSE} bytes"));
        }
        if input.len() < at + size + 2 {
            return Ok(None);
        }
        body.extend_from_slice(&input[at..at + size]);
        if &input[at + size..at + size + 2] != b"\r\n" {
            return Err("chunk without its CRLF".to_owned());
        }
        at += size + 2;
    }
}

fn find_crlf(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).position(|w| w == b"\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_becomes_an_address_a_host_header_and_a_path() {
        let (address, host, path) =
            target("http://127.0.0.1:3203/t/demo/mcp").expect("a usable URL");
        assert_eq!(address, "127.0.0.1:3203");
        assert_eq!(host, "127.0.0.1:3203");
        assert_eq!(path, "/t/demo/mcp");
        let (address, host, path) = target("http://localhost/mcp?x=1").expect("a usable URL");
        assert_eq!(
            (address.as_str(), host.as_str(), path.as_str()),
            ("localhost:80", "localhost", "/mcp?x=1")
        );
        let (address, _, _) = target("http://[::1]:8080/mcp").expect("an IPv6 URL");
        assert_eq!(address, "[::1]:8080");
    }

    #[test]
    fn only_plain_http_urls_are_accepted() {
        assert!(target("https://example.com/mcp").is_err());
        assert!(target("not a url").is_err());
    }

    #[test]
    fn a_chunked_body_is_decoded_once_it_is_complete() {
        let whole = b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\nNEXT";
        let (body, used) = dechunk(whole).expect("valid").expect("complete");
        assert_eq!(body, b"hello world");
        assert_eq!(&whole[used..], b"NEXT");
        for cut in 0..whole.len() - 4 {
            assert_eq!(
                dechunk(&whole[..cut]).expect("valid so far"),
                None,
                "cut at {cut}"
            );
        }
        assert!(dechunk(b"zz\r\n").is_err());
        assert!(dechunk(b"2\r\nabXY").is_err());
    }

    #[test]
    fn a_chunk_size_no_body_could_have_is_an_error_not_a_panic() {
        for hostile in [
            &b"ffffffffffffffff\r\nab\r\n0\r\n\r\n"[..],
            &b"2\r\nab\r\nfffffffffffffffe\r\n"[..],
        ] {
            assert!(dechunk(hostile).is_err(), "{hostile:?}");
        }
    }

    #[test]
    fn framing_needs_a_length_or_chunks_and_notes_a_close() {
        let h = |name, value: &'static [u8]| httparse::Header { name, value };
        assert_eq!(
            framing_of(&[h("Content-Length", b"12")]),
            Ok((Framing::Length(12), false))
        );
        assert_eq!(
            framing_of(&[
                h("transfer-encoding", b"chunked"),
                h("connection", b"close")
            ]),
            Ok((Framing::Chunked, true))
        );
        assert!(framing_of(&[h("content-type", b"application/json")]).is_err());
        assert!(framing_of(&[h("content-length", b"x")]).is_err());
    }

    /// A server on a free port that answers each request on a connection with the next of
    /// `replies` (`None`: reads the request and never answers); the count of accepted
    /// connections, and the requests it read.
    async fn canned(
        replies: Vec<Option<&'static str>>,
    ) -> (
        String,
        std::rc::Rc<std::cell::RefCell<(usize, Vec<String>)>>,
    ) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/t/demo/mcp", listener.local_addr().expect("addr"));
        let seen = std::rc::Rc::new(std::cell::RefCell::new((0, Vec::new())));
        let log = seen.clone();
        actix_rt::spawn(async move {
            let mut replies = replies.into_iter();
            while let Ok((mut socket, _)) = listener.accept().await {
                log.borrow_mut().0 += 1;
                let log = log.clone();
                // This connection's replies: up to and including one that closes it.
                let mut mine = Vec::new();
                for reply in replies.by_ref() {
                    mine.push(reply);
                    if closes(reply) {
                        break;
                    }
                }
                mine.reverse();
                actix_rt::spawn(async move {
                    let mut buf = vec![0; 4096];
                    while let Some(reply) = mine.pop() {
                        let n = socket.read(&mut buf).await.unwrap_or(0);
                        if n == 0 {
                            return;
                        }
                        log.borrow_mut()
                            .1
                            .push(String::from_utf8_lossy(&buf[..n]).into_owned());
                        match reply {
                            Some(r) => socket.write_all(r.as_bytes()).await.expect("write"),
                            None => std::future::pending::<()>().await,
                        }
                        if closes(reply) {
                            return;
                        }
                    }
                });
            }
        });
        (url, seen)
    }

    fn closes(reply: Option<&str>) -> bool {
        reply.is_some_and(|r| r.contains("connection: close"))
    }

    const OK: &str = "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\n{}";

    #[actix_rt::test]
    async fn requests_share_one_keep_alive_connection_and_carry_the_mcp_headers() {
        let (url, seen) = canned(vec![Some(OK), Some(OK)]).await;
        let mut c = Connection::new(&url, Some("Bearer k"), Duration::from_secs(5));
        for _ in 0..2 {
            let (status, body) = c.post("echo", r#"{"a":1}"#).await.expect("a response");
            assert_eq!((status, &body[..]), (200, &b"{}"[..]));
        }
        let seen = seen.borrow();
        assert_eq!(seen.0, 1, "one connection for both requests");
        let request = &seen.1[0];
        assert!(
            request.starts_with("POST /t/demo/mcp HTTP/1.1\r\n"),
            "{request}"
        );
        for line in [
            "authorization: Bearer k",
            "mcp-name: echo",
            "mcp-method: tools/call",
            "content-length: 7",
        ] {
            assert!(request.contains(line), "{line} missing from {request}");
        }
        assert!(request.ends_with("\r\n\r\n{\"a\":1}"), "{request}");
    }

    #[actix_rt::test]
    async fn a_response_that_closes_the_connection_is_followed_by_a_new_one() {
        let close = "HTTP/1.1 200 OK\r\nconnection: close\r\ntransfer-encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
        let (url, seen) = canned(vec![Some(close), Some(OK)]).await;
        let mut c = Connection::new(&url, None, Duration::from_secs(5));
        assert_eq!(c.post("echo", "{}").await.expect("chunked").1, &b"{}"[..]);
        assert_eq!(c.post("echo", "{}").await.expect("sized").1, &b"{}"[..]);
        assert_eq!(seen.borrow().0, 2);
    }

    #[actix_rt::test]
    async fn a_connection_the_server_closed_while_idle_is_replaced_before_the_next_request() {
        // A server that answers one request on each connection and then closes it, saying
        // nothing: what a keep-alive timeout does to an idle connection.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let url = format!("http://{}/t/demo/mcp", listener.local_addr().expect("addr"));
        let accepted = std::rc::Rc::new(std::cell::Cell::new(0));
        let count = accepted.clone();
        actix_rt::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                count.set(count.get() + 1);
                let mut buf = vec![0; 4096];
                if socket.read(&mut buf).await.unwrap_or(0) > 0 {
                    socket.write_all(OK.as_bytes()).await.expect("write");
                }
            }
        });
        let mut c = Connection::new(&url, None, Duration::from_secs(5));
        for n in 1..=2 {
            let (status, _) = c.post("echo", "{}").await.expect("a response");
            assert_eq!(status, 200, "request {n}");
            actix_rt::time::sleep(PROBE_AFTER_IDLE + Duration::from_millis(100)).await;
        }
        assert_eq!(accepted.get(), 2);
    }

    #[actix_rt::test]
    async fn a_server_that_never_answers_is_a_transport_error_after_the_timeout() {
        let (url, _) = canned(vec![None]).await;
        let mut c = Connection::new(&url, None, Duration::from_millis(200));
        let e = c.post("echo", "{}").await.expect_err("no answer");
        assert_eq!(e.kind(), "transport");
    }

    #[actix_rt::test]
    async fn a_refused_connection_or_a_garbled_response_is_a_transport_error() {
        let mut c = Connection::new("http://127.0.0.1:1/mcp", None, Duration::from_secs(5));
        assert_eq!(
            c.post("echo", "{}").await.map_err(|e| e.kind()),
            Err("transport")
        );
        let (url, _) = canned(vec![Some("SPDY/9 what\r\n\r\n")]).await;
        let mut c = Connection::new(&url, None, Duration::from_secs(5));
        assert_eq!(
            c.post("echo", "{}").await.map_err(|e| e.kind()),
            Err("transport")
        );
    }
}
