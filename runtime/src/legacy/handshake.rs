//! `initialize`: the legacy handshake. It negotiates a legacy version and records what the
//! client declared; the session keeps both for its lifetime.

use serde_json::{json, Map, Value};

use crate::dispatch::server_capabilities;
use crate::handler::{Catalog, TenantView};
use crate::protocol::{ClientCapabilities, McpError, ProtocolVersion, Request};

/// What a client said in `initialize`.
#[derive(Debug, Clone)]
pub struct Initialize {
    /// The version this session speaks.
    pub version: ProtocolVersion,
    /// `capabilities`: what the client can do, for the whole session (empty when absent).
    pub client_capabilities: ClientCapabilities,
    /// `clientInfo` as sent (`{name, version}`); only logged.
    pub client_info: Option<Value>,
}

impl Initialize {
    /// `clientInfo` as `name/version`, for the log (clipped: it is the client's text).
    pub fn client_name(&self) -> Option<String> {
        let info = self.client_info.as_ref()?;
        let field = |k: &str| info.get(k).and_then(Value::as_str).unwrap_or("?");
        let name = format!("{}/{}", field("name"), field("version"));
        Some(name.chars().take(64).collect())
    }
}

/// Reads an `initialize` request (-32602 if `protocolVersion` or `capabilities` is malformed).
pub fn parse(request: &Request) -> Result<Initialize, McpError> {
    let params = request
        .params
        .as_ref()
        .ok_or_else(|| McpError::invalid_params("initialize needs params"))?;
    let requested = params
        .get("protocolVersion")
        .and_then(Value::as_str)
        .ok_or_else(|| McpError::invalid_params("Missing required params.protocolVersion"))?;
    let client_capabilities = match params.get("capabilities") {
        None | Some(Value::Null) => ClientCapabilities::default(),
        Some(Value::Object(c)) => ClientCapabilities::declared(c.clone(), "params.capabilities")?,
        Some(_) => {
            return Err(McpError::invalid_params(
                "params.capabilities must be an object",
            ))
        }
    };
    Ok(Initialize {
        version: ProtocolVersion::negotiate_legacy(requested),
        client_capabilities,
        client_info: params.get("clientInfo").cloned(),
    })
}

/// The `InitializeResult`: the negotiated version, what the caller's catalog offers, who the
/// server is. No `resultType`: legacy results carry none.
pub fn result(init: &Initialize, tenant: &TenantView, catalog: &Catalog) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("protocolVersion".into(), json!(init.version.as_str()));
    out.insert(
        "capabilities".into(),
        Value::Object(server_capabilities(catalog)),
    );
    out.insert("serverInfo".into(), tenant.server_info().clone());
    if let Some(instructions) = tenant.instructions() {
        out.insert("instructions".into(), json!(instructions));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RequestId;

    fn init(params: Value) -> Result<Initialize, McpError> {
        parse(&Request {
            id: RequestId::Number(0.into()),
            method: "initialize".into(),
            params: params.as_object().cloned(),
        })
    }

    #[test]
    fn a_served_legacy_version_is_kept_and_anything_else_gets_the_newest_legacy_one() {
        for (asked, got) in [
            ("2025-06-18", "2025-06-18"),
            ("2025-03-26", "2025-03-26"),
            ("2024-11-05", "2025-11-25"),
            ("2026-07-28", "2025-11-25"),
        ] {
            let i = init(json!({"protocolVersion": asked, "capabilities": {}})).expect("valid");
            assert_eq!(i.version.as_str(), got, "asked {asked}");
        }
    }

    #[test]
    fn initialize_without_a_protocol_version_is_invalid_params() {
        let e = init(json!({"capabilities": {}})).expect_err("invalid");
        assert_eq!(e.code.code(), -32602);
    }
}
