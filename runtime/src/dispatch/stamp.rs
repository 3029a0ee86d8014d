//! `resultType` stamping and the result `_meta`. Pure.
//!
//! Every modern result carries `resultType`: `"complete"`, or `"input_required"` from the
//! three methods that may ask for input, and `_meta.serverInfo`. Legacy results carry
//! neither. Errors and notifications are never passed through here.
//!
//! This module stamps results built as JSON objects. The two typed results, a modern
//! `tools/call` result and an input-required result (`protocol::result`), are stamped by
//! construction: they carry `resultType` and `_meta.serverInfo` as fields.

use serde_json::{Map, Value};

use crate::protocol::meta::SERVER_INFO;
use crate::protocol::{Era, McpError, Method, ResultType};

/// The error (and the log line) for an input-required outcome from a method that may not
/// return one: a handler bug the client must not see as a result.
pub fn input_required_not_allowed(method: &str) -> McpError {
    tracing::error!(
        method,
        "handler returned input-required from a method that may not return it"
    );
    McpError::internal("Internal error: input-required is not allowed for this method")
}

/// Stamps a result for `era`. A result that claims `input_required` from a method that may
/// not return one, or any other value than `complete` (`task` among them: the tasks
/// extension is not served here), is refused: the runtime never lets it reach the client.
pub fn stamp(
    method: &Method,
    result: &mut Map<String, Value>,
    era: Era,
    server_info: &Value,
) -> Result<(), McpError> {
    let claimed = result
        .get("resultType")
        .and_then(Value::as_str)
        .map(ResultType::parse);
    if claimed == Some(ResultType::InputRequired) && !method.may_require_input() {
        return Err(input_required_not_allowed(method.as_str()));
    }
    let refused = match &claimed {
        Some(ResultType::Task) => Some("a task result needs the tasks extension, not served here"),
        Some(ResultType::Other(_)) => Some("unknown resultType"),
        _ => None,
    };
    if let Some(why) = refused {
        tracing::error!(
            method = method.as_str(),
            result_type = claimed.as_ref().map(ResultType::as_str),
            why,
            "handler returned a result the client may not get"
        );
        return Err(McpError::internal(format!("Internal error: {why}")));
    }
    if era == Era::Legacy {
        // The legacy wire has no `resultType`: not even one a handler wrote itself.
        result.remove("resultType");
        return Ok(());
    }
    if claimed.is_none() {
        result.insert(
            "resultType".into(),
            Value::String(ResultType::Complete.as_str().into()),
        );
    }
    let meta = result
        .entry("_meta")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(meta) = meta {
        meta.entry(SERVER_INFO)
            .or_insert_with(|| server_info.clone());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn stamped(method: &str, v: Value, era: Era) -> Result<Value, McpError> {
        let mut m = v.as_object().cloned().unwrap_or_default();
        stamp(
            &Method::from(method),
            &mut m,
            era,
            &json!({"name": "s", "version": "1"}),
        )?;
        Ok(Value::Object(m))
    }

    #[test]
    fn an_empty_modern_result_is_stamped_complete() {
        assert_eq!(
            stamped("x", json!({}), Era::Modern).expect("ok")["resultType"],
            "complete"
        );
    }

    #[test]
    fn a_task_result_is_refused_since_the_tasks_extension_is_not_served() {
        let e =
            stamped("tools/call", json!({"resultType": "task"}), Era::Modern).expect_err("refused");
        assert_eq!(e.code.code(), -32603);
    }

    #[test]
    fn an_unknown_result_type_is_refused() {
        let e =
            stamped("x/custom", json!({"resultType": "later"}), Era::Modern).expect_err("refused");
        assert_eq!(e.code.code(), -32603);
    }

    #[test]
    fn legacy_results_are_not_stamped() {
        let v = stamped("tools/list", json!({"tools": []}), Era::Legacy).expect("ok");
        assert!(v.get("resultType").is_none() && v.get("_meta").is_none());
    }

    #[test]
    fn a_result_type_a_handler_wrote_is_removed_from_a_legacy_result() {
        let v = stamped(
            "acme/custom",
            json!({"resultType": "complete", "ok": true}),
            Era::Legacy,
        )
        .expect("ok");
        assert_eq!(v, json!({"ok": true}));
    }

    #[test]
    fn input_required_from_a_list_method_is_an_internal_error() {
        let e = stamped(
            "tools/list",
            json!({"resultType": "input_required"}),
            Era::Modern,
        )
        .expect_err("refused");
        assert_eq!(e.code.code(), -32603);
    }

    #[test]
    fn server_info_goes_in_meta() {
        let v = stamped("tools/list", json!({"tools": []}), Era::Modern).expect("ok");
        assert_eq!(
            v["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
            "s"
        );
    }
}
