//! How tools, prompts and resources describe themselves in list results.

use serde::Serialize;
use serde_json::Value;

/// A tool as `tools/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolDescriptor {
    /// What `tools/call` names the tool by; unique in a catalog (a later duplicate is dropped).
    pub name: String,
    /// A human-readable name for display; clients fall back to `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does, for the model that chooses it.
    pub description: String,
    /// JSON Schema of the `arguments` object; top-level properties with `x-mcp-header` are
    /// mirrored into headers ([`ToolDescriptor::header_params`]).
    pub input_schema: Value,
    /// JSON Schema of the result's `structuredContent`, when the tool returns it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `ToolAnnotations` (`readOnlyHint`, `destructiveHint`, ...): hints a client must not
    /// trust from an untrusted server.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Each sealed `requestState` may complete a call of this tool once: a replay of a round
    /// that completed is refused ([`ToolDescriptor::single_use_state`]). Not listed.
    #[serde(skip)]
    pub single_use_state: bool,
}

impl ToolDescriptor {
    /// A tool with no title, output schema or annotations.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        input_schema: Value,
    ) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            input_schema,
            output_schema: None,
            annotations: None,
            single_use_state: false,
        }
    }

    /// A tool without arguments.
    pub fn no_args(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(
            name,
            description,
            serde_json::json!({ "type": "object", "properties": {} }),
        )
    }

    /// Sets the display title.
    pub fn with_title(mut self, title: impl Into<String>) -> Self {
        self.title = Some(title.into());
        self
    }

    /// Sets the `ToolAnnotations` object.
    pub fn with_annotations(mut self, annotations: Value) -> Self {
        self.annotations = Some(annotations);
        self
    }

    /// Single-use states: a sealed `requestState` that already completed a call of this tool
    /// is refused (-32602) instead of running the handler again. Without it, a state opens as
    /// often as it is presented until it expires, so the last round of a flow can be sent
    /// again and act again: what a destructive tool (a delete, a payment) must not allow.
    /// Costs one entry in the runtime's bounded replay record per completed flow; applies
    /// only when states are sealed (a pass-through state is the client's to write anyway).
    pub fn single_use_state(mut self) -> Self {
        self.single_use_state = true;
        self
    }

    /// Arguments mirrored into `Mcp-Param-{Name}` headers (SEP-2243): top-level properties
    /// carrying `x-mcp-header`. Computed once when the catalog is built. An annotation the spec
    /// does not allow (not an HTTP token, a `number` or composite type, a name used twice
    /// ignoring case) is left out with a warning: clients drop tools whose annotations are
    /// invalid, and the runtime must not demand a header no client will send.
    pub fn header_params(&self) -> Vec<HeaderParam> {
        let Some(props) = self
            .input_schema
            .get("properties")
            .and_then(Value::as_object)
        else {
            return Vec::new();
        };
        let mut params: Vec<HeaderParam> = Vec::new();
        for (property, schema) in props {
            let Some(header) = schema.get("x-mcp-header") else {
                continue;
            };
            let kind = match schema.get("type").and_then(Value::as_str) {
                Some("string") => Some(HeaderKind::String),
                Some("integer") => Some(HeaderKind::Integer),
                Some("boolean") => Some(HeaderKind::Boolean),
                _ => None,
            };
            let valid_name = header.as_str().filter(|h| is_token(h));
            match (valid_name, kind) {
                (Some(h), Some(kind))
                    if !params.iter().any(|p| p.header.eq_ignore_ascii_case(h)) =>
                {
                    params.push(HeaderParam {
                        header: h.to_owned(),
                        property: property.clone(),
                        kind,
                    });
                }
                _ => tracing::warn!(
                    tool = self.name,
                    property,
                    "ignoring an invalid x-mcp-header annotation"
                ),
            }
        }
        params
    }
}

/// An RFC 9110 token: what a header name may be made of.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

/// One argument mirrored into an HTTP header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// `{Name}` of `Mcp-Param-{Name}`.
    pub header: String,
    /// The top-level argument whose value the header carries.
    pub property: String,
    /// The argument's JSON type, which decides how header and body values are compared.
    pub kind: HeaderKind,
}

