//! `resultType` and the result shapes handlers produce.

use std::sync::Arc;

use serde::ser::SerializeStruct;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::content::Content;
pub use super::content::ResourceContents;
use super::input::InputRequests;
use super::jsonrpc::{
    append_result_member, needs_no_escape, result_bytes_sized, RequestId, RESULT_CAPACITY,
};
use super::meta::SERVER_INFO;

/// The discriminator every modern result carries. Open: extensions add values, and a value
/// we do not know is kept as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ResultType {
    /// `complete`: the final result.
    Complete,
    /// `input_required`: the client must answer the embedded requests and retry (SEP-2322).
    InputRequired,
    /// `task`: the tasks extension's, which is not served here (a handler's is refused).
    Task,
    /// Any other value, kept as it was.
    Other(String),
}

impl ResultType {
    /// The wire value.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Task => "task",
            Self::Other(s) => s,
        }
    }

    /// The type whose wire value is `s`; never fails (an unknown value is `Other`).
    pub fn parse(s: &str) -> Self {
        match s {
            "complete" => Self::Complete,
            "input_required" => Self::InputRequired,
            "task" => Self::Task,
            other => Self::Other(other.to_owned()),
        }
    }
}

impl Serialize for ResultType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ResultType {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Self::parse(&String::deserialize(d)?))
    }
}

/// An input-required result (SEP-2322), stamped: `resultType`, the input requests, the
/// sealed state and the server's `_meta`. Typed rather than a JSON object so it goes
/// straight to bytes, each input request as it was serialised when built.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct InputRequiredResult {
    result_type: ResultType,
    input_requests: InputRequests,
    request_state: Option<String>,
    meta: ServerMeta,
}

/// Its head, then `requestState` unless there is none, then `_meta`.
impl Serialize for InputRequiredResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("InputRequiredResult", 4)?;
        self.serialize_head(&mut out)?;
        match &self.request_state {
            Some(state) => out.serialize_field("requestState", state)?,
            None => out.skip_field("requestState")?,
        }
        out.serialize_field("_meta", &self.meta)?;
        out.end()
    }
}

/// An input-required result's head alone: what a response writes through serde_json before
/// it copies the state and `_meta` in ([`InputRequiredResult::response_bytes`]).
struct Head<'a>(&'a InputRequiredResult);

impl Serialize for Head<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut out = serializer.serialize_struct("InputRequiredResult", 2)?;
        self.0.serialize_head(&mut out)?;
        out.end()
    }
}

/// A modern `tools/call` result, stamped `complete` and naming the server. Typed, like
/// [`InputRequiredResult`], because it is the most frequent result on the wire: it goes to
/// bytes without a JSON tree in between.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct StampedToolResult {
    result: CallToolResult,
    meta: ServerMeta,
}

impl StampedToolResult {
    /// `result` stamped `complete`, with the server's `_meta`.
    pub(crate) fn new(result: CallToolResult, meta: ServerMeta) -> Self {
        Self { result, meta }
    }
}

/// The result's fields, then `resultType` and `_meta`: written field by field rather than
/// with `#[serde(flatten)]`, whose map-building serialiser cost about a thousand instructions
/// a result. `a_stamped_tool_result_writes_every_field_of_the_result` keeps the list whole.
impl Serialize for StampedToolResult {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let CallToolResult {
            content,
            structured_content,
            is_error,
        } = &self.result;
        let mut out = serializer.serialize_struct("StampedToolResult", 5)?;
        out.serialize_field("content", content)?;
        match structured_content {
            Some(structured) => out.serialize_field("structuredContent", structured)?,
            None => out.skip_field("structuredContent")?,
        }
        out.serialize_field("isError", is_error)?;
        out.serialize_field("resultType", &ResultType::Complete)?;
        out.serialize_field("_meta", &self.meta)?;
        out.end()
    }
}

/// A result ready to write, stamped for its era.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub(crate) enum StampedResult {
    /// Built as a JSON object: lists, discovery, prompts, resources, custom methods, and
    /// every legacy result.
    Object(Map<String, Value>),
    /// A modern `tools/call` result that completed.
    Tool(StampedToolResult),
    /// A modern input-required result.
    InputRequired(InputRequiredResult),
}

