//! Tool and prompt arguments: the `arguments` object of the request, with typed getters whose
//! errors are invalid-params errors.

use serde_json::{Map, Value};

use super::outcome::HandlerError;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Arguments(Map<String, Value>);

impl Arguments {
    pub fn new(map: Map<String, Value>) -> Self {
        Self(map)
    }

    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }

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
