//! `initialize`: the legacy handshake. It negotiates a legacy version and records what the
//! client declared; the session keeps both for its lifetime.

use serde_json::{json, Map, Value};

use crate::budget::figures::json_size;
use crate::dispatch::server_capabilities;
use crate::handler::{Catalog, TenantView};
use crate::protocol::{ClientCapabilities, McpError, ProtocolVersion, Request};

/// The capabilities a legacy client may declare by name; any other member is an extension.
const KNOWN_CAPABILITIES: [&str; 4] = ["roots", "sampling", "elicitation", "tasks"];

/// The largest a known capability may be, as compact JSON.
pub const MAX_CAPABILITY_BYTES: u64 = 4 * 1024;

/// The largest `experimental` and the extensions may be together, as compact JSON.
pub const MAX_EXTENSION_BYTES: u64 = 16 * 1024;

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
        Some(Value::Object(c)) => {
            bounded(c)?;
            ClientCapabilities::declared(c.clone(), "params.capabilities")?
        }
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

/// Refuses capabilities a session would keep that are larger than it needs: a known one
/// above [`MAX_CAPABILITY_BYTES`], or `experimental` and the extensions together above
/// [`MAX_EXTENSION_BYTES`] (-32602 naming the cap). What passes is what the session keeps,
/// and is charged to the caller's budget.
fn bounded(capabilities: &Map<String, Value>) -> Result<(), McpError> {
    let mut extensions = 0;
    for (name, value) in capabilities {
        let size = json_size(value);
        if KNOWN_CAPABILITIES.contains(&name.as_str()) {
            if size > MAX_CAPABILITY_BYTES {
                return Err(McpError::invalid_params(format!(
                    "params.capabilities.{name} is {size} bytes, above the cap of \
                     {MAX_CAPABILITY_BYTES} bytes per capability"
                )));
            }
        } else {
            extensions += size + name.len() as u64;
        }
    }
    if extensions > MAX_EXTENSION_BYTES {
        return Err(McpError::invalid_params(format!(
            "params.capabilities.experimental and extensions are {extensions} bytes, above \
             the cap of {MAX_EXTENSION_BYTES} bytes"
        )));
    }
    Ok(())
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
            meta_capabilities: None,
            meta_version: None,
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
    fn capabilities_within_their_caps_are_kept() {
        let big = "x".repeat(3_000);
        let i = init(json!({"protocolVersion": "2025-11-25", "capabilities": {
            "elicitation": {"note": big}, "experimental": {"a": big}, "ext.example/x": {"b": big}
        }}))
        .expect("within the caps");
        assert!(i.client_capabilities.has("ext.example/x"));
    }

    #[test]
    fn a_known_capability_above_its_cap_is_refused_naming_it() {
        let big = "x".repeat(5_000);
        let e =
            init(json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {"n": big}}}))
                .expect_err("too big");
        assert_eq!(e.code.code(), -32602);
        assert!(e.message.contains("capabilities.roots"), "{}", e.message);
        assert!(e.message.contains("4096"), "{}", e.message);
    }

    #[test]
    fn experimental_and_extensions_above_their_cap_together_are_refused() {
        let big = "x".repeat(9_000);
        let e = init(json!({"protocolVersion": "2025-11-25", "capabilities": {
            "experimental": {"a": big}, "ext.example/x": {"b": big}
        }}))
        .expect_err("too big together");
        assert_eq!(e.code.code(), -32602);
        assert!(e.message.contains("16384"), "{}", e.message);
    }

    #[test]
    fn initialize_without_a_protocol_version_is_invalid_params() {
        let e = init(json!({"capabilities": {}})).expect_err("invalid");
        assert_eq!(e.code.code(), -32602);
    }
}
