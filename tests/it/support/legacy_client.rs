//! A legacy (2025-11-25 and older) client for the tests: `initialize` and its session id, the
//! session's requests, answers and notifications on POST, a call's SSE stream read event by
//! event while answers are POSTed on other connections, the session's GET stream, DELETE.
//!
//! Every message the server sends in a legacy session goes through [`check_legacy`]: JSON-RPC
//! framing, the committed 2025-11-25 schema (`tests/schema/2025-11-25/schema.json`; the generic
//! type and the method's own), the request id echoed, and no modern-only fields (`resultType`,
//! `ttlMs`, `cacheScope`) on results or errors. Server-to-client requests (the shim's legs)
//! must have a `"roundtrip-N"` id and one of the methods the shim relays. `self_check` at the
//! end shows the check rejects modern-only fields and bad leg ids.

use std::pin::Pin;
use std::time::Duration;

use actix_web::web::Bytes;
use awc::error::PayloadError;
use awc::http::header::HeaderMap;
use awc::http::Method;
use futures_util::{Stream, StreamExt};
use roundtrip_runtime::handler::Catalog;
use serde_json::{json, Value};

use super::replies::{find, parse_block, parse_sse, Reply};
use super::requests::Req;
use super::schema::{assert_valid_in, Revision};
use super::server::Server;
use super::wire_checks::Sent;

/// The newest legacy version, the one a session gets unless it asks for another served one.
pub(crate) const LEGACY_VERSION: &str = "2025-11-25";

/// Everything a legacy client can declare: form and URL elicitation, sampling, roots.
pub(crate) fn all_caps() -> Value {
    json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}})
}

/// A legacy request: no `_meta` envelope.
pub(crate) fn legacy_rpc(id: impl Into<Value>, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// A legacy `tools/call`.
pub(crate) fn legacy_call(id: impl Into<Value>, name: &str, arguments: Value) -> Value {
    legacy_rpc(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments}),
    )
}

/// `initialize` asking for `version`, declaring `caps`.
pub(crate) fn initialize_request(version: &str, caps: Value) -> Value {
    legacy_rpc(
        0,
        "initialize",
        json!({
            "protocolVersion": version,
            "capabilities": caps,
            "clientInfo": {"name": "roundtrip-it-legacy", "version": "0.0.0"},
        }),
    )
}

// ---------------------------------------------------------------------------------------------
// Sessions

/// A live legacy session, as its client knows it.
pub(crate) struct LegacySession<'s> {
    server: &'s Server,
    pub(crate) tenant: String,
    pub(crate) id: String,
    /// The version `initialize` negotiated (sent as `MCP-Protocol-Version`).
    pub(crate) version: String,
    pub(crate) bearer: Option<String>,
    /// The `initialize` result.
    pub(crate) init: Value,
}

impl Server {
    /// A POST as a legacy client sends it: JSON, accepting SSE, no MCP headers.
    pub(crate) fn legacy_post(&self, tenant: &str, body: &Value) -> Req<'_> {
        Req {
            server: self,
            method: Method::POST,
            url: self.url(tenant),
            body: Bytes::from(serde_json::to_vec(body).expect("serialisable")),
            sent: Some(body.clone()),
            headers: vec![
                ("content-type".into(), "application/json".into()),
                (
                    "accept".into(),
                    "application/json, text/event-stream".into(),
                ),
            ],
            mcp_endpoint: true,
        }
    }

    /// `initialize` on `tenant` (with `bearer`, if any), asking for `version`: the whole
    /// reply, checked as a legacy message.
    pub(crate) async fn initialize_reply(
        &self,
        tenant: &str,
        bearer: Option<&str>,
        version: &str,
        caps: Value,
    ) -> Reply {
        let mut req = self.legacy_post(tenant, &initialize_request(version, caps));
        if let Some(token) = bearer {
            req = req.bearer(token);
        }
        let reply = req.send_unchecked().await;
        check_legacy_reply(&reply);
        reply
    }

    /// A new session on `tenant` declaring `caps` (2025-11-25).
    pub(crate) async fn legacy_session(&self, tenant: &str, caps: Value) -> LegacySession<'_> {
        self.legacy_session_as(tenant, None, LEGACY_VERSION, caps)
            .await
    }

    /// A new session on `tenant` as `bearer`, asking for `version`, declaring `caps`.
    pub(crate) async fn legacy_session_as(
        &self,
        tenant: &str,
        bearer: Option<&str>,
        version: &str,
        caps: Value,
    ) -> LegacySession<'_> {
        let reply = self.initialize_reply(tenant, bearer, version, caps).await;
        assert_eq!(reply.status, 200, "initialize: {reply:?}");
        let init = reply.json()["result"].clone();
        let id = reply
            .header("mcp-session-id")
            .unwrap_or_else(|| panic!("initialize without Mcp-Session-Id: {reply:?}"))
            .to_owned();
        let version = init["protocolVersion"]
            .as_str()
            .expect("a negotiated protocolVersion")
            .to_owned();
        let session = LegacySession {
            server: self,
            tenant: tenant.to_owned(),
            id,
            version,
            bearer: bearer.map(str::to_owned),
            init,
        };
        let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let ack = session.post(&initialized).send_unchecked().await;
        assert_eq!(ack.status, 202, "notifications/initialized: {ack:?}");
        session
    }

    /// Adds an anonymous tenant whose settings turn the legacy shim off.
    pub(crate) async fn add_tenant_without_shim(&self, slug: &str, catalog: Catalog) {
        self.add_tenant_with(slug, catalog, |spec| spec.legacy_shim = false)
            .await;
    }
}

