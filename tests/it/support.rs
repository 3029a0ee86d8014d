//! The harness: a real server in-process on port 0, an `awc` client that sends MCP requests
//! with the right headers, and wire checks applied to every message the server sends.
//!
//! Every reply goes through [`check_message`]: JSON-RPC framing, the committed schema (the
//! generic type and the method's or error code's own type), the request id echoed, the HTTP
//! status the spec fixes for the code, no `resultType` on errors or notifications, and the
//! MRTR rules for input-required results. Tests then assert what is specific to them.
//!
//! Tenants of every test server:
//! - `demo`: API keys [`ALICE`] and [`BOB`], the `examples` catalog (no prompts);
//! - `lab`, `lab2`: anonymous, the test catalog of [`lab`];
//! - `empty`: anonymous, an empty catalog.

pub(crate) mod h2c_client;
pub(crate) mod lab;
pub(crate) mod legacy_client;
pub(crate) mod schema;

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::web::Bytes;
use awc::error::PayloadError;
use awc::http::header::HeaderMap;
use awc::http::Method;
use base64::Engine as _;
use futures_util::{Stream, StreamExt};
use roundtrip::config::Config;
use roundtrip::wiring::{self, Running};
use roundtrip_runtime::handler::Catalog;
use roundtrip_runtime::tenancy::Tenant;
use roundtrip_tenants::{ApiKeyRecord, AuthMode, Slug, TenantRegistry, TenantSpec};
use serde_json::{json, Value};

pub(crate) use lab::Probe;
pub(crate) use schema::assert_valid;

pub(crate) const VERSION: &str = "2026-07-28";
pub(crate) const DEMO: &str = "demo";
pub(crate) const LAB: &str = "lab";
pub(crate) const LAB2: &str = "lab2";
pub(crate) const EMPTY: &str = "empty";
/// API keys of the `demo` tenant (principals `key:alice` and `key:bob`).
pub(crate) const ALICE: &str = "rt_test_alice_0123456789";
pub(crate) const BOB: &str = "rt_test_bob_0123456789";

pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The fixed error every unusable `requestState` gets.
pub(crate) fn invalid_state_error() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState"})
}

// ---------------------------------------------------------------------------------------------
// Messages

/// The `_meta` envelope of a modern request declaring `caps`.
pub(crate) fn meta(caps: Value) -> Value {
    json!({
        PROTOCOL_VERSION: VERSION,
        CLIENT_INFO: {"name": "roundtrip-it", "version": "0.0.0"},
        CLIENT_CAPABILITIES: caps,
    })
}

/// A request; `params` gets a `_meta` declaring no capabilities unless it has one.
pub(crate) fn rpc(id: impl Into<Value>, method: &str, params: Value) -> Value {
    let mut params = params;
    if let Value::Object(p) = &mut params {
        p.entry("_meta").or_insert_with(|| meta(json!({})));
    }
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params})
}

/// `tools/call` of `name` with `arguments`, declaring `caps`.
pub(crate) fn tool_call(id: impl Into<Value>, name: &str, arguments: Value, caps: Value) -> Value {
    rpc(
        id,
        "tools/call",
        json!({"name": name, "arguments": arguments, "_meta": meta(caps)}),
    )
}

/// The retry of `request` (MRTR): a new id, the same params, the answers and the state.
pub(crate) fn retry(
    request: &Value,
    id: impl Into<Value>,
    answers: Value,
    state: Option<&str>,
) -> Value {
    let mut r = request.clone();
    r["id"] = id.into();
    let params = r["params"].as_object_mut().expect("params");
    params.remove("inputResponses");
    params.remove("requestState");
    if !answers.is_null() {
        params.insert("inputResponses".into(), answers);
    }
    if let Some(state) = state {
        params.insert("requestState".into(), json!(state));
    }
    r
}

/// An accepted form elicitation answer.
pub(crate) fn accept(content: Value) -> Value {
    json!({"action": "accept", "content": content})
}

/// `=?base64?…?=` of `value`, for header values that are not plain ASCII.
pub(crate) fn b64_header(value: &str) -> String {
    format!(
        "=?base64?{}?=",
        base64::engine::general_purpose::STANDARD.encode(value)
    )
}

// ---------------------------------------------------------------------------------------------
// Server

