//! Results the client reads: the `resultType` discriminator, and the typed results of the
//! methods it calls.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::input::InputRequired;
use super::meta::SERVER_INFO;
use super::tools::Tool;
use super::Malformed;

/// What a result is, by its `resultType` (SEP-2322).
#[derive(Debug, Clone, PartialEq)]
pub enum Classified {
    /// `"complete"`, or no `resultType` at all: the method's result.
    Complete(Map<String, Value>),
    /// `"input_required"`: the server asks before it answers.
    InputRequired(InputRequired),
    /// A value this client does not recognise (`"task"` among them: the client never
    /// declares the tasks extension). The spec has clients treat it as invalid.
    Unknown(String),
}

impl Classified {
    /// Classifies a result object. A missing `resultType` means complete (a legacy server's
    /// results have none).
    pub fn of(result: Value) -> Result<Classified, Malformed> {
        let Value::Object(result) = result else {
            return Err(Malformed::new("a result", "not an object"));
        };
        match result.get("resultType") {
            None | Some(Value::Null) => Ok(Classified::Complete(result)),
            Some(Value::String(t)) if t == "complete" => Ok(Classified::Complete(result)),
            Some(Value::String(t)) if t == "input_required" => {
                Ok(Classified::InputRequired(InputRequired::parse(&result)?))
            }
            Some(Value::String(t)) => Ok(Classified::Unknown(t.clone())),
            Some(_) => Err(Malformed::new("resultType", "not a string")),
        }
    }
}

/// The raw outcome of one `tools/call`, `prompts/get` or `resources/read` round, for callers
/// who drive the retries themselves.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome<T> {
    /// The final result.
    Complete(T),
    /// The server asks for input; retry with the answers and the state.
    InputRequired(InputRequired),
}

/// The result of `tools/call`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// Content blocks (`{"type": "text", "text": ...}`, images, resources, ...).
    #[serde(default)]
    pub content: Vec<Value>,
    /// Structured output, if the tool has an output schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool failed; `content` says how.
    #[serde(default)]
    pub is_error: bool,
    /// Every other field (`_meta`, `resultType`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The text of every text block in `content`, one per line.
pub fn text_of(content: &[Value]) -> String {
    let texts: Vec<&str> = content
        .iter()
        .filter(|b| b["type"] == "text")
        .filter_map(|b| b["text"].as_str())
        .collect();
    texts.join("\n")
}

impl CallToolResult {
    /// The text of its text blocks, one per line.
    pub fn text(&self) -> String {
        text_of(&self.content)
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// `"user"` or `"assistant"`.
    pub role: String,
    /// One content block.
    pub content: Value,
}

/// The result of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
    /// Every other field.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// One resource's contents: text or a base64 blob.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The URI read.
    pub uri: String,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, base64.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
}

/// The result of `resources/read`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReadResourceResult {
    /// The contents.
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
    /// Every other field (caching hints, `_meta`, ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A prompt argument.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Must be given.
    #[serde(default)]
    pub required: bool,
}

/// A prompt, as `prompts/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Prompt {
    /// The name `prompts/get` takes.
    pub name: String,
    /// A title to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its arguments.
    #[serde(default)]
    pub arguments: Vec<PromptArgument>,
}

/// A resource, as `resources/list` describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Resource {
    /// The URI `resources/read` takes.
    pub uri: String,
    /// A name to show.
    pub name: String,
    /// What it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its media type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

/// One page of a list.
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The items of this page.
    pub items: Vec<T>,
    /// The cursor of the next page, if there is one.
    pub next_cursor: Option<String>,
}

impl<T: serde::de::DeserializeOwned> Page<T> {
    /// Reads the page's `key` array and `nextCursor`.
    pub fn parse(
        what: &'static str,
        key: &str,
        mut result: Map<String, Value>,
    ) -> Result<Self, Malformed> {
        let items = super::parse(what, result.remove(key).unwrap_or(Value::Array(Vec::new())))?;
        let next_cursor = match result.remove("nextCursor") {
            Some(Value::String(c)) => Some(c),
            _ => None,
        };
        Ok(Page { items, next_cursor })
    }
}

/// A page of `tools/list`.
pub type ToolPage = Page<Tool>;

/// The result of `server/discover`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// The modern versions the server speaks.
    #[serde(default)]
    pub supported_versions: Vec<String>,
    /// Its capabilities.
    #[serde(default)]
    pub capabilities: Value,
    /// Guidance for a model.
    #[serde(default)]
    pub instructions: Option<String>,
    /// `io.modelcontextprotocol/serverInfo` from the result's `_meta` (or a top-level
    /// `serverInfo`, which some servers still send).
    #[serde(skip)]
    pub server_info: Option<Value>,
}

impl DiscoverResult {
    /// Reads a discover result.
    pub fn parse(result: Map<String, Value>) -> Result<Self, Malformed> {
        let server_info = result
            .get("_meta")
            .and_then(|m| m.get(SERVER_INFO))
            .or_else(|| result.get("serverInfo"))
            .cloned();
        let mut discovered: DiscoverResult =
            super::parse("a server/discover result", Value::Object(result))?;
        discovered.server_info = server_info;
        Ok(discovered)
    }
}

/// The result of a legacy `initialize`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializeResult {
    /// The version the server chose.
    pub protocol_version: String,
    /// Its capabilities.
    #[serde(default)]
    pub capabilities: Value,
    /// Its name and version.
    #[serde(default)]
    pub server_info: Option<Value>,
    /// Guidance for a model.
    #[serde(default)]
    pub instructions: Option<String>,
}

/// The completion values `completion/complete` suggests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The suggestions.
    #[serde(default)]
    pub values: Vec<String>,
    /// How many there are in all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// More than these exist.
    #[serde(default)]
    pub has_more: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_missing_result_type_means_complete() {
        let c = Classified::of(json!({"content": []}));
        assert!(matches!(c, Ok(Classified::Complete(_))));
    }

    #[test]
    fn an_unknown_result_type_is_kept_as_it_is() {
        assert_eq!(
            Classified::of(json!({"resultType": "task"})),
            Ok(Classified::Unknown("task".into()))
        );
    }

    #[test]
    fn a_state_only_input_required_result_has_no_requests() {
        let Ok(Classified::InputRequired(ir)) =
            Classified::of(json!({"resultType": "input_required", "requestState": "s"}))
        else {
            panic!("input required")
        };
        assert!(ir.input_requests.is_empty());
        assert_eq!(ir.request_state.as_deref(), Some("s"));
    }

    #[test]
    fn discover_reads_server_info_from_meta_or_the_top_level() {
        let meta = DiscoverResult::parse(
            json!({"supportedVersions": ["2026-07-28"], "capabilities": {},
                "_meta": {SERVER_INFO: {"name": "a", "version": "1"}}})
            .as_object()
            .cloned()
            .unwrap_or_default(),
        )
        .expect("a discover result");
        assert_eq!(meta.server_info, Some(json!({"name": "a", "version": "1"})));
        let top = DiscoverResult::parse(
            json!({"supportedVersions": [], "serverInfo": {"name": "b", "version": "2"}})
                .as_object()
                .cloned()
                .unwrap_or_default(),
        )
        .expect("a discover result");
        assert_eq!(top.server_info, Some(json!({"name": "b", "version": "2"})));
    }
}
