//! The protocol's names the harness and the tests share: the version the tests speak, the
//! `_meta` keys, and the fixed error every unusable `requestState` gets. They sit apart so that
//! `requests` (which builds with them) and `wire_checks` (which checks them) both import them
//! without importing each other.

use serde_json::{json, Value};

pub(crate) const VERSION: &str = "2026-07-28";

pub(crate) const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
pub(crate) const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
pub(crate) const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
pub(crate) const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
pub(crate) const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
pub(crate) const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The fixed error every unusable `requestState` gets.
pub(crate) fn invalid_state_error() -> Value {
    json!({"code": -32602, "message": "Invalid or expired requestState"})
}