/// A running server with the test tenants; stopped by [`Server::stop`] (or, if a test panics,
/// by `Drop`).
pub(crate) struct Server {
    running: Option<Running>,
    pub(crate) addr: SocketAddr,
    /// What the `lab` tenant's `wait_cancel` tool saw.
    pub(crate) lab_probe: Probe,
    client: awc::Client,
}

impl Server {
    /// A server with the test defaults.
    pub(crate) async fn start() -> Server {
        Server::start_with(|_| {}).await
    }

    /// A server with the test defaults, then `tune` applied to its configuration.
    pub(crate) async fn start_with(tune: impl FnOnce(&mut Config)) -> Server {
        let mut config = Config {
            listen: "127.0.0.1:0".into(),
            workers: Some(1),
            ..Config::default()
        };
        config.mcp.request_timeout_ms = 10_000;
        config.http.sse_keepalive_ms = 100;
        tune(&mut config);

        let lab_probe = Probe::default();
        let registry = TenantRegistry::new();
        let examples =
            roundtrip::catalogs::build(&["examples".into()]).expect("the examples catalog");
        add_tenant(&registry, DEMO, AuthMode::ApiKey, examples);
        add_tenant(
            &registry,
            LAB,
            AuthMode::Anonymous,
            lab::catalog(&lab_probe),
        );
        add_tenant(
            &registry,
            LAB2,
            AuthMode::Anonymous,
            lab::catalog(&Probe::default()),
        );
        add_tenant(
            &registry,
            EMPTY,
            AuthMode::Anonymous,
            Catalog::builder().build(),
        );
        assert!(registry.add_key(DEMO, ApiKeyRecord::from_secret("alice".into(), ALICE)));
        assert!(registry.add_key(DEMO, ApiKeyRecord::from_secret("bob".into(), BOB)));

        let running = wiring::start_with(&config, Arc::new(registry), None)
            .await
            .expect("the server starts");
        let client = awc::Client::builder()
            .timeout(Duration::from_secs(20))
            .finish();
        Server {
            addr: running.addr,
            running: Some(running),
            lab_probe,
            client,
        }
    }

    pub(crate) fn url(&self, tenant: &str) -> String {
        format!("http://{}/t/{tenant}/mcp", self.addr)
    }

    /// A POST of `body` to `tenant`'s endpoint, with the MCP headers the body implies.
    pub(crate) fn post(&self, tenant: &str, body: &Value) -> Req<'_> {
        let bytes = serde_json::to_vec(body).expect("serialisable");
        self.raw(tenant, bytes)
    }

    /// A POST of raw bytes to `tenant`'s endpoint; MCP headers are derived when the bytes are
    /// a JSON object.
    pub(crate) fn raw(&self, tenant: &str, body: impl Into<Bytes>) -> Req<'_> {
        let body = body.into();
        let sent: Option<Value> = serde_json::from_slice(&body).ok();
        let mut headers = vec![
            ("content-type".to_owned(), "application/json".to_owned()),
            (
                "accept".to_owned(),
                "application/json, text/event-stream".to_owned(),
            ),
        ];
        headers.extend(mcp_headers(sent.as_ref()));
        Req {
            server: self,
            method: Method::POST,
            url: self.url(tenant),
            body,
            sent,
            headers,
            mcp_endpoint: true,
        }
    }

    /// Any HTTP method on any path, without MCP headers.
    pub(crate) fn http(&self, method: Method, path: &str) -> Req<'_> {
        Req {
            server: self,
            method,
            url: format!("http://{}{path}", self.addr),
            body: Bytes::new(),
            sent: None,
            headers: Vec::new(),
            mcp_endpoint: false,
        }
    }

    /// Shorthand: POST `body` to `tenant` and read the whole reply.
    pub(crate) async fn send(&self, tenant: &str, body: &Value) -> Reply {
        self.post(tenant, body).send().await
    }

    /// Shorthand: POST `body` to `demo` as alice.
    pub(crate) async fn send_demo(&self, body: &Value) -> Reply {
        self.post(DEMO, body).bearer(ALICE).send().await
    }

    /// Adds an anonymous tenant to the running server (as the admin API will).
    pub(crate) fn add_tenant(&self, slug: &str, catalog: Catalog) {
        let running = self.running.as_ref().expect("a running server");
        add_tenant(&running.registry, slug, AuthMode::Anonymous, catalog);
    }

    /// Starts a graceful shutdown (open listen streams close) without stopping the server.
    pub(crate) fn begin_shutdown(&self) {
        if let Some(running) = &self.running {
            running.service.shutdown_token().cancel();
        }
    }

    pub(crate) async fn stop(mut self) {
        if let Some(running) = self.running.take() {
            running.stop().await;
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(running) = self.running.take() {
            running.service.shutdown_token().cancel();
            // The command is sent at once; nobody needs to wait for it.
            drop(running.server.stop(false));
        }
    }
}

