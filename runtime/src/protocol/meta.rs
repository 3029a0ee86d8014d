//! The per-request `_meta` envelope of modern MCP (`io.modelcontextprotocol/*` keys).
//!
//! Parsing only: whether the envelope is required, and what a missing one means for the era,
//! is the dispatcher's decision.

use std::borrow::Cow;

use serde_json::{Map, Value};

use super::capabilities::ClientCapabilities;
use super::error::McpError;
use super::version::ProtocolVersion;

/// The protocol version a modern request speaks; its presence is what makes a request modern.
pub const PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// The capabilities a modern request declares (required, an object).
pub const CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// [`CLIENT_CAPABILITIES`] as an error names it.
const CAPABILITIES_FIELD: &str = "_meta[\"io.modelcontextprotocol/clientCapabilities\"]";
/// The client's `{name, version}`, optional.
pub const CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// The least severe log level the request wants notifications for; absent, none are sent.
pub const LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// The server's `serverInfo`, in the `_meta` of every modern result.
pub const SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// The id a `subscriptions/listen` request chose, in the `_meta` of every event on its stream.
pub const SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";
/// The token progress notifications for the request carry (a string or a number); on both eras.
pub const PROGRESS_TOKEN: &str = "progressToken";

/// Syslog severities, in increasing order, as MCP logging uses them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`: detail for debugging.
    Debug,
    /// `info`: routine progress.
    Info,
    /// `notice`: normal but significant.
    Notice,
    /// `warning`: something may be wrong.
    Warning,
    /// `error`: an operation failed.
    Error,
    /// `critical`: a component failed.
    Critical,
    /// `alert`: action is needed at once.
    Alert,
    /// `emergency`: the system is unusable.
    Emergency,
}

impl LogLevel {
    /// The level named `s` (its wire name, lower case); `None` for any other text.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "debug" => Self::Debug,
            "info" => Self::Info,
            "notice" => Self::Notice,
            "warning" => Self::Warning,
            "error" => Self::Error,
            "critical" => Self::Critical,
            "alert" => Self::Alert,
            "emergency" => Self::Emergency,
            _ => return None,
        })
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Debug => "debug",
            Self::Info => "info",
            Self::Notice => "notice",
            Self::Warning => "warning",
            Self::Error => "error",
            Self::Critical => "critical",
            Self::Alert => "alert",
            Self::Emergency => "emergency",
        }
    }
}

/// What a modern request says about itself in `params._meta`.
#[derive(Debug, Clone)]
pub struct RequestMeta {
    /// The version string as sent; the envelope check decides whether it is served. A
    /// version known here is its static wire string.
    pub protocol_version: Cow<'static, str>,
    /// What the request declared it can do: the gate checks input requests against it.
    pub client_capabilities: ClientCapabilities,
    /// The client's `{name, version}`, as sent; nothing acts on it.
    pub client_info: Option<Value>,
    /// Log notifications at this level or more severe go on the request's stream; `None`,
    /// none do.
    pub log_level: Option<LogLevel>,
    /// A string or a number: progress notifications carry it; `None`, none are sent.
    pub progress_token: Option<Value>,
}

/// Whether these params' `_meta` names a protocol version as JSON. A parsed request's known
/// version is read aside instead: whether a request is modern is [`Request::is_modern`].
///
/// [`Request::is_modern`]: super::Request::is_modern
pub(crate) fn has_modern_envelope(params: Option<&Map<String, Value>>) -> bool {
    params
        .and_then(|p| p.get("_meta"))
        .and_then(Value::as_object)
        .is_some_and(declares_version)
}

/// Whether a `_meta` object names a protocol version as JSON (see [`has_modern_envelope`]).
pub(crate) fn declares_version(meta: &Map<String, Value>) -> bool {
    meta.contains_key(PROTOCOL_VERSION)
}

/// The progress token of a legacy request (`params._meta.progressToken`), if well-formed.
pub fn legacy_progress_token(params: Option<&Map<String, Value>>) -> Option<Value> {
    match params?.get("_meta")?.get(PROGRESS_TOKEN)? {
        t @ (Value::String(_) | Value::Number(_)) => Some(t.clone()),
        _ => None,
    }
}

