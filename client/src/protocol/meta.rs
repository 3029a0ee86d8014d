//! The `_meta` envelope every modern request carries (`io.modelcontextprotocol/*` keys).

use serde_json::{Map, Value};

use super::version::ProtocolVersion;

/// `_meta` key: the protocol version of this request.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client capabilities this request declares.
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// Result `_meta` key: the server's name and version.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// The envelope of one modern request: version, client info and capabilities.
pub fn envelope(
    version: ProtocolVersion,
    client_info: &Value,
    capabilities: &Map<String, Value>,
) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(PROTOCOL_VERSION.into(), version.as_str().into());
    meta.insert(CLIENT_INFO.into(), client_info.clone());
    meta.insert(
        CLIENT_CAPABILITIES.into(),
        Value::Object(capabilities.clone()),
    );
    meta
}

/// Adds the envelope to `params._meta`, keeping any `_meta` keys the caller put there (a
/// `progressToken`, say) but replacing ours.
pub fn stamp(params: &mut Map<String, Value>, envelope: Map<String, Value>) {
    match params.get_mut("_meta") {
        Some(Value::Object(meta)) => meta.extend(envelope),
        _ => {
            params.insert("_meta".into(), Value::Object(envelope));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stamping_keeps_the_callers_meta_keys() {
        let mut params = json!({"_meta": {"progressToken": "p"}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let caps = Map::new();
        stamp(
            &mut params,
            envelope(
                ProtocolVersion::V2026_07_28,
                &json!({"name": "c", "version": "1"}),
                &caps,
            ),
        );
        assert_eq!(params["_meta"]["progressToken"], "p");
        assert_eq!(params["_meta"][PROTOCOL_VERSION], "2026-07-28");
        assert_eq!(params["_meta"][CLIENT_CAPABILITIES], json!({}));
    }
}