fn add_tenant(registry: &TenantRegistry, slug: &str, auth: AuthMode, catalog: Catalog) {
    let spec = TenantSpec {
        slug: Slug::parse(slug).expect("a valid slug"),
        name: slug.to_owned(),
        auth,
        catalogs: Vec::new(),
    };
    let tenant = Tenant::new(slug, catalog)
        .with_server_info(json!({"name": format!("roundtrip-{slug}"), "version": "0.0.0-test"}))
        .with_instructions(format!("The {slug} test tenant."));
    registry.insert(spec, tenant).expect("a new tenant");
}

/// `MCP-Protocol-Version`, `Mcp-Method` and `Mcp-Name` as a correct client derives them.
pub(crate) fn mcp_headers(sent: Option<&Value>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(Value::Object(body)) = sent else {
        return out;
    };
    let params = body.get("params");
    let version = params
        .and_then(|p| p.get("_meta"))
        .and_then(|m| m.get(PROTOCOL_VERSION))
        .and_then(Value::as_str)
        .unwrap_or(VERSION);
    out.push(("mcp-protocol-version".into(), version.to_owned()));
    let Some(method) = body.get("method").and_then(Value::as_str) else {
        return out;
    };
    out.push(("mcp-method".into(), method.to_owned()));
    let name_key = match method {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return out,
    };
    if let Some(name) = params.and_then(|p| p.get(name_key)).and_then(Value::as_str) {
        let plain = name.bytes().all(|b| (0x20..0x7f).contains(&b))
            && name.trim() == name
            && !name.starts_with("=?base64?");
        let value = if plain {
            name.to_owned()
        } else {
            b64_header(name)
        };
        out.push(("mcp-name".into(), value));
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Requests

pub(crate) struct Req<'s> {
    server: &'s Server,
    method: Method,
    url: String,
    body: Bytes,
    sent: Option<Value>,
    headers: Vec<(String, String)>,
    /// A POST to `/t/{tenant}/mcp`: the spec's status-per-code table applies.
    mcp_endpoint: bool,
}

impl Req<'_> {
    /// Sets `name` (replacing any value the harness chose).
    pub(crate) fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Adds another `name` header, keeping those already set (for duplicate headers).
    pub(crate) fn also(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// Leaves `name` out.
    pub(crate) fn without(mut self, name: &str) -> Self {
        self.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(name));
        self
    }

    pub(crate) fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    async fn response(
        self,
    ) -> (
        awc::ClientResponse<impl Stream<Item = Result<Bytes, PayloadError>> + Unpin + 'static>,
        Sent,
    ) {
        let mut req = self.server.client.request(self.method.clone(), &self.url);
        for (name, value) in &self.headers {
            req = req.append_header((name.as_str(), value.as_str()));
        }
        let resp = req
            .send_body(self.body.clone())
            .await
            .unwrap_or_else(|e| panic!("{} {} failed: {e}", self.method, self.url));
        let sent = Sent {
            body: self.sent,
            mcp_endpoint: self.mcp_endpoint,
        };
        (resp, sent)
    }

    /// The request as a `'static` future (for a test that abandons it): resolves to the HTTP
    /// status.
    pub(crate) fn detach(self) -> impl std::future::Future<Output = u16> + 'static {
        let mut req = self.server.client.request(self.method.clone(), &self.url);
        for (name, value) in &self.headers {
            req = req.append_header((name.as_str(), value.as_str()));
        }
        let body = self.body;
        async move {
            let resp = req.send_body(body).await.expect("the request is answered");
            resp.status().as_u16()
        }
    }

    /// Sends and reads the whole reply, then checks every message in it.
    pub(crate) async fn send(self) -> Reply {
        let reply = self.send_unchecked().await;
        reply.check();
        reply
    }

    /// Sends and reads the whole reply; the caller runs [`Reply::check`].
    pub(crate) async fn send_unchecked(self) -> Reply {
        let (mut resp, sent) = self.response().await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let body = resp
            .body()
            .limit(64 << 20)
            .await
            .expect("the reply body arrives");
        Reply {
            status,
            headers,
            body,
            sent,
        }
    }

    /// Sends and returns the reply as a stream of SSE events, read one by one.
    pub(crate) async fn open(self) -> Events {
        let (resp, sent) = self.response().await;
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        Events {
            status,
            headers,
            body: Box::pin(resp),
            buf: Vec::new(),
            sent,
            responses: 0,
        }
    }
}

