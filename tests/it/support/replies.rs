//! Reply parsing: a whole [`Reply`] (status, headers, body; its JSON, its SSE events, its
//! result or error) and [`Events`], a reply read event by event. Both run the wire checks
//! (`wire_checks`) on every message they hand out.

use std::pin::Pin;
use std::time::Duration;

use actix_web::web::Bytes;
use awc::error::PayloadError;
use awc::http::header::HeaderMap;
use futures_util::{Stream, StreamExt};
use serde_json::Value;

use super::wire_checks::{check_message, Sent};

/// A whole reply.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    pub(super) sent: Sent,
}

impl std::fmt::Debug for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HTTP {} {} {}",
            self.status,
            self.content_type(),
            String::from_utf8_lossy(&self.body)
        )
    }
}

impl Reply {
    pub(crate) fn content_type(&self) -> &str {
        self.header("content-type").unwrap_or("")
    }

    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub(crate) fn is_sse(&self) -> bool {
        self.content_type().starts_with("text/event-stream")
    }

    /// The JSON body (not SSE).
    pub(crate) fn json(&self) -> Value {
        assert!(
            self.content_type().starts_with("application/json"),
            "expected a JSON reply, got {self:?}"
        );
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }

    /// The SSE events' messages, in order.
    pub(crate) fn events(&self) -> Vec<Value> {
        assert!(self.is_sse(), "expected an SSE reply, got {self:?}");
        parse_sse(&self.body)
    }

    /// The one JSON-RPC response of the reply: the JSON body, or the last SSE event.
    pub(crate) fn response(&self) -> Value {
        if self.is_sse() {
            self.events()
                .pop()
                .expect("an SSE reply ends with its response")
        } else {
            self.json()
        }
    }

    /// The result of a successful reply (HTTP 200).
    pub(crate) fn result(&self) -> Value {
        assert_eq!(
            self.status, 200,
            "expected HTTP 200 with a result: {self:?}"
        );
        let response = self.response();
        assert!(
            response.get("result").is_some(),
            "expected a result: {self:?}"
        );
        response["result"].clone()
    }

    /// The error object, after checking its code and the HTTP status.
    pub(crate) fn error(&self, code: i64, status: u16) -> Value {
        let response = self.response();
        assert_eq!(
            response["error"]["code"], code,
            "expected error {code}: {self:?}"
        );
        assert_eq!(self.status, status, "expected HTTP {status}: {self:?}");
        response["error"].clone()
    }

    /// `requestState` of an input-required result.
    pub(crate) fn state(&self) -> String {
        let result = self.result();
        assert_eq!(result["resultType"], "input_required", "{self:?}");
        result["requestState"]
            .as_str()
            .expect("a sealed server always sends requestState")
            .to_owned()
    }

    /// Checks every message of the reply (see the module docs); panics on the first problem.
    pub(crate) fn check(&self) {
        if self.is_sse() {
            assert_eq!(self.status, 200, "an SSE reply is HTTP 200");
            let events = parse_sse(&self.body);
            let mut responses = 0;
            for (i, event) in events.iter().enumerate() {
                check_message(&self.sent, event, self.status, responses);
                if event.get("method").is_none() {
                    responses += 1;
                    if self.sent.method() != Some("subscriptions/listen") {
                        assert_eq!(
                            i + 1,
                            events.len(),
                            "the response must be the stream's last message: {self:?}"
                        );
                    }
                }
            }
            return;
        }
        if self.body.is_empty() {
            return;
        }
        let message: Value = self.json();
        check_message(&self.sent, &message, self.status, 0);
    }
}

/// A reply read event by event (listen streams, cancellation).
pub(crate) struct Events {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(super) body: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>,
    pub(super) buf: Vec<u8>,
    pub(super) sent: Sent,
    pub(super) responses: usize,
}

impl Events {
    pub(crate) fn content_type(&self) -> &str {
        self.headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }

    /// The next event's message (checked), or `None` when the stream ends. Panics if nothing
    /// arrives for 10 s: that is a hang, not a slow server.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = find(&self.buf, b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                if let Some(message) = parse_block(&block) {
                    check_message(&self.sent, &message, self.status, self.responses);
                    if message.get("method").is_none() {
                        self.responses += 1;
                    }
                    return Some(message);
                }
                continue;
            }
            match tokio::time::timeout(Duration::from_secs(10), self.body.next()).await {
                Err(_) => panic!("no SSE event within 10 s: the stream hangs"),
                Ok(None) => {
                    assert!(
                        self.buf.iter().all(u8::is_ascii_whitespace),
                        "the stream ended inside an event"
                    );
                    return None;
                }
                Ok(Some(Ok(chunk))) => self.buf.extend_from_slice(&chunk),
                Ok(Some(Err(e))) => panic!("the SSE stream failed: {e}"),
            }
        }
    }
}

pub(super) fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(super) fn parse_sse(body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).expect("an SSE body is UTF-8");
    text.split("\n\n")
        .filter_map(|block| parse_block(block.as_bytes()))
        .collect()
}

/// One SSE event block: its `data` as JSON, `None` for a comment-only block.
pub(super) fn parse_block(block: &[u8]) -> Option<Value> {
    let text = std::str::from_utf8(block).expect("an SSE event is UTF-8");
    let mut data = Vec::new();
    for line in text.lines() {
        if line.is_empty() || line.starts_with(':') {
            continue;
        }
        let (field, value) = line.split_once(':').unwrap_or((line, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => data.push(value),
            "event" => assert_eq!(value, "message", "unexpected SSE event type"),
            "id" => panic!("2026-07-28 streams carry no event ids (no resumability): {text}"),
            other => panic!("unexpected SSE field {other:?}: {text}"),
        }
    }
    if data.is_empty() {
        return None;
    }
    let data = data.join("\n");
    Some(
        serde_json::from_str(&data)
            .unwrap_or_else(|e| panic!("SSE data is not JSON ({e}): {data}")),
    )
}
