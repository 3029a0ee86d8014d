//! A legacy (2025-11-25) client, through the balancer: `initialize`, the session's requests,
//! the shim's server-to-client requests read from a call's SSE stream while the answers are
//! POSTed on other requests (so they land on other workers), and DELETE.

use std::pin::Pin;
use std::time::Duration;

use actix_web::web::Bytes;
use futures_util::{Stream, StreamExt};
use serde_json::{json, Value};

use super::workers::DEMO_KEY;
use crate::support::legacy_client::{initialize_request, LEGACY_VERSION};

/// A legacy session of the demo tenant, begun through the balancer at `base`.
pub(super) struct LegacyFlow {
    base: String,
    pub(super) session: String,
    client: awc::Client,
}

type Body = Pin<Box<dyn Stream<Item = Result<Bytes, awc::error::PayloadError>>>>;

/// A reply read as it comes: SSE events, or one JSON body.
pub(super) struct Events {
    body: Body,
    buf: Vec<u8>,
}

impl Events {
    /// The next JSON-RPC message, or `None` at the end.
    pub(super) async fn next(&mut self) -> Option<Value> {
        loop {
            if let Some(end) = self.buf.windows(2).position(|w| w == b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                let text = String::from_utf8_lossy(&block);
                let data: String = text
                    .lines()
                    .filter_map(|l| l.strip_prefix("data:"))
                    .map(str::trim_start)
                    .collect();
                if !data.is_empty() {
                    return Some(serde_json::from_str(&data).expect("a JSON event"));
                }
                continue;
            }
            let chunk = tokio::time::timeout(Duration::from_secs(10), self.body.next())
                .await
                .expect("the stream goes on within 10 s");
            match chunk {
                Some(chunk) => self.buf.extend_from_slice(&chunk.expect("a chunk")),
                None => return None,
            }
        }
    }
}

/// What `initialize` got back.
struct Handshake {
    client: awc::Client,
    status: u16,
    session: Option<String>,
    reply: Value,
}

/// POSTs `initialize` with form elicitation declared to the demo tenant at `base`.
async fn initialize(base: &str) -> Handshake {
    let client = awc::Client::builder().disable_timeout().finish();
    let body = initialize_request(LEGACY_VERSION, json!({"elicitation": {"form": {}}}));
    let mut resp = client
        .post(format!("{base}/t/demo/mcp"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("authorization", format!("Bearer {DEMO_KEY}")))
        .send_json(&body)
        .await
        .expect("the balancer answers");
    let session = resp
        .headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let bytes = resp.body().await.expect("a body");
    Handshake {
        client,
        status: resp.status().as_u16(),
        session,
        reply: serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    }
}

impl LegacyFlow {
    /// `initialize` with form elicitation declared, then `notifications/initialized`.
    pub(super) async fn begin(base: &str) -> LegacyFlow {
        let handshake = initialize(base).await;
        assert_eq!(handshake.status, 200, "{}", handshake.reply);
        let flow = LegacyFlow {
            base: base.to_owned(),
            session: handshake.session.expect("a session id"),
            client: handshake.client,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(flow.post(&initialized).await.0, 202);
        flow
    }

    /// `initialize` that may be refused: the status and the JSON reply.
    pub(super) async fn try_begin(base: &str) -> (u16, Value) {
        let handshake = initialize(base).await;
        (handshake.status, handshake.reply)
    }

    fn request(&self, method: awc::http::Method) -> awc::ClientRequest {
        self.client
            .request(method, format!("{}/t/demo/mcp", self.base))
            .insert_header(("accept", "application/json, text/event-stream"))
            .insert_header(("authorization", format!("Bearer {DEMO_KEY}")))
            .insert_header(("mcp-session-id", self.session.as_str()))
            .insert_header(("mcp-protocol-version", LEGACY_VERSION))
    }

    /// POSTs `body` in the session: the status and the reply read as events.
    pub(super) async fn post(&self, body: &Value) -> (u16, Events) {
        let resp = self
            .request(awc::http::Method::POST)
            .send_json(body)
            .await
            .expect("the balancer answers");
        let status = resp.status().as_u16();
        let body: Body = Box::pin(resp);
        let events = Events {
            body,
            buf: Vec::new(),
        };
        (status, events)
    }

    /// POSTs `body` and reads the whole reply as one JSON message (a non-SSE reply).
    pub(super) async fn post_json(&self, body: &Value) -> (u16, Value) {
        let mut resp = self
            .request(awc::http::Method::POST)
            .send_json(body)
            .await
            .expect("the balancer answers");
        let status = resp.status().as_u16();
        let bytes = resp.body().await.expect("a body");
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let value = serde_json::from_str(&text).unwrap_or_else(|_| {
            // An SSE reply with one event.
            let data: String = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim_start)
                .collect();
            serde_json::from_str(&data).unwrap_or(Value::Null)
        });
        (status, value)
    }

    /// DELETE: the status.
    pub(super) async fn delete(&self) -> u16 {
        self.request(awc::http::Method::DELETE)
            .send()
            .await
            .expect("the balancer answers")
            .status()
            .as_u16()
    }
}