/// What was sent, as far as the checks need it.
#[derive(Debug, Clone)]
struct Sent {
    body: Option<Value>,
    mcp_endpoint: bool,
}

impl Sent {
    fn method(&self) -> Option<&str> {
        self.body.as_ref()?.get("method")?.as_str()
    }

    /// The request id, when the body had a readable one (a string or an integer). A body that
    /// is a JSON-RPC response (it has `result` or `error`) has no request id to echo.
    fn id(&self) -> Option<&Value> {
        let body = self.body.as_ref()?;
        if body.get("method").is_none()
            && (body.get("result").is_some() || body.get("error").is_some())
        {
            return None;
        }
        let id = body.get("id")?;
        match id {
            Value::String(_) => Some(id),
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(id),
            _ => None,
        }
    }

    fn meta(&self, key: &str) -> Option<&Value> {
        self.body.as_ref()?.get("params")?.get("_meta")?.get(key)
    }
}

// ---------------------------------------------------------------------------------------------
// Replies

/// A whole reply.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Bytes,
    sent: Sent,
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
    body: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>>,
    buf: Vec<u8>,
    sent: Sent,
    responses: usize,
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

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn parse_sse(body: &[u8]) -> Vec<Value> {
    let text = std::str::from_utf8(body).expect("an SSE body is UTF-8");
    text.split("\n\n")
        .filter_map(|block| parse_block(block.as_bytes()))
        .collect()
}

