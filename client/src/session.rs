//! One connection's wire state and how a request is put on the wire in each era.
//!
//! Modern requests carry the `_meta` envelope (version, client info, the capabilities the
//! handlers declare) and the SEP-2243 headers; a -32022 naming a version we share is retried
//! once at that version. Legacy requests carry neither, except `Mcp-Method`/`Mcp-Name`
//! (harmless to an older server) and the negotiated `MCP-Protocol-Version`. The era itself is
//! decided in `era.rs`, once, and stored here.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Mutex;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::handler::{Handlers, InputContext};
use crate::protocol::headers;
use crate::protocol::jsonrpc::{self, RequestId, RpcError};
use crate::protocol::meta;
use crate::protocol::tools::{HeaderParam, InvalidAnnotation, Tool};
use crate::protocol::version::{Era, ProtocolVersion};
use crate::transport::{Answer, Outgoing, Transport};

/// How one request is framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wire {
    /// With the envelope, at this version.
    Modern(ProtocolVersion),
    /// Without; the negotiated version once `initialize` has chosen one.
    Legacy(Option<ProtocolVersion>),
}

/// What `tools/list` taught the client about a tool's headers.
#[derive(Debug, Clone)]
enum ToolHeaders {
    Params(Vec<HeaderParam>),
    Invalid(InvalidAnnotation),
}

/// What the connection knows about the server it reached.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerInfo {
    /// The era the connection speaks.
    pub era: Era,
    /// The protocol version of its requests.
    pub protocol_version: ProtocolVersion,
    /// The server's capabilities (from `server/discover` or `initialize`; `None` when the
    /// era was forced modern and nothing was discovered).
    pub capabilities: Option<Value>,
    /// The server's name and version, if it said.
    pub server_info: Option<Value>,
    /// Its instructions for a model, if any.
    pub instructions: Option<String>,
}

/// A connection: the transport, the handlers, and the era's state.
#[derive(Debug)]
pub(crate) struct Session {
    pub(crate) transport: Transport,
    pub(crate) handlers: Handlers,
    client_info: Value,
    next_id: AtomicI64,
    server: Mutex<Option<ServerInfo>>,
    tools: Mutex<HashMap<String, ToolHeaders>>,
}

