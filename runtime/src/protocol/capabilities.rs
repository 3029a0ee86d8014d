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
/// declaration a request made.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientCapabilities(Arc<Map<String, Value>>);

/// The declaration of nothing, made once: many requests declare no capability, and each
/// would otherwise allocate an empty one of its own.
static NONE: LazyLock<Arc<Map<String, Value>>> = LazyLock::new(Arc::default);

impl Default for ClientCapabilities {
    /// Nothing declared.
    fn default() -> Self {
        Self(NONE.clone())
    }
}

impl ClientCapabilities {
    /// The capabilities object a request declared (`_meta` or `initialize`), kept whole.
    pub fn new(map: Map<String, Value>) -> Self {
        if map.is_empty() {
            return Self::default();
        }
        Self(Arc::new(map))
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
        &self.0
    }

    /// Is `key` declared at the top level?
    pub fn has(&self, key: &str) -> bool {
        self.0.contains_key(key)
    }

    /// Is `sub` declared under `key` (e.g. `elicitation.url`)?
    pub fn has_sub(&self, key: &str, sub: &str) -> bool {
        self.0
            .get(key)
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(sub))
    }

    /// Form elicitation: `elicitation.form`, or a bare `elicitation` that names neither mode
    /// (the backward-compatible reading).
    pub fn allows_form_elicitation(&self) -> bool {
        match self.0.get("elicitation") {
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
    fn declarations_of_nothing_share_one_allocation() {
        let (a, b) = (caps(json!({})), ClientCapabilities::default());
        assert!(Arc::ptr_eq(&a.0, &b.0));
        assert!(!Arc::ptr_eq(&a.0, &caps(json!({"roots": {}})).0));
    }

    #[test]
    fn url_only_elicitation_does_not_imply_form() {
        let c = caps(json!({"elicitation": {"url": {}}}));
        assert!(!c.allows_form_elicitation());
        assert!(c.allows_url_elicitation());
    }
}