/// One SSE event block: its `data` as JSON, `None` for a comment-only block.
fn parse_block(block: &[u8]) -> Option<Value> {
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

// ---------------------------------------------------------------------------------------------
// Wire checks

const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

fn level_rank(level: &str) -> usize {
    LEVELS
        .iter()
        .position(|l| *l == level)
        .unwrap_or_else(|| panic!("unknown log level {level:?}"))
}

/// The checks every message from the server passes. `responses_before`: how many responses
/// came earlier on the same stream (nothing may follow a request's response).
fn check_message(sent: &Sent, message: &Value, status: u16, responses_before: usize) {
    assert_eq!(message["jsonrpc"], "2.0", "not JSON-RPC 2.0: {message}");
    let listening = sent.method() == Some("subscriptions/listen");
    assert_eq!(
        responses_before, 0,
        "a message after the stream's response: {message}"
    );

    if let Some(method) = message.get("method") {
        let method = method.as_str().expect("a string method");
        assert!(
            message.get("id").is_none(),
            "a modern server never sends a JSON-RPC request: {message}"
        );
        schema::assert_valid("JSONRPCNotification", message);
        if let Some(def) = schema::notification_def(method) {
            schema::assert_valid(def, message);
        }
        let params = &message["params"];
        assert!(
            params.get("resultType").is_none(),
            "notifications carry no resultType: {message}"
        );
        let subscription = params.get("_meta").and_then(|m| m.get(SUBSCRIPTION_ID));
        if listening {
            assert_eq!(
                subscription,
                sent.body.as_ref().and_then(|b| b.get("id")),
                "every notification on a listen stream carries its subscriptionId: {message}"
            );
            assert!(
                method != "notifications/progress" && method != "notifications/message",
                "no progress or logs on a listen stream: {message}"
            );
        } else {
            assert!(
                subscription.is_none(),
                "request-scoped notifications carry no subscriptionId: {message}"
            );
        }
        match method {
            "notifications/progress" => assert_eq!(
                Some(&params["progressToken"]),
                sent.meta("progressToken"),
                "progress echoes the request's token: {message}"
            ),
            "notifications/message" => {
                let asked = sent
                    .meta(LOG_LEVEL)
                    .and_then(Value::as_str)
                    .unwrap_or_else(|| panic!("a log without a logLevel: {message}"));
                let level = params["level"].as_str().expect("a level");
                assert!(
                    level_rank(level) >= level_rank(asked),
                    "a {level} log for a request that asked for {asked} and above"
                );
            }
            _ => {}
        }
        return;
    }

    // Refused before the body was read (guard, size, time): the id is not known.
    if ![403, 408, 413].contains(&status) {
        if let Some(id) = sent.id() {
            assert_eq!(
                message.get("id"),
                Some(id),
                "the response carries the request's id: {message}"
            );
        }
    }
    schema::assert_valid("JSONRPCResponse", message);

    if let Some(error) = message.get("error") {
        assert!(message.get("result").is_none(), "{message}");
        schema::assert_valid("JSONRPCErrorResponse", message);
        assert!(
            error.get("resultType").is_none()
                && error
                    .get("data")
                    .and_then(|d| d.get("resultType"))
                    .is_none(),
            "errors carry no resultType: {message}"
        );
        let code = error["code"].as_i64().expect("an integer code");
        if let Some((def, whole)) = schema::error_def(code) {
            schema::assert_valid(def, if whole { message } else { error });
        }
        if sent.mcp_endpoint {
            let expected = match code {
                -32700 | -32600 | -32602 | -32020 | -32021 | -32022 => Some(400),
                -32601 => Some(404),
                _ => None,
            };
            if let Some(expected) = expected {
                assert_eq!(status, expected, "HTTP status of error {code}: {message}");
            }
        }
        return;
    }

    assert_eq!(status, 200, "a result travels with HTTP 200: {message}");
    schema::assert_valid("JSONRPCResultResponse", message);
    let method = sent.method().unwrap_or_default();
    let result = &message["result"];
    assert!(
        result.get("resultType").and_then(Value::as_str).is_some(),
        "every modern result has resultType: {message}"
    );
    assert!(
        result["_meta"].get(SERVER_INFO).is_some() || listening,
        "every result carries serverInfo in _meta: {message}"
    );
    if let Some(def) = schema::result_response_def(method) {
        schema::assert_valid(def, message);
    }
    if result["resultType"] == "input_required" {
        assert!(
            matches!(method, "tools/call" | "prompts/get" | "resources/read"),
            "input_required from {method}: {message}"
        );
        schema::assert_valid("InputRequiredResult", result);
        assert!(
            result.get("inputRequests").is_some() || result.get("requestState").is_some(),
            "an input-required result has inputRequests or requestState: {message}"
        );
        assert!(
            result.get("ttlMs").is_none() && result.get("cacheScope").is_none(),
            "input-required results carry no caching hints: {message}"
        );
        if let Some(requests) = result.get("inputRequests").and_then(Value::as_object) {
            for request in requests.values() {
                schema::assert_valid("InputRequest", request);
                assert!(
                    request.get("id").is_none() && request.get("jsonrpc").is_none(),
                    "embedded input requests are not JSON-RPC messages: {message}"
                );
            }
        }
    }
}

/// The checks themselves: a schema check that accepted everything would make every test pass.
mod self_check {
    use serde_json::json;

    use super::schema::assert_valid;

    fn rejects(def: &str, value: serde_json::Value) {
        let outcome = std::panic::catch_unwind(|| assert_valid(def, &value));
        assert!(outcome.is_err(), "{def} accepted {value}");
    }

    #[test]
    fn the_schema_check_accepts_well_formed_messages() {
        assert_valid(
            "JSONRPCResultResponse",
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}),
        );
        assert_valid(
            "HeaderMismatchError",
            &json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32020, "message": "m"}}),
        );
        assert_valid(
            "JSONRPCErrorResponse",
            &json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "m"}}),
        );
    }

    #[test]
    fn the_schema_check_rejects_what_the_spec_forbids() {
        rejects(
            "JSONRPCResultResponse",
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        rejects(
            "JSONRPCErrorResponse",
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "m"}}),
        );
        rejects(
            "JSONRPCResponse",
            json!({"jsonrpc": "2.0", "id": 1.5, "result": {"resultType": "complete"}}),
        );
        rejects(
            "HeaderMismatchError",
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "m"}}),
        );
        rejects(
            "MissingRequiredClientCapabilityError",
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "m"}}),
        );
        rejects(
            "DiscoverResult",
            json!({"resultType": "complete", "supportedVersions": [], "capabilities": {}, "ttlMs": 1, "cacheScope": "shared"}),
        );
        rejects("InputRequest", json!({"method": "ping", "params": {}}));
    }
}