impl Session {
    pub(crate) fn new(transport: Transport, handlers: Handlers, client_info: Value) -> Self {
        Self {
            transport,
            handlers,
            client_info,
            next_id: AtomicI64::new(1),
            server: Mutex::new(None),
            tools: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn client_info(&self) -> &Value {
        &self.client_info
    }

    /// What the connection knows about the server (set once the era is decided).
    pub(crate) fn server(&self) -> Option<ServerInfo> {
        self.server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    pub(crate) fn set_server(&self, info: ServerInfo) {
        *self.server.lock().unwrap_or_else(|p| p.into_inner()) = Some(info);
    }

    fn wire(&self) -> Wire {
        match self.server() {
            Some(s) if s.era == Era::Legacy => Wire::Legacy(Some(s.protocol_version)),
            Some(s) => Wire::Modern(s.protocol_version),
            None => Wire::Modern(ProtocolVersion::MODERN[0]),
        }
    }

    /// Learns the header parameters of `tools` (from a `tools/list` page); returns the tools
    /// that are valid, dropping the others with a warning.
    pub(crate) fn learn_tools(&self, tools: Vec<Tool>) -> Vec<Tool> {
        let mut known = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        tools
            .into_iter()
            .filter(|tool| match tool.header_params() {
                Ok(params) => {
                    known.insert(tool.name.clone(), ToolHeaders::Params(params));
                    true
                }
                Err(reason) => {
                    tracing::warn!(tool = %tool.name, %reason, "dropping a tool with invalid x-mcp-header annotations");
                    known.insert(tool.name.clone(), ToolHeaders::Invalid(reason));
                    false
                }
            })
            .collect()
    }

    /// Whether `tools/list` described `name` (valid or not).
    pub(crate) fn knows_tool(&self, name: &str) -> bool {
        self.tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains_key(name)
    }

    /// The error of a tool the client refuses to call.
    pub(crate) fn refused_tool(&self, name: &str) -> Option<Error> {
        match self
            .tools
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(name)
        {
            Some(ToolHeaders::Invalid(reason)) => Some(Error::InvalidTool {
                name: name.to_owned(),
                reason: reason.clone(),
            }),
            _ => None,
        }
    }

    /// Sends `method` framed by the connection's era; the server's JSON-RPC error becomes
    /// [`Error::Rpc`]. A modern -32022 naming a version we share is retried once at it.
    pub(crate) async fn call(
        &self,
        method: &str,
        params: Map<String, Value>,
        context: &InputContext,
    ) -> Result<Value, Error> {
        let wire = self.wire();
        let answer = self.exchange(wire, method, params.clone(), context).await?;
        let answer = match (wire, answer) {
            (Wire::Modern(sent), Err(e)) if e.code == RpcError::UNSUPPORTED_PROTOCOL_VERSION => {
                match ProtocolVersion::shared_modern(e.supported_versions()) {
                    Some(v) => {
                        if v != sent {
                            self.switch_version(v);
                        }
                        self.exchange(Wire::Modern(v), method, params, context)
                            .await?
                    }
                    None => Err(e),
                }
            }
            (_, answer) => answer,
        };
        answer.map_err(|error| Error::Rpc {
            method: method.to_owned(),
            error,
        })
    }

    fn switch_version(&self, version: ProtocolVersion) {
        if let Some(server) = self
            .server
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .as_mut()
        {
            server.protocol_version = version;
        }
    }

    /// One request and its raw answer, framed as `wire` says.
    pub(crate) async fn exchange(
        &self,
        wire: Wire,
        method: &str,
        mut params: Map<String, Value>,
        context: &InputContext,
    ) -> Result<Answer, Error> {
        if let Wire::Modern(version) = wire {
            let envelope =
                meta::envelope(version, &self.client_info, &self.handlers.capabilities());
            meta::stamp(&mut params, envelope);
        }
        let id = RequestId::Number(self.next_id.fetch_add(1, Ordering::Relaxed));
        let out = Outgoing {
            message: jsonrpc::request(&id, method, &params),
            headers: self.headers(wire, method, &params),
            id,
            method: method.to_owned(),
            context: context.clone(),
        };
        self.transport.request(&out).await
    }

    /// Sends a notification framed by the connection's era.
    pub(crate) async fn notify(&self, method: &str, params: Option<Value>) -> Result<(), Error> {
        let headers = self.headers(self.wire(), method, &Map::new());
        self.transport
            .notify(method, jsonrpc::notification(method, params), &headers)
            .await
    }

    /// The HTTP headers mirroring a request's body.
    fn headers(
        &self,
        wire: Wire,
        method: &str,
        params: &Map<String, Value>,
    ) -> Vec<(String, String)> {
        let mut out = Vec::new();
        match wire {
            Wire::Modern(v) | Wire::Legacy(Some(v)) => {
                out.push((headers::PROTOCOL_VERSION.to_owned(), v.as_str().to_owned()))
            }
            Wire::Legacy(None) => {}
        }
        out.push((headers::METHOD.to_owned(), method.to_owned()));
        if let Some(name) = headers::name_key(method)
            .and_then(|k| params.get(k))
            .and_then(Value::as_str)
        {
            out.push((headers::NAME.to_owned(), headers::encode(name)));
        }
        if matches!(wire, Wire::Modern(_)) && method == "tools/call" {
            out.extend(self.param_headers(params));
        }
        out
    }

    /// `Mcp-Param-{Name}` for each annotated argument that is present and not null.
    fn param_headers(&self, params: &Map<String, Value>) -> Vec<(String, String)> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Vec::new();
        };
        let tools = self.tools.lock().unwrap_or_else(|p| p.into_inner());
        let Some(ToolHeaders::Params(mirrored)) = tools.get(name) else {
            return Vec::new();
        };
        let arguments = params.get("arguments").and_then(Value::as_object);
        mirrored
            .iter()
            .filter_map(|p| {
                let value = headers::argument_value(arguments?.get(&p.property)?)?;
                Some((format!("{}{}", headers::PARAM_PREFIX, p.header), value))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::http::{Http, HttpOptions};
    use serde_json::json;

    fn session() -> Session {
        let http = Http::new(
            "http://127.0.0.1:9/mcp",
            &HttpOptions::default(),
            Handlers::default(),
        )
        .expect("a URL");
        Session::new(
            Transport::Http(http),
            Handlers::default(),
            json!({"name": "t", "version": "0"}),
        )
    }

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_modern_tool_call_mirrors_version_method_name_and_annotated_arguments() {
        let s = session();
        let tool: Tool = serde_json::from_value(
            json!({"name": "regional", "inputSchema": {"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                "note": {"type": "string"}
            }}}),
        )
        .expect("a tool");
        s.learn_tools(vec![tool]);
        let h = s.headers(
            Wire::Modern(ProtocolVersion::V2026_07_28),
            "tools/call",
            &params(json!({"name": "regional", "arguments": {"region": "Zürich", "count": 3, "verbose": null, "note": "n"}})),
        );
        let got: HashMap<&str, &str> = h.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        assert_eq!(got["mcp-protocol-version"], "2026-07-28");
        assert_eq!(got["mcp-method"], "tools/call");
        assert_eq!(got["mcp-name"], "regional");
        assert_eq!(got["mcp-param-Region"], headers::encode("Zürich"));
        assert_eq!(got["mcp-param-Count"], "3");
        assert!(
            !got.contains_key("mcp-param-Verbose"),
            "null arguments are not mirrored"
        );
        assert_eq!(h.len(), 5, "{h:?}");
    }

    #[test]
    fn a_legacy_request_carries_no_param_headers_and_initialize_no_version() {
        let s = session();
        let init = s.headers(Wire::Legacy(None), "initialize", &Map::new());
        assert_eq!(
            init,
            vec![("mcp-method".to_owned(), "initialize".to_owned())]
        );
        let read = s.headers(
            Wire::Legacy(Some(ProtocolVersion::V2025_11_25)),
            "resources/read",
            &params(json!({"uri": "file:///a b"})),
        );
        assert_eq!(
            read[0],
            ("mcp-protocol-version".to_owned(), "2025-11-25".to_owned())
        );
        assert_eq!(read[2], ("mcp-name".to_owned(), "file:///a b".to_owned()));
    }

    #[test]
    fn an_invalid_tool_is_dropped_and_refused() {
        let s = session();
        let bad: Tool = serde_json::from_value(
            json!({"name": "bad", "inputSchema": {"type": "object", "properties": {
            "v": {"type": "string", "x-mcp-header": "Bad Name"}}}}),
        )
        .expect("a tool");
        assert!(s.learn_tools(vec![bad]).is_empty());
        assert!(matches!(
            s.refused_tool("bad"),
            Some(Error::InvalidTool { .. })
        ));
        assert!(s.refused_tool("other").is_none());
    }
}