impl StampedResult {
    /// Its JSON-RPC response to `id`.
    pub(crate) fn response_bytes(&self, id: &RequestId) -> Vec<u8> {
        let capacity = self.response_size_hint();
        match self {
            Self::InputRequired(r) => r.response_bytes(capacity, id),
            Self::Object(_) | Self::Tool(_) => result_bytes_sized(capacity, id, self),
        }
    }

    /// About how many bytes its JSON-RPC response takes, for the buffer it is written into:
    /// an input-required result (its requests, its state) outgrew the usual
    /// [`RESULT_CAPACITY`], and every round that asked for input had its response reallocated
    /// and copied.
    fn response_size_hint(&self) -> usize {
        match self {
            Self::InputRequired(r) => RESULT_CAPACITY + r.beyond_usual(),
            Self::Object(_) | Self::Tool(_) => RESULT_CAPACITY,
        }
    }

    /// The `resultType` the result carries (`complete` for an object without one).
    pub(crate) fn result_type(&self) -> ResultType {
        match self {
            Self::Object(r) => r
                .get("resultType")
                .and_then(Value::as_str)
                .map_or(ResultType::Complete, ResultType::parse),
            Self::Tool(_) => ResultType::Complete,
            Self::InputRequired(_) => ResultType::InputRequired,
        }
    }
}

/// `_meta` naming the server (`{"io.modelcontextprotocol/serverInfo": {..}}`), written once
/// per tenant view: every modern result carries the same bytes, so they are copied into each
/// rather than serialised again.
#[derive(Debug, Clone)]
pub struct ServerMeta(Arc<RawValue>);

impl ServerMeta {
    /// The `_meta` of `server_info`.
    pub fn new(server_info: &Value) -> ServerMeta {
        let mut meta = Map::new();
        meta.insert(SERVER_INFO.to_owned(), server_info.clone());
        // A JSON value always serialises; were it ever not to, `null` is still JSON.
        let raw =
            serde_json::value::to_raw_value(&meta).unwrap_or_else(|_| RawValue::NULL.to_owned());
        ServerMeta(Arc::from(raw))
    }
}

impl PartialEq for ServerMeta {
    fn eq(&self, other: &Self) -> bool {
        self.0.get() == other.0.get()
    }
}

impl Serialize for ServerMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// About what one input request writes: a form elicitation with a one-field schema is about
/// 200 bytes.
const INPUT_REQUEST_BYTES: usize = 256;

impl InputRequiredResult {
    /// About how many bytes it writes beyond [`RESULT_CAPACITY`]: its state, and room for
    /// each request.
    fn beyond_usual(&self) -> usize {
        self.request_state.as_ref().map_or(0, String::len)
            + INPUT_REQUEST_BYTES * self.input_requests.len()
    }

    /// Its JSON-RPC response to `id`, in a buffer of `capacity` bytes at first, the same
    /// bytes serde_json writes. A state that needs no JSON escape (every sealed token: `v2.`,
    /// a base64url kid, `.`, base64url) is copied in after the members before it, and
    /// `_meta` after it, rather than written through serde_json, which looks each of the
    /// state's bytes up in an escape table (about 700 instructions for a 131-byte token).
    fn response_bytes(&self, capacity: usize, id: &RequestId) -> Vec<u8> {
        match self.request_state.as_deref() {
            Some(state) if needs_no_escape(state) => {
                let mut out = result_bytes_sized(capacity, id, &Head(self));
                append_result_member(&mut out, "requestState", &["\"", state, "\""]);
                append_result_member(&mut out, "_meta", &[self.meta.0.get()]);
                out
            }
            _ => result_bytes_sized(capacity, id, self),
        }
    }

    /// The members before its state: `resultType`, and the requests unless there are none.
    fn serialize_head<S: SerializeStruct>(&self, out: &mut S) -> Result<(), S::Error> {
        out.serialize_field("resultType", &self.result_type)?;
        if self.input_requests.is_empty() {
            out.skip_field("inputRequests")
        } else {
            out.serialize_field("inputRequests", &self.input_requests)
        }
    }

