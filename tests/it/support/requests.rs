//! Requests: building MCP messages (`_meta`, requests, `tools/call`, MRTR retries, answers)
//! and sending them. [`Req`] is the request builder: the MCP headers a correct client derives
//! from the body, overridable one by one, then sent for a whole [`Reply`] or read event by
//! event as [`Events`]; both check every message the server sends (see `wire_checks`).

use actix_web::web::Bytes;
use awc::error::PayloadError;
use awc::http::Method;
use base64::Engine as _;
use futures_util::Stream;
use serde_json::{json, Value};

use super::protocol::{CLIENT_CAPABILITIES, CLIENT_INFO, PROTOCOL_VERSION, VERSION};
use super::replies::{Events, Reply};
use super::server::{Server, ALICE, DEMO};
use super::wire_checks::Sent;

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

impl Server {
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

pub(crate) struct Req<'s> {
    pub(super) server: &'s Server,
    pub(super) method: Method,
    pub(super) url: String,
    pub(super) body: Bytes,
    pub(super) sent: Option<Value>,
    pub(super) headers: Vec<(String, String)>,
    /// A POST to `/t/{tenant}/mcp`: the spec's status-per-code table applies.
    pub(super) mcp_endpoint: bool,
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

    pub(super) async fn response(
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