impl<'s> LegacySession<'s> {
    /// The same session as seen by another client: `id` presented to `tenant` as `bearer`.
    pub(crate) fn presented(&self, tenant: &str, bearer: Option<&str>) -> LegacySession<'s> {
        LegacySession {
            server: self.server,
            tenant: tenant.to_owned(),
            id: self.id.clone(),
            version: self.version.clone(),
            bearer: bearer.map(str::to_owned),
            init: self.init.clone(),
        }
    }

    /// Another id, as this client would present it (an id nobody issued, an ended one).
    pub(crate) fn with_id(&self, id: &str) -> LegacySession<'s> {
        let mut other = self.presented(&self.tenant, self.bearer.as_deref());
        other.id = id.to_owned();
        other
    }

    fn with_session(&self, mut req: Req<'s>) -> Req<'s> {
        req = req
            .header("mcp-session-id", &self.id)
            .header("mcp-protocol-version", &self.version);
        if let Some(token) = &self.bearer {
            req = req.bearer(token);
        }
        req
    }

    /// A POST of `body` in this session (session id and version headers set).
    pub(crate) fn post(&self, body: &Value) -> Req<'s> {
        self.with_session(self.server.legacy_post(&self.tenant, body))
    }

    /// POSTs `body` in this session and reads the whole reply, checked as legacy messages.
    pub(crate) async fn send(&self, body: &Value) -> Reply {
        let reply = self.post(body).send_unchecked().await;
        check_legacy_reply(&reply);
        reply
    }

    /// The result of a request answered with HTTP 200 (JSON or at the end of an SSE stream).
    pub(crate) async fn result(&self, body: &Value) -> Value {
        let reply = self.send(body).await;
        assert_eq!(reply.status, 200, "{reply:?}");
        let response = reply.response();
        assert!(
            response.get("result").is_some(),
            "expected a result: {reply:?}"
        );
        response["result"].clone()
    }

    /// POSTs `body` in this session and reads its reply event by event.
    pub(crate) async fn open(&self, body: &Value) -> LegacyStream {
        LegacyStream::open(self.post(body)).await
    }

    /// The client's answer to the server's request `leg`.
    pub(crate) async fn answer(&self, leg: &Value, result: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": leg, "result": result});
        self.post(&body).send_unchecked().await
    }

    /// The client's error answer to the server's request `leg`.
    pub(crate) async fn answer_error(&self, leg: &Value, error: Value) -> Reply {
        let body = json!({"jsonrpc": "2.0", "id": leg, "error": error});
        self.post(&body).send_unchecked().await
    }

    /// `notifications/cancelled` for the client's request `request_id`: its HTTP status.
    pub(crate) async fn cancel(&self, request_id: &Value) -> u16 {
        let body = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": request_id, "reason": "the user changed their mind"}});
        self.post(&body).send_unchecked().await.status
    }

    /// A `ping` in this session: the whole reply.
    pub(crate) async fn ping(&self) -> Reply {
        self.send(&legacy_rpc("p", "ping", json!({}))).await
    }

    /// DELETE with this session's id.
    pub(crate) async fn delete(&self) -> Reply {
        let path = format!("/t/{}/mcp", self.tenant);
        let req = self
            .server
            .http(Method::DELETE, &path)
            .header("mcp-session-id", &self.id);
        let req = match &self.bearer {
            Some(token) => req.bearer(token),
            None => req,
        };
        req.send_unchecked().await
    }

    /// GET with this session's id, reading SSE: the session's notification stream.
    pub(crate) async fn listen(&self) -> LegacyStream {
        let path = format!("/t/{}/mcp", self.tenant);
        let req = self
            .server
            .http(Method::GET, &path)
            .header("mcp-session-id", &self.id)
            .header("accept", "text/event-stream");
        let req = match &self.bearer {
            Some(token) => req.bearer(token),
            None => req,
        };
        LegacyStream::open(req).await
    }
}

