//! Tools as `tools/list` describes them, and the `x-mcp-header` annotations of their input
//! schemas (SEP-2243): which arguments a `tools/call` mirrors into `Mcp-Param-{Name}`.
//!
//! A tool whose annotations break the spec's rules is invalid, and clients drop invalid
//! tools: [`Tool::header_params`] says why one is.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tool {
    /// The name `tools/call` takes.
    pub name: String,
    /// A title to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON schema of its arguments, as the server wrote it (never dereferenced).
    pub input_schema: Value,
    /// The schema of its structured output, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Hints (`readOnlyHint`, `destructiveHint`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Every other field the server sent (`icons`, `_meta`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One argument mirrored into a header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The top-level property of the arguments.
    pub property: String,
    /// The header is `Mcp-Param-{header}`.
    pub header: String,
}

/// Why a tool's `x-mcp-header` annotations make it invalid.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InvalidAnnotation {
    /// The annotation is not a string, or is empty.
    #[error("property {property:?}: x-mcp-header must be a non-empty string")]
    Empty {
        /// The property.
        property: String,
    },
    /// The name has a character an HTTP header name (an RFC 9110 token) may not have.
    #[error("property {property:?}: x-mcp-header {header:?} is not an HTTP token")]
    NotAToken {
        /// The property.
        property: String,
        /// The annotation.
        header: String,
    },
    /// Two properties name the same header (compared case-insensitively).
    #[error("x-mcp-header {header:?} names more than one property")]
    Duplicate {
        /// The annotation.
        header: String,
    },
    /// The property is not a string, integer or boolean.
    #[error("property {property:?}: x-mcp-header is only allowed on string, integer and boolean properties")]
    NotPrimitive {
        /// The property.
        property: String,
    },
}

/// RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// Is the property's `type` one an annotation may sit on (a type array may add `"null"`)?
fn is_header_type(schema: &Value) -> bool {
    let allowed = |t: &str| matches!(t, "string" | "integer" | "boolean");
    match schema.get("type") {
        Some(Value::String(t)) => allowed(t),
        Some(Value::Array(types)) => {
            let names: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            names.len() == types.len()
                && names.iter().any(|t| allowed(t))
                && names.iter().all(|t| allowed(t) || *t == "null")
        }
        _ => false,
    }
}

impl Tool {
    /// The arguments this tool mirrors into headers, or why its annotations make it invalid.
    /// Only the top-level `properties` can carry an annotation the spec honours; the server
    /// ignores any deeper one, and so does this.
    pub fn header_params(&self) -> Result<Vec<HeaderParam>, InvalidAnnotation> {
        let Some(properties) = self
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            return Ok(Vec::new());
        };
        let mut params: Vec<HeaderParam> = Vec::new();
        for (property, schema) in properties {
            let Some(annotation) = schema.get("x-mcp-header") else {
                continue;
            };
            let header = match annotation.as_str() {
                Some(h) if !h.is_empty() => h,
                _ => {
                    return Err(InvalidAnnotation::Empty {
                        property: property.clone(),
                    })
                }
            };
            if !header.chars().all(is_tchar) {
                return Err(InvalidAnnotation::NotAToken {
                    property: property.clone(),
                    header: header.to_owned(),
                });
            }
            if !is_header_type(schema) {
                return Err(InvalidAnnotation::NotPrimitive {
                    property: property.clone(),
                });
            }
            if params.iter().any(|p| p.header.eq_ignore_ascii_case(header)) {
                return Err(InvalidAnnotation::Duplicate {
                    header: header.to_owned(),
                });
            }
            params.push(HeaderParam {
                property: property.clone(),
                header: header.to_owned(),
            });
        }
        Ok(params)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tool(properties: Value) -> Tool {
        serde_json::from_value(
            json!({"name": "t", "inputSchema": {"type": "object", "properties": properties}}),
        )
        .expect("a tool")
    }

    #[test]
    fn annotated_primitives_are_mirrored() {
        let t = tool(json!({
            "region": {"type": "string", "x-mcp-header": "Region"},
            "count": {"type": "integer", "x-mcp-header": "Count"},
            "flag": {"type": ["boolean", "null"], "x-mcp-header": "Flag"},
            "query": {"type": "string"}
        }));
        let params = t.header_params().expect("valid");
        let headers: Vec<&str> = params.iter().map(|p| p.header.as_str()).collect();
        assert_eq!(headers, ["Count", "Flag", "Region"]);
    }

    #[test]
    fn each_broken_rule_invalidates_the_tool() {
        for (properties, why) in [
            (
                json!({"v": {"type": "string", "x-mcp-header": ""}}),
                "empty",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": 5}}),
                "not a string",
            ),
            (
                json!({"v": {"type": "object", "x-mcp-header": "Data"}}),
                "object",
            ),
            (
                json!({"v": {"type": "array", "x-mcp-header": "Items"}}),
                "array",
            ),
            (
                json!({"v": {"type": "null", "x-mcp-header": "Nil"}}),
                "null",
            ),
            (
                json!({"v": {"type": "number", "x-mcp-header": "Ratio"}}),
                "number",
            ),
            (
                json!({"a": {"type": "string", "x-mcp-header": "Region"}, "b": {"type": "string", "x-mcp-header": "Region"}}),
                "duplicate",
            ),
            (
                json!({"a": {"type": "string", "x-mcp-header": "MyField"}, "b": {"type": "string", "x-mcp-header": "myfield"}}),
                "duplicate, other case",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "My Region"}}),
                "space",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Region:Primary"}}),
                "colon",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Région"}}),
                "non-ASCII",
            ),
            (
                json!({"v": {"type": "string", "x-mcp-header": "Region\t1"}}),
                "control character",
            ),
        ] {
            assert!(tool(properties).header_params().is_err(), "{why}");
        }
    }

    #[test]
    fn fields_the_client_does_not_model_are_kept() {
        let t: Tool = serde_json::from_value(
            json!({"name": "t", "inputSchema": {"type": "object"}, "icons": [{"src": "x"}]}),
        )
        .expect("a tool");
        assert_eq!(t.extra["icons"], json!([{"src": "x"}]));
    }
}