impl RequestMeta {
    /// Reads the envelope. `Ok(None)` when there is no `_meta` protocol version at all (the
    /// caller decides whether that is a legacy request or a malformed modern one).
    ///
    /// The declared capabilities are `read_aside` when the parse read them so (see
    /// [`Request::meta_capabilities`]; the parse never leaves them in both places, and
    /// `_meta`'s would win), otherwise they are moved out of `_meta`, not copied:
    /// a client that declares many would otherwise have them copied on every request. The
    /// handler reads them from its context; the rest of `_meta` stays where it was.
    /// Likewise the version is `version_aside` when the parse read it so (a version known
    /// here, see [`Request::meta_version`]), and is otherwise read from `_meta`.
    ///
    /// [`Request::meta_capabilities`]: super::Request::meta_capabilities
    /// [`Request::meta_version`]: super::Request::meta_version
    pub fn from_params(
        params: Option<&mut Map<String, Value>>,
        read_aside: Option<ClientCapabilities>,
        version_aside: Option<ProtocolVersion>,
    ) -> Result<Option<RequestMeta>, McpError> {
        let Some(meta) = params.and_then(|p| p.get_mut("_meta")) else {
            return Ok(None);
        };
        let Value::Object(meta) = meta else {
            return Err(McpError::invalid_params("params._meta must be an object"));
        };
        // Read aside, the version is not in `_meta` too (the parse refuses it twice).
        let version = match version_aside {
            Some(version) => Cow::Borrowed(version.as_str()),
            None => match meta.get(PROTOCOL_VERSION) {
                None => return Ok(None),
                Some(Value::String(version)) => Cow::Owned(version.clone()),
                Some(_) => {
                    return Err(McpError::invalid_params(format!(
                        "_meta[\"{PROTOCOL_VERSION}\"] must be a string"
                    )))
                }
            },
        };
        let client_capabilities = match (meta.remove(CLIENT_CAPABILITIES), read_aside) {
            (Some(Value::Object(caps)), _) => {
                ClientCapabilities::declared(caps, CAPABILITIES_FIELD)?
            }
            (None, Some(caps)) => caps,
            (Some(_), _) => {
                return Err(McpError::invalid_params(format!(
                    "_meta[\"{CLIENT_CAPABILITIES}\"] must be an object"
                )))
            }
            (None, None) => {
                return Err(McpError::invalid_params(format!(
                    "Missing required _meta[\"{CLIENT_CAPABILITIES}\"]"
                )))
            }
        };
        let log_level = match meta.get(LOG_LEVEL) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(
                LogLevel::parse(s)
                    .ok_or_else(|| McpError::invalid_params(format!("Unknown log level: {s}")))?,
            ),
            Some(_) => {
                return Err(McpError::invalid_params(format!(
                    "_meta[\"{LOG_LEVEL}\"] must be a string"
                )))
            }
        };
        let progress_token = match meta.get(PROGRESS_TOKEN) {
            None | Some(Value::Null) => None,
            Some(t @ (Value::String(_) | Value::Number(_))) => Some(t.clone()),
            Some(_) => {
                return Err(McpError::invalid_params(
                    "progressToken must be a string or a number",
                ))
            }
        };
        Ok(Some(RequestMeta {
            protocol_version: version,
            client_capabilities,
            client_info: meta.get(CLIENT_INFO).cloned(),
            log_level,
            progress_token,
        }))
    }

    /// The envelope is required on modern requests: absent `_meta`, or one without a version,
    /// is malformed.
    pub fn require(
        mut params: Option<&mut Map<String, Value>>,
        read_aside: Option<ClientCapabilities>,
        version_aside: Option<ProtocolVersion>,
    ) -> Result<RequestMeta, McpError> {
        match Self::from_params(params.as_deref_mut(), read_aside, version_aside)? {
            Some(meta) => Ok(meta),
            None if params.and_then(|p| p.get("_meta")).is_none() => {
                Err(McpError::invalid_params("Missing required params._meta"))
            }
            None => Err(McpError::invalid_params(format!(
                "Missing required _meta[\"{PROTOCOL_VERSION}\"]"
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("object")
    }

    #[test]
    fn missing_client_capabilities_is_invalid_params() {
        let mut p = params(json!({"_meta": {PROTOCOL_VERSION: "2026-07-28"}}));
        assert_eq!(
            RequestMeta::require(Some(&mut p), None, None)
                .expect_err("invalid")
                .code
                .code(),
            -32602
        );
    }

    #[test]
    fn capabilities_read_aside_are_the_envelopes() {
        let mut p = params(json!({"_meta": {PROTOCOL_VERSION: "2026-07-28"}}));
        let aside = ClientCapabilities::new(params(json!({"roots": {}})));
        let meta = RequestMeta::require(Some(&mut p), Some(aside.clone()), None).expect("valid");
        assert_eq!(meta.client_capabilities, aside);
    }

    #[test]
    fn a_version_read_aside_is_the_envelopes() {
        let mut p = params(json!({"_meta": {CLIENT_CAPABILITIES: {}}}));
        let meta = RequestMeta::require(Some(&mut p), None, Some(ProtocolVersion::V2026_07_28))
            .expect("valid");
        assert_eq!(meta.protocol_version, "2026-07-28");
    }

    #[test]
    fn missing_meta_is_invalid_params() {
        assert_eq!(
            RequestMeta::require(None, None, None)
                .expect_err("invalid")
                .code
                .code(),
            -32602
        );
    }

    #[test]
    fn missing_client_info_is_accepted() {
        let mut p =
            params(json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}}}));
        let meta = RequestMeta::require(Some(&mut p), None, None).expect("valid");
        assert!(meta.client_info.is_none());
    }

    #[test]
    fn an_unknown_log_level_is_invalid_params() {
        let mut p = params(
            json!({"_meta": {PROTOCOL_VERSION: "2026-07-28", CLIENT_CAPABILITIES: {}, LOG_LEVEL: "loud"}}),
        );
        assert_eq!(
            RequestMeta::require(Some(&mut p), None, None)
                .expect_err("invalid")
                .code
                .code(),
            -32602
        );
    }

    #[test]
    fn log_levels_are_ordered_by_severity() {
        assert!(LogLevel::Debug < LogLevel::Info && LogLevel::Warning < LogLevel::Emergency);
    }
}
