//! An HTTP/2 cleartext client with prior knowledge (h2c): one TCP connection, the HTTP/2
//! preface sent at once (no `Upgrade` dance), and as many request streams on it as a test
//! opens. awc speaks HTTP/2 only after TLS ALPN, so this drives the `h2` crate directly.
//!
//! Every wait is bounded by [`WAIT`]: a stream that never answers fails its test instead of
//! hanging the suite.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use actix_web::web::Bytes;
use h2::client::SendRequest;
use h2::RecvStream;
use serde_json::Value;
use tokio::net::TcpStream;

use super::replies::{find, parse_block};

/// How long any one step of an h2c exchange may take before the test fails.
pub(crate) const WAIT: Duration = Duration::from_secs(10);

/// `fut`, or a panic naming `what` if it takes longer than [`WAIT`].
pub(crate) async fn within<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(WAIT, fut)
        .await
        .unwrap_or_else(|_| panic!("{what}: nothing within {WAIT:?}, it hangs"))
}

/// One h2c connection to a test server.
pub(crate) struct H2cConnection {
    send: SendRequest<Bytes>,
    io: actix_rt::task::JoinHandle<()>,
    /// What a request sends as `:authority` unless it names another.
    pub(crate) authority: String,
}

impl H2cConnection {
    /// Connects to `addr` and completes the HTTP/2 handshake with prior knowledge.
    pub(crate) async fn open(addr: SocketAddr) -> H2cConnection {
        let tcp = within("connecting", TcpStream::connect(addr))
            .await
            .expect("the server accepts");
        tcp.set_nodelay(true).expect("TCP_NODELAY");
        let (send, connection) = within("the h2c handshake", h2::client::handshake(tcp))
            .await
            .expect("the server speaks h2c with prior knowledge");
        // The connection's I/O runs beside the test, until [`Self::close`] or the server ends it.
        let io = actix_rt::spawn(async move {
            let _closed = connection.await;
        });
        H2cConnection {
            send,
            io,
            authority: addr.to_string(),
        }
    }

    /// Closes the connection once its streams are done (GOAWAY), and waits until it is closed.
    /// A test does so before stopping its server: actix's graceful stop closes idle HTTP/1.1
    /// connections at once but waits out its whole shutdown timeout for an open HTTP/2 one.
    pub(crate) async fn close(self) {
        drop(self.send);
        within("closing the connection", self.io)
            .await
            .expect("the connection task ends");
    }

    /// A POST of `body` to `path` with `headers`, on a new stream of this connection.
    pub(crate) async fn post(
        &self,
        path: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> H2cStream {
        self.post_as(&self.authority, path, headers, body).await
    }

    /// [`Self::post`] with `authority` as the request's `:authority`.
    pub(crate) async fn post_as(
        &self,
        authority: &str,
        path: &str,
        headers: &[(String, String)],
        body: &Value,
    ) -> H2cStream {
        let mut request = http::Request::builder()
            .method("POST")
            .uri(format!("http://{authority}{path}"));
        for (name, value) in headers {
            request = request.header(name.as_str(), value.as_str());
        }
        let request = request.body(()).expect("a well-formed request");
        let mut send = within("a free stream", self.send.clone().ready())
            .await
            .expect("the connection is open");
        let (response, mut upload) = send
            .send_request(request, false)
            .expect("a new stream opens");
        let bytes = serde_json::to_vec(body).expect("serialisable");
        upload
            .send_data(Bytes::from(bytes), true)
            .expect("the request body is sent");
        let response = within("the response head", response)
            .await
            .expect("the stream is answered");
        let (head, body) = response.into_parts();
        H2cStream {
            version: head.version,
            status: head.status.as_u16(),
            headers: head.headers,
            body,
            buf: Vec::new(),
        }
    }
}

/// The response on one stream: its head, and its body read as it arrives.
pub(crate) struct H2cStream {
    pub(crate) version: http::Version,
    pub(crate) status: u16,
    pub(crate) headers: http::HeaderMap,
    body: RecvStream,
    buf: Vec<u8>,
}

impl H2cStream {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn is_sse(&self) -> bool {
        self.header("content-type")
            .is_some_and(|c| c.starts_with("text/event-stream"))
    }

    /// The next DATA frame's bytes, or `None` at the end of the stream. The bytes read are
    /// handed back to the flow-control window, or a long stream would stall the server.
    async fn chunk(&mut self) -> Option<Bytes> {
        let chunk = within("a DATA frame", self.body.data())
            .await?
            .expect("the stream is not reset");
        self.body
            .flow_control()
            .release_capacity(chunk.len())
            .expect("capacity released");
        Some(chunk)
    }

    /// The whole body.
    pub(crate) async fn body(mut self) -> Vec<u8> {
        while let Some(chunk) = self.chunk().await {
            self.buf.extend_from_slice(&chunk);
        }
        self.buf
    }

    /// The whole body, which must be JSON.
    pub(crate) async fn json(self) -> Value {
        let body = self.body().await;
        serde_json::from_slice(&body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&body)))
    }

    /// The next SSE event's message (keep-alive comments skipped), or `None` when the stream
    /// ends.
    pub(crate) async fn next_event(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = find(&self.buf, b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                match parse_block(&block) {
                    Some(message) => return Some(message),
                    None => continue,
                }
            }
            match self.chunk().await {
                Some(chunk) => self.buf.extend_from_slice(&chunk),
                None => {
                    assert!(
                        self.buf.iter().all(u8::is_ascii_whitespace),
                        "the stream ended inside an event"
                    );
                    return None;
                }
            }
        }
    }
}