    /// `request_state` is the wire token (sealed, or the handler's own when nothing seals).
    pub(crate) fn new(
        input_requests: InputRequests,
        request_state: Option<String>,
        meta: ServerMeta,
    ) -> Self {
        Self {
            result_type: ResultType::InputRequired,
            input_requests,
            request_state,
            meta,
        }
    }
}

/// `tools/call` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the tool returns, as content blocks.
    pub content: Vec<Content>,
    /// The result as JSON, matching the tool's `outputSchema` when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool's own work failed: the model sees the content as an error it may act on,
    /// rather than a protocol error.
    pub is_error: bool,
}

impl CallToolResult {
    /// A result of one text block.
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            ..Self::default()
        }
    }

    /// A failed result (`isError`) of one text block saying why.
    pub fn error(text: impl Into<String>) -> Self {
        Self {
            content: vec![Content::text(text)],
            is_error: true,
            ..Self::default()
        }
    }

    /// A result of these content blocks.
    pub fn content(content: Vec<Content>) -> Self {
        Self {
            content,
            ..Self::default()
        }
    }
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PromptMessage {
    /// Who says it in the conversation.
    pub role: Role,
    /// What is said: one content block.
    pub content: Content,
}

/// The speaker of a prompt message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person (or the client speaking for them).
    User,
    /// The model.
    Assistant,
}

impl PromptMessage {
    /// A message from the user.
    pub fn user(content: Content) -> Self {
        Self {
            role: Role::User,
            content,
        }
    }

    /// A message from the assistant.
    pub fn assistant(content: Content) -> Self {
        Self {
            role: Role::Assistant,
            content,
        }
    }
}

/// `prompts/get` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct GetPromptResult {
    /// A description of the prompt for the client to show.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The conversation the prompt produces, in order.
    pub messages: Vec<PromptMessage>,
}

/// `resources/read` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ReadResourceResult {
    /// What was read: usually one item, for the URI asked.
    pub contents: Vec<ResourceContents>,
}

/// `completion/complete` values.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// Suggested values, most relevant first; beyond 100 the runtime keeps the first 100 and sets
    /// `has_more`.
    pub values: Vec<String>,
    /// How many values there are in all, when known (may exceed `values`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more values than `values` holds.
    pub has_more: bool,
}