// ---------------------------------------------------------------------------------------------
// Streams

/// A legacy reply read message by message: an SSE stream, or a JSON body (one message).
pub(crate) struct LegacyStream {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    body: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>,
    buf: Vec<u8>,
    sent: Option<Value>,
    sse: bool,
    done: bool,
}

impl LegacyStream {
    pub(crate) async fn open(req: Req<'_>) -> LegacyStream {
        let (resp, Sent { body: sent, .. }) = req.response().await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let sse = headers
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .is_some_and(|c| c.starts_with("text/event-stream"));
        LegacyStream {
            status,
            headers,
            body: Box::pin(resp),
            buf: Vec::new(),
            sent,
            sse,
            done: false,
        }
    }

    /// Whether the reply is an SSE stream (`Content-Type: text/event-stream`).
    pub(crate) fn is_sse(&self) -> bool {
        debug_assert_eq!(
            self.sse,
            self.headers
                .get("content-type")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|c| c.starts_with("text/event-stream"))
        );
        self.sse
    }

    async fn chunk(&mut self) -> Option<Bytes> {
        match tokio::time::timeout(Duration::from_secs(10), self.body.next()).await {
            Err(_) => panic!("nothing on the legacy stream within 10 s: it hangs"),
            Ok(None) => None,
            Ok(Some(Ok(chunk))) => Some(chunk),
            Ok(Some(Err(e))) => panic!("the legacy stream failed: {e}"),
        }
    }

    /// The next message (checked), or `None` when the reply ends. Panics if nothing arrives
    /// for 10 s.
    pub(crate) async fn next(&mut self) -> Option<Value> {
        if self.done {
            return None;
        }
        if !self.sse {
            while let Some(chunk) = self.chunk().await {
                self.buf.extend_from_slice(&chunk);
            }
            self.done = true;
            if self.buf.is_empty() {
                return None;
            }
            let message: Value = serde_json::from_slice(&self.buf).unwrap_or_else(|e| {
                panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.buf))
            });
            check_legacy(self.sent.as_ref(), &message);
            return Some(message);
        }
        loop {
            if let Some(end) = find(&self.buf, b"\n\n") {
                let block: Vec<u8> = self.buf.drain(..end + 2).collect();
                if let Some(message) = parse_block(&block) {
                    check_legacy(self.sent.as_ref(), &message);
                    return Some(message);
                }
                continue;
            }
            match self.chunk().await {
                None => {
                    assert!(
                        self.buf.iter().all(u8::is_ascii_whitespace),
                        "the stream ended inside an event"
                    );
                    self.done = true;
                    return None;
                }
                Some(chunk) => self.buf.extend_from_slice(&chunk),
            }
        }
    }

    /// The next message, which must be a server-to-client request (a leg of the shim).
    pub(crate) async fn next_request(&mut self) -> Value {
        let message = self
            .next()
            .await
            .expect("a server-to-client request, not the end of the stream");
        assert!(
            message.get("method").is_some() && message.get("id").is_some(),
            "expected a server-to-client request: {message}"
        );
        message
    }

    /// The next message, which must be the final response; the stream then ends.
    pub(crate) async fn response(&mut self) -> Value {
        let message = self
            .next()
            .await
            .expect("the final response, not the end of the stream");
        assert!(
            message.get("method").is_none(),
            "expected the final response: {message}"
        );
        assert!(
            self.next().await.is_none(),
            "nothing may follow the final response"
        );
        message
    }
}

// ---------------------------------------------------------------------------------------------
// Wire checks

/// Panics, listing every violation, unless `value` is a valid 2025-11-25 `$defs/<def>`.
pub(crate) fn assert_valid_2025(def: &str, value: &Value) {
    assert_valid_in(Revision::V2025_11_25, def, value);
}

/// The 2025-11-25 result definition of `method`, when the schema has one.
fn result_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "initialize" => "InitializeResult",
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            "EmptyResult"
        }
        "tools/list" => "ListToolsResult",
        "tools/call" => "CallToolResult",
        "prompts/list" => "ListPromptsResult",
        "prompts/get" => "GetPromptResult",
        "resources/list" => "ListResourcesResult",
        "resources/templates/list" => "ListResourceTemplatesResult",
        "resources/read" => "ReadResourceResult",
        "completion/complete" => "CompleteResult",
        _ => return None,
    })
}

