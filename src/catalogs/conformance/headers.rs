//! Fixtures whose point is the tool's input schema rather than its output.
//!
//! - `test_x_mcp_header` (SEP-2243): its `region` argument is mirrored into the
//!   `Mcp-Param-Region` header. The runtime checks header against body before the tool runs;
//!   the suite uses the first tool in list order that annotates any property, and needs that
//!   property to be a string, so no earlier tool may carry `x-mcp-header`.
//! - `json_schema_2020_12_tool` (SEP-2106): its input schema uses 2020-12 keywords (`$defs`,
//!   `$anchor`, `$ref`, composition, conditionals) and must be listed exactly as written.

use std::sync::Arc;

use roundtrip_runtime::handler::{fn_tool, Tool, ToolDescriptor};
use roundtrip_runtime::protocol::content::Content;
use roundtrip_runtime::protocol::result::CallToolResult;
use serde_json::{json, Value};

pub(super) fn tools() -> Vec<Arc<dyn Tool>> {
    vec![
        fn_tool(
            ToolDescriptor::new(
                "test_x_mcp_header",
                "Echoes its region argument, which is mirrored into the Mcp-Param-Region header",
                json!({"type": "object", "properties": {"region": {
                    "type": "string",
                    "description": "Mirrored into the Mcp-Param-Region header",
                    "x-mcp-header": "Region"
                }}}),
            ),
            |_ctx, args| async move {
                let region = args.opt_str("region")?.unwrap_or("<none>");
                CallToolResult::text(format!("region={region}")).into()
            },
        ),
        fn_tool(
            ToolDescriptor::new(
                "json_schema_2020_12_tool",
                "Tool with JSON Schema 2020-12 features",
                json_schema_2020_12(),
            ),
            |_ctx, args| async move {
                let received = Value::Object(args.as_map().clone());
                CallToolResult::content(vec![
                    Content::text("Received arguments:"),
                    Content::json(&received),
                ])
                .into()
            },
        ),
    ]
}

/// A contact record: `name`, an `address` defined once under `$defs`, and a phone or an
/// email, whichever `contactMethod` names.
fn json_schema_2020_12() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}}
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"}
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": false
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use roundtrip_runtime::handler::HeaderKind;

    #[test]
    fn only_region_is_mirrored_and_it_is_a_string() {
        let tools = tools();
        let params: Vec<_> = tools
            .iter()
            .flat_map(|t| t.descriptor().header_params())
            .collect();
        assert_eq!(params.len(), 1);
        assert_eq!(
            (
                params[0].header.as_str(),
                params[0].property.as_str(),
                params[0].kind
            ),
            ("Region", "region", HeaderKind::String)
        );
    }

    #[test]
    fn the_2020_12_schema_is_listed_unmodified() {
        let listed = serde_json::to_value(tools()[1].descriptor()).expect("serialises");
        assert_eq!(listed["inputSchema"], json_schema_2020_12());
        assert_eq!(
            listed["inputSchema"]["$defs"]["address"]["$anchor"],
            "addressDef"
        );
    }
}
