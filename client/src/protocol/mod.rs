//! MCP's wire types as a client reads and writes them, in both eras.
//!
//! The bottom layer of the crate: it imports nothing from the rest of it. Results are parsed
//! into typed views, but anything the spec leaves open (schemas, content blocks, capability
//! objects, `_meta`) stays `serde_json::Value`, so a field the server sent is never dropped.
//! Roundtrip's server crate has its own protocol module; it is shaped for writing results
//! (serialise-only, `'static` method names), this one for reading them.

pub mod headers;
pub mod input;
pub mod jsonrpc;
pub mod meta;
pub mod results;
pub mod tools;
pub mod version;

/// A message from the server that does not have the shape the spec gives it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {detail}")]
pub struct Malformed {
    /// Which part of the message (`"a tools/call result"`, `"inputRequests"`, ...).
    pub what: &'static str,
    /// What was wrong with it.
    pub detail: String,
}

impl Malformed {
    pub(crate) fn new(what: &'static str, detail: impl std::fmt::Display) -> Self {
        Self {
            what,
            detail: detail.to_string(),
        }
    }
}

/// Parses `value` as `T`, naming `what` on failure.
pub(crate) fn parse<T: serde::de::DeserializeOwned>(
    what: &'static str,
    value: serde_json::Value,
) -> Result<T, Malformed> {
    serde_json::from_value(value).map_err(|e| Malformed::new(what, e))
}