/// The JSON types an `x-mcp-header` argument may have (SEP-2243: no `number`, nothing
/// composite).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HeaderKind {
    /// `"type": "string"`: header and argument are compared as text, after base64
    /// unwrapping.
    String,
    /// `"type": "integer"`: compared as numbers, so `042` matches 42.
    Integer,
    /// `"type": "boolean"`: the header must be `true` or `false`.
    Boolean,
}

/// A prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptArgument {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub required: bool,
}

/// A prompt as `prompts/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptDescriptor {
    /// What `prompts/get` names the prompt by; unique in a catalog.
    pub name: String,
    /// A human-readable name for display; clients fall back to `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the prompt is for.
    pub description: String,
    /// The arguments it takes; a `prompts/get` missing a required one is -32602 before the
    /// handler runs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
}

impl PromptDescriptor {
    /// A prompt with no title and no arguments.
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            title: None,
            description: description.into(),
            arguments: Vec::new(),
        }
    }

    /// Adds an argument, `required` or optional.
    pub fn argument(
        mut self,
        name: impl Into<String>,
        description: impl Into<String>,
        required: bool,
    ) -> Self {
        self.arguments.push(PromptArgument {
            name: name.into(),
            description: Some(description.into()),
            required,
        });
        self
    }

    /// The names of the arguments a `prompts/get` must send.
    pub(crate) fn required_arguments(&self) -> impl Iterator<Item = &str> {
        self.arguments
            .iter()
            .filter(|a| a.required)
            .map(|a| a.name.as_str())
    }
}

/// A concrete resource as `resources/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceDescriptor {
    /// What `resources/read` names the resource by; unique in a catalog.
    pub uri: String,
    /// A short name for the resource.
    pub name: String,
    /// A human-readable name for display; clients fall back to `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resource holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of its contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl ResourceDescriptor {
    /// A resource with a MIME type and no title or description.
    pub fn new(
        uri: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
    ) -> Self {
        Self {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: Some(mime_type.into()),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

/// A resource template as `resources/templates/list` shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TemplateDescriptor {
    /// The RFC 6570 level-1 pattern (`x://items/{id}`) of the URIs it serves; unique in a
    /// catalog. Each `{var}` matches one non-empty path segment.
    pub uri_template: String,
    /// A short name for the family of resources.
    pub name: String,
    /// A human-readable name for display; clients fall back to `name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the resources hold.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every matching resource's contents.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl TemplateDescriptor {
    /// A template with a MIME type and no title or description.
    pub fn new(
        uri_template: impl Into<String>,
        name: impl Into<String>,
        mime_type: impl Into<String>,
    ) -> Self {
        Self {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: Some(mime_type.into()),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn invalid_x_mcp_header_annotations_are_left_out() {
        let t = ToolDescriptor::new(
            "t",
            "d",
            json!({"type": "object", "properties": {
                "ratio": {"type": "number", "x-mcp-header": "Ratio"},
                "spaced": {"type": "string", "x-mcp-header": "Bad Name"},
                "a": {"type": "string", "x-mcp-header": "Dup"},
                "b": {"type": "string", "x-mcp-header": "dup"},
                "obj": {"type": "object", "x-mcp-header": "Obj"}
            }}),
        );
        let params = t.header_params();
        assert_eq!(params.len(), 1, "{params:?}");
        assert_eq!(params[0].property, "a");
    }

    #[test]
    fn header_params_come_from_top_level_x_mcp_header_properties() {
        let t = ToolDescriptor::new(
            "t",
            "d",
            json!({"type": "object", "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "count": {"type": "integer", "x-mcp-header": "Count"},
                "plain": {"type": "string"}
            }}),
        );
        let mut params = t.header_params();
        params.sort_by(|a, b| a.header.cmp(&b.header));
        assert_eq!(params.len(), 2);
        assert_eq!(params[0].kind, HeaderKind::Integer);
        assert_eq!(params[1].property, "region");
    }
}
