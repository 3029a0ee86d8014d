//! Client capabilities as one request declared them.
//!
//! The spec lets capability objects carry anything, and the gate only asks "is this key
//! present". A key counts as declared whatever its members (`{}` counts), but its value must be
//! an object, as every capability in the schema is: a declaration such as
//! `"elicitation": true` is refused (-32602) rather than guessed at.
//!
//! Most clients declare a few of the schema's capabilities, each as `{}`. Such a declaration
//! is kept as one bit per capability, and the parse of a modern request reads it straight into
//! that form (`ParsedCapabilities`): no key, map or `Arc` is allocated for it, and the gate
//! tests bits. Any other declaration is kept whole, as the JSON object it is. (The parse reads
//! member names as names: serde_json's private raw-value token is no exception here.)

use std::borrow::Cow;
use std::sync::{Arc, LazyLock};

use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::error::McpError;
use super::key::Key;
use super::other_json::other_json_is;

/// Shared, not copied: the scope, the handler's context and the gate all read the one
/// declaration a request made.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClientCapabilities(Declared);

/// One declaration in its one form: the same capabilities are always held the same way.
#[derive(Debug, Clone, PartialEq)]
enum Declared {
    /// Only capabilities of the schema, each declared as `{}`: a bit each, in the order of
    /// [`BARE_NAMES`]. No bit set is a declaration of nothing.
    Bare(u8),
    /// Anything else, kept whole.
    Whole(Arc<Map<String, Value>>),
}

impl Default for Declared {
    fn default() -> Self {
        Self::Bare(0)
    }
}

/// The client capabilities of the schema (of either era): each can be held as a bit when it is
/// declared as `{}`.
const BARE_NAMES: [&str; 6] = [
    "elicitation",
    "experimental",
    "extensions",
    "roots",
    "sampling",
    "tasks",
];

/// The bit of a capability of the schema.
fn bare_bit(name: &str) -> Option<u8> {
    BARE_NAMES.iter().position(|n| *n == name).map(|i| 1 << i)
}

/// What every capability held as a bit reads as. Only ever read, so the workers that share
/// it never write its cache line.
static EMPTY: LazyLock<Value> = LazyLock::new(|| Value::Object(Map::new()));

impl ClientCapabilities {
    /// The capabilities object a request declared (`_meta` or `initialize`), unchecked.
    pub fn new(map: Map<String, Value>) -> Self {
        let bare = map.iter().try_fold(0, |bits, (name, value)| {
            let empty = value.as_object().is_some_and(Map::is_empty);
            Some(bits | bare_bit(name).filter(|_| empty)?)
        });
        Self(match bare {
            Some(bits) => Declared::Bare(bits),
            None => Declared::Whole(Arc::new(map)),
        })
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

    /// The value declared for `key`, if it is declared.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match &self.0 {
            Declared::Bare(bits) => bare_bit(key).filter(|b| bits & b != 0).map(|_| &*EMPTY),
            Declared::Whole(map) => map.get(key),
        }
    }

    /// The declaration as a JSON object, as the client sent it (members in key order).
    pub fn to_map(&self) -> Cow<'_, Map<String, Value>> {
        match &self.0 {
            Declared::Bare(bits) => Cow::Owned(bare_map(*bits)),
            Declared::Whole(map) => Cow::Borrowed(map),
        }
    }

    /// Is `key` declared at the top level?
    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// Is `sub` declared under `key` (e.g. `elicitation.url`)?
    pub fn has_sub(&self, key: &str, sub: &str) -> bool {
        self.get(key)
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key(sub))
    }

    /// Form elicitation: `elicitation.form`, or a bare `elicitation` that names neither mode
    /// (the backward-compatible reading).
    pub fn allows_form_elicitation(&self) -> bool {
        match self.get("elicitation") {
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

/// The capabilities of `bits`, each as `{}`.
fn bare_map(bits: u8) -> Map<String, Value> {
    BARE_NAMES
        .iter()
        .enumerate()
        .filter(|(i, _)| bits & (1 << i) != 0)
        .map(|(_, name)| ((*name).to_owned(), Value::Object(Map::new())))
        .collect()
}

/// A declaration as a request's parse reads it: the bits when it is one of the schema's
/// capabilities each declared as `{}`, otherwise the JSON as sent, for
/// [`ClientCapabilities::declared`] to check (an object) or for the envelope check to refuse
/// (anything else). Member for member, the same reading as a JSON value's: a member given
/// twice counts once, the last one.
pub(crate) enum ParsedCapabilities {
    Bare(ClientCapabilities),
    Json(Value),
}

impl ParsedCapabilities {
    /// The capabilities held as bits, or the JSON that cannot be.
    pub(crate) fn bare(self) -> Result<ClientCapabilities, Value> {
        match self {
            Self::Bare(capabilities) => Ok(capabilities),
            Self::Json(value) => Err(value),
        }
    }
}

impl<'de> Deserialize<'de> for ParsedCapabilities {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ParsedVisitor)
    }
}

struct ParsedVisitor;

