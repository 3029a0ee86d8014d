//! Tool and prompt arguments: the `arguments` object of the request, with typed getters whose
//! errors are invalid-params errors.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::outcome::HandlerError;

/// The `arguments` object of a `tools/call` or `prompts/get` request; empty when the request
/// sent none. Shared, not copied: the runtime keeps the same object to bind a sealed state
/// to, and a legacy flow hands it to every round's run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Arguments(Arc<Map<String, Value>>);

impl Arguments {
    /// Arguments from a request's `arguments` object (or a test's).
    pub fn new(map: Map<String, Value>) -> Self {
        Self(Arc::new(map))
    }

    /// Arguments the runtime keeps too.
    pub(crate) fn shared(map: Arc<Map<String, Value>>) -> Self {
        Self(map)
    }

    /// The argument `name` as sent, of whatever type; `None` when absent.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

    /// Every argument, as the request sent them.
    pub fn as_map(&self) -> &Map<String, Value> {
        &self.0
    }

    /// A required string argument.
    pub fn str(&self, name: &str) -> Result<&str, HandlerError> {
        self.opt_str(name)?.ok_or_else(|| {
            HandlerError::InvalidParams(format!("Missing required argument '{name}'"))
        })
    }

    /// An optional string argument; present but not a string is an error.
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, HandlerError> {
        match self.0.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(HandlerError::InvalidParams(format!(
                "Argument '{name}' must be a string"
            ))),
        }
    }
}