fn server_request_def(method: &str) -> &'static str {
    match method {
        "elicitation/create" => "ElicitRequest",
        "sampling/createMessage" => "CreateMessageRequest",
        "roots/list" => "ListRootsRequest",
        "ping" => "PingRequest",
        other => panic!("the shim never sends {other}"),
    }
}

fn notification_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "notifications/cancelled" => "CancelledNotification",
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        _ => return None,
    })
}

/// The checks every message the server sends in a legacy session passes. `sent`: the message
/// that opened the reply (its id is echoed by the response, its method picks the result type).
pub(crate) fn check_legacy(sent: Option<&Value>, message: &Value) {
    assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
    assert_valid_2025("JSONRPCMessage", message);

    if let Some(method) = message.get("method").and_then(Value::as_str) {
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        assert!(
            params.get("resultType").is_none(),
            "legacy messages carry no resultType: {message}"
        );
        if let Some(id) = message.get("id") {
            // A server-to-client request: one leg of the shim.
            assert_valid_2025("JSONRPCRequest", message);
            assert_valid_2025("ServerRequest", message);
            assert_valid_2025(server_request_def(method), message);
            let id = id
                .as_str()
                .unwrap_or_else(|| panic!("a leg's id is a string: {message}"));
            let n = id
                .strip_prefix("roundtrip-")
                .unwrap_or_else(|| panic!("a leg's id is roundtrip-N: {message}"));
            assert!(
                !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()),
                "a leg's id is roundtrip-N: {message}"
            );
            return;
        }
        assert_valid_2025("JSONRPCNotification", message);
        assert_valid_2025("ServerNotification", message);
        if let Some(def) = notification_def(method) {
            assert_valid_2025(def, message);
        }
        return;
    }

    assert_valid_2025("JSONRPCResponse", message);
    let request_id = sent
        .filter(|s| s.get("method").is_some())
        .and_then(|s| s.get("id"));
    if let (Some(id), Some(echoed)) = (request_id, message.get("id")) {
        assert_eq!(
            echoed, id,
            "the response carries the request's id: {message}"
        );
    }
    if let Some(error) = message.get("error") {
        assert!(message.get("result").is_none(), "{message}");
        assert_valid_2025("JSONRPCErrorResponse", message);
        assert!(
            error.get("resultType").is_none()
                && error
                    .get("data")
                    .and_then(|d| d.get("resultType"))
                    .is_none(),
            "legacy errors carry no resultType: {message}"
        );
        return;
    }
    assert!(
        request_id.is_some(),
        "a result answers a request that had an id: {message}"
    );
    assert_valid_2025("JSONRPCResultResponse", message);
    let result = &message["result"];
    for modern in [
        "resultType",
        "ttlMs",
        "cacheScope",
        "inputRequests",
        "requestState",
    ] {
        assert!(
            result.get(modern).is_none(),
            "a legacy result carries no {modern}: {message}"
        );
    }
    let method = sent
        .and_then(|s| s.get("method"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    if let Some(def) = result_def(method) {
        assert_valid_2025(def, result);
    }
}

/// [`check_legacy`] on every message of a whole reply (JSON or SSE; an empty body passes).
pub(crate) fn check_legacy_reply(reply: &Reply) {
    if reply.body.is_empty() {
        return;
    }
    let sent = reply.sent.body.as_ref();
    if reply.is_sse() {
        assert_eq!(reply.status, 200, "an SSE reply is HTTP 200");
        let events = parse_sse(&reply.body);
        for (i, event) in events.iter().enumerate() {
            check_legacy(sent, event);
            if event.get("method").is_none() {
                assert_eq!(
                    i + 1,
                    events.len(),
                    "the response must be the stream's last message: {reply:?}"
                );
            }
        }
        return;
    }
    let message = reply.json();
    check_legacy(sent, &message);
}

/// The checks themselves: a legacy check that accepted everything would make every test pass.
#[cfg(test)]
mod self_check {
    use serde_json::json;

    use super::{check_legacy, legacy_call};

    #[test]
    fn the_legacy_check_rejects_modern_only_fields_and_bad_leg_ids() {
        let call = legacy_call(1, "quiet", json!({}));
        check_legacy(
            Some(&call),
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}),
        );
        for bad in [
            json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [], "resultType": "complete"}}),
            json!({"jsonrpc": "2.0", "id": 2, "result": {"content": []}}),
            json!({"jsonrpc": "2.0", "id": 7, "method": "roots/list"}),
            json!({"jsonrpc": "2.0", "id": "roundtrip-1", "method": "elicitation/create", "params": {}}),
        ] {
            let outcome = std::panic::catch_unwind(|| check_legacy(Some(&call), &bad));
            assert!(outcome.is_err(), "the legacy check accepted {bad}");
        }
    }
}
