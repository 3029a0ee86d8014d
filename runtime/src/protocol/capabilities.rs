//! Client capabilities as one request declared them.
//!
//! Kept as the raw JSON object: the spec lets capability objects carry anything, and the gate
//! only asks "is this key present". A key counts as declared whatever its members (`{}`
//! counts), but its value must be an object, as every capability in the schema is: a
//! declaration such as `"elicitation": true` is refused (-32602) rather than guessed at.

use std::sync::{Arc, LazyLock};

use serde_json::{Map, Value};

use super::error::McpError;

/// Shared, not copied: the scope, the handler's context and the gate all read the one
/// declaration a request made. A declaration of nothing holds no map at all (`None`): many
/// requests declare no capability, and each would otherwise allocate an empty one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCapabilities(Option<Arc<Map<String, Value>>>);

/// What a declaration of nothing reads as. Only ever read, so the workers that share it
/// never write its cache line (a shared `Arc` would count every clone there).
static NOTHING: LazyLock<Map<String, Value>> = LazyLock::new(Map::new);

impl ClientCapabilities {
    /// The capabilities object a request declared (`_meta` or `initialize`), kept whole.
    pub fn new(map: Map<String, Value>) -> Self {
        Self((!map.is_empty()).then(|| Arc::new(map)))
    }

    /// The capabilities object a request declared at `field` (named in the error), checked:
    /// -32602 when a capability's value is not an object.
    pub fn declared(map: Map<String, Value>, field: &str) -> Result<Self, McpError> {
        match map.iter().find(|(_, v)| !v.is_object()) {
            Some((key, _)) => Err(McpError::invalid_params(format!(
                "{field}.{key} must be an object"
            ))),
            None => Ok(Self::new(map)),
        }
    }

    /// The declaration as the client sent it.
    pub fn as_map(&self) -> &Map<String, Value> {
        self.0.as_deref().unwrap_or(&NOTHING)
    }

    /// Is `key` declared at the top level?
    pub fn has(&self, key: &str) -> bool {
        self.as_map().contains_key(key)
    }

    /// Is `sub` declared under `key` (e.g. `elicitation.url`)?
    pub fn has_sub(&self, key: &str, sub: &str) -> bool {
        self.as_map()
            .get(key)
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(sub))
    }

    /// Form elicitation: `elicitation.form`, or a bare `elicitation` that names neither mode
    /// (the backward-compatible reading).
    pub fn allows_form_elicitation(&self) -> bool {
        match self.as_map().get("elicitation") {
            None => false,
            Some(Value::Object(m)) => m.contains_key("form") || !m.contains_key("url"),
            // Not an object: `declared` refuses it; built by `new`, it declares nothing.
            Some(_) => false,
        }
    }

    /// URL elicitation: only an explicit `elicitation.url`.
    pub fn allows_url_elicitation(&self) -> bool {
        self.has_sub("elicitation", "url")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities::new(v.as_object().cloned().expect("object"))
    }

    #[test]
    fn a_bare_elicitation_means_form_only() {
        let c = caps(json!({"elicitation": {}}));
        assert!(c.allows_form_elicitation());
        assert!(!c.allows_url_elicitation());
    }

    #[test]
    fn a_capability_that_is_not_an_object_is_invalid_params_naming_it() {
        let map = json!({"sampling": {}, "elicitation": true})
            .as_object()
            .cloned()
            .expect("object");
        let e = ClientCapabilities::declared(map, "capabilities").expect_err("refused");
        assert_eq!(e.code.code(), -32602);
        assert_eq!(e.message, "capabilities.elicitation must be an object");
    }

    #[test]
    fn a_declaration_of_nothing_holds_no_map() {
        let nothing = caps(json!({}));
        assert!(nothing.0.is_none());
        assert_eq!(nothing, ClientCapabilities::default());
        assert!(nothing.as_map().is_empty() && !nothing.has("roots"));
    }

    #[test]
    fn url_only_elicitation_does_not_imply_form() {
        let c = caps(json!({"elicitation": {"url": {}}}));
        assert!(!c.allows_form_elicitation());
        assert!(c.allows_url_elicitation());
    }
}
