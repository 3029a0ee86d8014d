//! `resultType` stamping and the result `_meta`, for modern results only. Pure.
//!
//! Every modern result carries `resultType`: `"complete"` unless it already says otherwise
//! (`"input_required"`, or an extension value such as `"task"`). Legacy results are left as
//! the handler made them. Errors and notifications are never passed through here.

use serde_json::{Map, Value};

use crate::protocol::meta::SERVER_INFO;
use crate::protocol::{Era, McpError, ResultType};

/// Methods that may answer input-required (SEP-2322).
pub fn may_require_input(method: &str) -> bool {
    matches!(method, "tools/call" | "prompts/get" | "resources/read")
}

/// Stamps a result for `era`. A result that claims `input_required` from a method that may
/// not return one is refused: the runtime never lets it reach the client.
pub fn stamp(
    method: &str,
    result: &mut Map<String, Value>,
    era: Era,
    server_info: &Value,
) -> Result<(), McpError> {
    let declared = result
        .get("resultType")
        .and_then(Value::as_str)
        .map(ResultType::parse);
    if declared == Some(ResultType::InputRequired) && !may_require_input(method) {
        tracing::error!(
            method,
            "handler returned an input-required result from a method that may not return one"
        );
        return Err(McpError::internal(
            "Internal error: input-required is not allowed for this method",
        ));
    }
    if era == Era::Legacy {
        return Ok(());
    }
    if declared.is_none() {
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
        stamp(method, &mut m, era, &json!({"name": "s", "version": "1"}))?;
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
    fn an_existing_task_result_type_is_kept() {
        assert_eq!(
            stamped("tools/call", json!({"resultType": "task"}), Era::Modern).expect("ok")
                ["resultType"],
            "task"
        );
    }

    #[test]
    fn legacy_results_are_not_stamped() {
        let v = stamped("tools/list", json!({"tools": []}), Era::Legacy).expect("ok");
        assert!(v.get("resultType").is_none() && v.get("_meta").is_none());
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