/// Turns a serialisable result into the object the dispatcher stamps.
pub fn to_object<T: Serialize>(result: &T) -> Map<String, Value> {
    match serde_json::to_value(result) {
        Ok(Value::Object(map)) => map,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::protocol::input::InputRequest;

    fn server_info() -> ServerMeta {
        ServerMeta::new(&json!({"name": "s", "version": "1"}))
    }

    #[test]
    fn an_input_required_response_is_written_into_one_buffer_that_never_grew() {
        use crate::protocol::jsonrpc::result_bytes;
        let form = InputRequest::elicit_form(
            "What is your name?",
            json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        );
        let requests = InputRequests::from([("user_name".to_owned(), form)]);
        let state = "s".repeat(300);
        let result = StampedResult::InputRequired(InputRequiredResult::new(
            requests,
            Some(state.clone()),
            server_info(),
        ));
        let hint = result.response_size_hint();
        assert_eq!(hint, RESULT_CAPACITY + state.len() + INPUT_REQUEST_BYTES);
        let id = RequestId::Number(7.into());
        let bytes = result.response_bytes(&id);
        assert_eq!(bytes, result_bytes(&id, &result));
        // Larger than the usual buffer, and within the hint: written without growing.
        assert!(bytes.len() > RESULT_CAPACITY, "{}", bytes.len());
        assert!(bytes.len() <= hint, "{} > {hint}", bytes.len());
        assert_eq!(bytes.capacity(), hint);
    }

    fn input_required_with_state(state: &str) -> StampedResult {
        let requests = InputRequests::from([("roots".to_owned(), InputRequest::list_roots())]);
        StampedResult::InputRequired(InputRequiredResult::new(
            requests,
            Some(state.to_owned()),
            server_info(),
        ))
    }

    #[test]
    fn a_sealed_state_appended_to_the_response_gives_the_bytes_serde_json_writes() {
        use crate::protocol::jsonrpc::result_bytes;
        let token = "v2.a-B_9.QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo-_0123456789";
        let result = input_required_with_state(token);
        let id = RequestId::String("r".into());
        let bytes = result.response_bytes(&id);
        assert_eq!(
            String::from_utf8(bytes.clone()).expect("utf-8"),
            String::from_utf8(result_bytes(&id, &result)).expect("utf-8")
        );
        let written: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(written["result"]["requestState"], token);
    }

    #[test]
    fn a_handlers_state_that_needs_escaping_is_written_escaped() {
        use crate::protocol::jsonrpc::result_bytes;
        let state = "say \"hi\"\\\n\u{1}é";
        let result = input_required_with_state(state);
        let id = RequestId::Number(1.into());
        let bytes = result.response_bytes(&id);
        assert_eq!(bytes, result_bytes(&id, &result));
        let written: Value = serde_json::from_slice(&bytes).expect("json");
        assert_eq!(written["result"]["requestState"], state);
    }

    #[test]
    fn an_input_required_result_leaves_out_the_state_and_requests_it_does_not_have() {
        let result = InputRequiredResult::new(InputRequests::default(), None, server_info());
        assert_eq!(
            serde_json::to_value(&result).expect("serializable"),
            json!({
                "resultType": "input_required",
                "_meta": {SERVER_INFO: {"name": "s", "version": "1"}}
            })
        );
    }

    #[test]
    fn an_input_required_result_is_written_with_its_type_requests_state_and_server() {
        let requests = InputRequests::from([("roots".to_owned(), InputRequest::list_roots())]);
        let result = InputRequiredResult::new(requests, Some("sealed".into()), server_info());
        assert_eq!(
            serde_json::to_value(&result).expect("serializable"),
            json!({
                "resultType": "input_required",
                "inputRequests": {"roots": {"method": "roots/list", "params": {}}},
                "requestState": "sealed",
                "_meta": {SERVER_INFO: {"name": "s", "version": "1"}}
            })
        );
    }

    #[test]
    fn a_stamped_tool_result_is_the_result_with_its_type_and_server() {
        let result = StampedToolResult::new(CallToolResult::text("hi"), server_info());
        assert_eq!(
            serde_json::to_value(&result).expect("serializable"),
            json!({
                "content": [{"type": "text", "text": "hi"}],
                "isError": false,
                "resultType": "complete",
                "_meta": {SERVER_INFO: {"name": "s", "version": "1"}}
            })
        );
    }

    #[test]
    fn a_tool_result_has_no_field_that_stamping_would_merge() {
        // `StampedToolResult` writes the result beside its own `resultType` and `_meta`: a
        // result that grew either field would write it twice.
        let full = CallToolResult {
            structured_content: Some(json!({"k": 1})),
            ..CallToolResult::error("e")
        };
        let written = serde_json::to_value(&full).expect("serializable");
        assert!(written.get("_meta").is_none() && written.get("resultType").is_none());
    }

    #[test]
    fn a_stamped_tool_result_writes_every_field_of_the_result() {
        for result in [
            CallToolResult::text("hi"),
            CallToolResult {
                structured_content: Some(json!({"k": 1})),
                ..CallToolResult::error("e")
            },
        ] {
            let Value::Object(mut plain) = serde_json::to_value(&result).expect("serializable")
            else {
                panic!("a result is an object");
            };
            plain.insert("resultType".into(), json!("complete"));
            plain.insert(
                "_meta".into(),
                json!({SERVER_INFO: {"name": "s", "version": "1"}}),
            );
            let stamped = StampedToolResult::new(result, server_info());
            assert_eq!(
                serde_json::to_value(&stamped).expect("serializable"),
                Value::Object(plain)
            );
        }
    }

    #[test]
    fn server_meta_is_written_as_the_same_bytes_every_time() {
        let meta = server_info();
        let text = serde_json::to_string(&meta).expect("serializable");
        assert_eq!(
            text,
            r#"{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}}"#
        );
        assert_eq!(
            serde_json::to_string(&meta.clone()).expect("serializable"),
            text
        );
    }

    #[test]
    fn a_state_only_input_required_result_leaves_out_input_requests() {
        let result =
            InputRequiredResult::new(InputRequests::new(), Some("s".into()), server_info());
        let written = serde_json::to_value(&result).expect("serializable");
        assert!(written.get("inputRequests").is_none(), "{written}");
        assert_eq!(written["requestState"], "s");
    }
}
