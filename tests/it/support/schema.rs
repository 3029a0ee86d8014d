//! Wire checks against the committed MCP JSON schemas (`tests/schema/<revision>/schema.json`,
//! copies of `shared/spec`, so a clean clone is self-contained).
//!
//! A definition is checked by compiling `{"$ref": "#/$defs/<Name>", "$defs": …}` once per name;
//! the compiled validators are kept for the whole test binary. `self_check` at the end shows the
//! check rejects what the spec forbids.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

/// A protocol revision whose schema is committed under `tests/schema/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Revision {
    V2026_07_28,
    V2025_11_25,
}

impl Revision {
    fn path(self) -> &'static str {
        match self {
            Revision::V2026_07_28 => "tests/schema/2026-07-28/schema.json",
            Revision::V2025_11_25 => "tests/schema/2025-11-25/schema.json",
        }
    }
}

fn document(revision: Revision) -> &'static Value {
    static DOCS: OnceLock<Mutex<HashMap<Revision, &'static Value>>> = OnceLock::new();
    let mut docs = DOCS
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    docs.entry(revision).or_insert_with(|| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(revision.path());
        let text = std::fs::read_to_string(&path)
            .unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let doc: Value = serde_json::from_str(&text).expect("the committed schema is JSON");
        Box::leak(Box::new(doc))
    })
}

fn validator(revision: Revision, def: &str) -> Arc<jsonschema::Validator> {
    type Cache = HashMap<(Revision, String), Arc<jsonschema::Validator>>;
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    if let Some(v) = cache.get(&(revision, def.to_owned())) {
        return v.clone();
    }
    let doc = document(revision);
    assert!(
        doc["$defs"].get(def).is_some(),
        "the {revision:?} schema has no $defs/{def}"
    );
    let schema = json!({
        "$schema": doc["$schema"],
        "$ref": format!("#/$defs/{def}"),
        "$defs": doc["$defs"],
    });
    let compiled = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .unwrap_or_else(|e| panic!("compiling {revision:?} $defs/{def}: {e}"));
    let compiled = Arc::new(compiled);
    cache.insert((revision, def.to_owned()), compiled.clone());
    compiled
}

/// Panics, listing every violation, unless `value` is a valid `$defs/<def>` of `revision`.
pub(crate) fn assert_valid_in(revision: Revision, def: &str, value: &Value) {
    let errors: Vec<String> = validator(revision, def)
        .iter_errors(value)
        .map(|e| format!("  {e} (at '{}')", e.instance_path))
        .collect();
    assert!(
        errors.is_empty(),
        "not a valid {revision:?} {def}:\n{}\nmessage: {value}",
        errors.join("\n")
    );
}

/// Panics, listing every violation, unless `value` is a valid 2026-07-28 `$defs/<def>`.
pub(crate) fn assert_valid(def: &str, value: &Value) {
    assert_valid_in(Revision::V2026_07_28, def, value);
}

/// The response definition for a successful reply to `method`, when the schema has one.
pub(crate) fn result_response_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "server/discover" => "DiscoverResultResponse",
        "tools/list" => "ListToolsResultResponse",
        "tools/call" => "CallToolResultResponse",
        "prompts/list" => "ListPromptsResultResponse",
        "prompts/get" => "GetPromptResultResponse",
        "resources/list" => "ListResourcesResultResponse",
        "resources/templates/list" => "ListResourceTemplatesResultResponse",
        "resources/read" => "ReadResourceResultResponse",
        "completion/complete" => "CompleteResultResponse",
        "subscriptions/listen" => "SubscriptionsListenResultResponse",
        _ => return None,
    })
}

/// The notification definition for `method`, when the schema has one.
pub(crate) fn notification_def(method: &str) -> Option<&'static str> {
    Some(match method {
        "notifications/progress" => "ProgressNotification",
        "notifications/message" => "LoggingMessageNotification",
        "notifications/subscriptions/acknowledged" => "SubscriptionsAcknowledgedNotification",
        "notifications/tools/list_changed" => "ToolListChangedNotification",
        "notifications/prompts/list_changed" => "PromptListChangedNotification",
        "notifications/resources/list_changed" => "ResourceListChangedNotification",
        "notifications/resources/updated" => "ResourceUpdatedNotification",
        _ => return None,
    })
}

/// What an error response with `code` must also satisfy: a whole-message definition (`true`)
/// or one for the `error` object alone (`false`).
pub(crate) fn error_def(code: i64) -> Option<(&'static str, bool)> {
    Some(match code {
        -32020 => ("HeaderMismatchError", true),
        -32021 => ("MissingRequiredClientCapabilityError", true),
        -32022 => ("UnsupportedProtocolVersionError", true),
        -32700 => ("ParseError", false),
        -32600 => ("InvalidRequestError", false),
        -32601 => ("MethodNotFoundError", false),
        -32602 => ("InvalidParamsError", false),
        -32603 => ("InternalError", false),
        _ => return None,
    })
}

/// The checks themselves: a schema check that accepted everything would make every test pass.
#[cfg(test)]
mod self_check {
    use serde_json::json;

    use super::assert_valid;

    fn rejects(def: &str, value: serde_json::Value) {
        let outcome = std::panic::catch_unwind(|| assert_valid(def, &value));
        assert!(outcome.is_err(), "{def} accepted {value}");
    }

    #[test]
    fn the_schema_check_accepts_well_formed_messages() {
        assert_valid(
            "JSONRPCResultResponse",
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"resultType": "complete"}}),
        );
        assert_valid(
            "HeaderMismatchError",
            &json!({"jsonrpc": "2.0", "id": "a", "error": {"code": -32020, "message": "m"}}),
        );
        assert_valid(
            "JSONRPCErrorResponse",
            &json!({"jsonrpc": "2.0", "error": {"code": -32700, "message": "m"}}),
        );
    }

    #[test]
    fn the_schema_check_rejects_what_the_spec_forbids() {
        rejects(
            "JSONRPCResultResponse",
            json!({"jsonrpc": "2.0", "id": 1, "result": {}}),
        );
        rejects(
            "JSONRPCErrorResponse",
            json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "m"}}),
        );
        rejects(
            "JSONRPCResponse",
            json!({"jsonrpc": "2.0", "id": 1.5, "result": {"resultType": "complete"}}),
        );
        rejects(
            "HeaderMismatchError",
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "m"}}),
        );
        rejects(
            "MissingRequiredClientCapabilityError",
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "m"}}),
        );
        rejects(
            "DiscoverResult",
            json!({"resultType": "complete", "supportedVersions": [], "capabilities": {}, "ttlMs": 1, "cacheScope": "shared"}),
        );
        rejects("InputRequest", json!({"method": "ping", "params": {}}));
    }
}