impl<'de> Visitor<'de> for ParsedVisitor {
    type Value = ParsedCapabilities;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("client capabilities")
    }

    /// Bits while every member is a capability of the schema declared as `{}`; from the first
    /// one that is not, the whole object.
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ParsedCapabilities, A::Error> {
        let mut bits = 0;
        while let Some(Key(name)) = map.next_key()? {
            match (bare_bit(&name), map.next_value()?) {
                (Some(bit), CapabilityValue::Empty) => bits |= bit,
                (_, member) => {
                    let mut whole = bare_map(bits);
                    whole.insert(name.into_owned(), member.into_value());
                    while let Some((name, value)) = map.next_entry::<String, Value>()? {
                        whole.insert(name, value);
                    }
                    return Ok(ParsedCapabilities::Json(Value::Object(whole)));
                }
            }
        }
        Ok(ParsedCapabilities::Bare(ClientCapabilities(
            Declared::Bare(bits),
        )))
    }

    other_json_is!(ParsedCapabilities::Json);
}

/// A capability's value: `{}`, or any other JSON.
enum CapabilityValue {
    Empty,
    Json(Value),
}

impl CapabilityValue {
    fn into_value(self) -> Value {
        match self {
            Self::Empty => Value::Object(Map::new()),
            Self::Json(value) => value,
        }
    }
}

impl<'de> Deserialize<'de> for CapabilityValue {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(CapabilityValueVisitor)
    }
}

struct CapabilityValueVisitor;

impl<'de> Visitor<'de> for CapabilityValueVisitor {
    type Value = CapabilityValue;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a capability")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<CapabilityValue, A::Error> {
        let Some((name, value)) = map.next_entry::<String, Value>()? else {
            return Ok(CapabilityValue::Empty);
        };
        let mut members = Map::new();
        members.insert(name, value);
        while let Some((name, value)) = map.next_entry::<String, Value>()? {
            members.insert(name, value);
        }
        Ok(CapabilityValue::Json(Value::Object(members)))
    }

    other_json_is!(CapabilityValue::Json);
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
        assert_eq!(nothing.0, Declared::Bare(0));
        assert_eq!(nothing, ClientCapabilities::default());
        assert!(nothing.to_map().is_empty() && !nothing.has("roots"));
    }

    #[test]
    fn capabilities_of_the_schema_declared_as_empty_objects_are_held_as_bits() {
        let c = caps(json!({"elicitation": {}, "roots": {}, "sampling": {}}));
        assert!(matches!(c.0, Declared::Bare(_)));
        assert!(c.has("elicitation") && c.has("roots") && c.has("sampling"));
        assert!(!c.has("tasks") && !c.has_sub("sampling", "tools"));
        assert_eq!(c.get("roots"), Some(&json!({})));
    }

    #[test]
    fn a_declaration_held_as_bits_reads_back_as_the_object_sent() {
        let sent = json!({"experimental": {}, "extensions": {}, "tasks": {}});
        assert_eq!(
            Value::Object(caps(sent.clone()).to_map().into_owned()),
            sent
        );
    }

    #[test]
    fn a_capability_with_members_or_outside_the_schema_keeps_the_object_whole() {
        for sent in [
            json!({"elicitation": {"url": {}}, "roots": {}}),
            json!({"roots": {}, "ext.example/x": {}}),
        ] {
            let c = caps(sent.clone());
            assert!(matches!(c.0, Declared::Whole(_)));
            assert_eq!(Value::Object(c.to_map().into_owned()), sent);
        }
    }

    fn parsed(body: &str) -> ParsedCapabilities {
        serde_json::from_str(body).expect("JSON")
    }

    #[test]
    fn the_parse_reads_a_bare_declaration_as_the_map_would_be_held() {
        let body = r#"{"sampling": {}, "elicitation": {}, "sampling": {}}"#;
        let ParsedCapabilities::Bare(c) = parsed(body) else {
            panic!("not read as bits")
        };
        assert_eq!(c, caps(json!({"elicitation": {}, "sampling": {}})));
    }

    #[test]
    fn an_escaped_capability_name_is_read_as_the_name_it_spells() {
        let ParsedCapabilities::Bare(c) = parsed(r#"{"ro\u006fts": {}}"#) else {
            panic!("not read as bits")
        };
        assert_eq!(c, caps(json!({"roots": {}})));
    }

    #[test]
    fn the_parse_keeps_any_other_declaration_as_the_json_value_it_is() {
        for body in [
            r#"{"roots": {}, "sampling": {"tools": {}}, "tasks": {}}"#,
            r#"{"roots": {}, "ext.example/x": {"a": [1, {"b": null}]}}"#,
            r#"{"sampling": {}, "sampling": {"context": {}}}"#,
            r#"{"elicitation": true}"#,
            r#"true"#,
            r#"[{"roots": {}}]"#,
            r#""roots""#,
            r#"null"#,
        ] {
            let ParsedCapabilities::Json(value) = parsed(body) else {
                panic!("{body} read as bits")
            };
            assert_eq!(value, serde_json::from_str::<Value>(body).expect("JSON"));
        }
    }

    #[test]
    fn url_only_elicitation_does_not_imply_form() {
        let c = caps(json!({"elicitation": {"url": {}}}));
        assert!(!c.allows_form_elicitation());
        assert!(c.allows_url_elicitation());
    }
}
