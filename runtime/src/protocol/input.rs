//! The input requests a server embeds in an input-required result (SEP-2322), and the answers
//! a client sends back on its retry.
//!
//! An embedded request is `{method, params}` with no id: only `elicitation/create`,
//! `sampling/createMessage` and `roots/list` may be embedded, which is why the constructors
//! are the only way to make one. Answers carry no method, so they stay raw JSON objects with
//! typed views; a view that does not fit yields `None`, and a handler then asks again. The
//! runtime checks accepted form answers against the schema that asked for them before a
//! handler sees them (see `answers`); each form request compiles its schema for that once.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use serde::{Deserialize, Serialize};
use serde_json::value::{to_raw_value, RawValue};
use serde_json::{json, Map, Value};

use super::error::McpError;
use super::form_schema::FormSchema;

/// One embedded request: `{"method": ..., "params": ...}`.
///
/// Built once and shared: a clone is a reference count, and the request is serialised the
/// first time it is written and kept that way. A handler that keeps its questions in statics
/// hands out the same request every round, and an input-required result writes it without
/// walking its params again (the walk, the copy and the drop were a visible part of a sealed
/// flow's CPU, BENCHMARKS.md). A request that is never written (a legacy relay sends its
/// params, the gate may refuse it) is never serialised.
#[derive(Debug, Clone)]
pub struct InputRequest(Arc<Built>);

#[derive(Debug)]
struct Built {
    method: &'static str,
    params: Option<Value>,
    /// The wire form, once written. Serialising a `Value` cannot fail, but if it ever did the
    /// request is written field by field instead.
    wire: OnceLock<Option<Box<RawValue>>>,
    /// A form elicitation's `requestedSchema`, compiled the first time its answers are to be
    /// checked (`None` for any other request).
    form_schema: OnceLock<Option<FormSchema>>,
}

/// The wire form's fields, for serialising.
#[derive(Serialize)]
struct Wire<'a> {
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<&'a Value>,
}

impl Serialize for InputRequest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let wire = self.0.wire.get_or_init(|| to_raw_value(&self.wire()).ok());
        match wire {
            Some(wire) => wire.serialize(serializer),
            None => self.wire().serialize(serializer),
        }
    }
}

impl PartialEq for InputRequest {
    fn eq(&self, other: &Self) -> bool {
        self.0.method == other.0.method && self.0.params == other.0.params
    }
}

impl InputRequest {
    fn new(method: &'static str, params: Option<Value>) -> Self {
        Self(Arc::new(Built {
            method,
            params,
            wire: OnceLock::new(),
            form_schema: OnceLock::new(),
        }))
    }

    fn wire(&self) -> Wire<'_> {
        Wire {
            method: self.0.method,
            params: self.0.params.as_ref(),
        }
    }

    /// Form-mode elicitation: a message and a flat JSON schema of what to ask.
    pub fn elicit_form(message: impl Into<String>, requested_schema: Value) -> Self {
        Self::elicitation(
            json!({ "mode": "form", "message": message.into(), "requestedSchema": requested_schema }),
        )
    }

    /// URL-mode elicitation: the user is sent to `url`; acceptance means only that they agreed
    /// to go. Modern requests carry no `elicitationId`.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self::elicitation(json!({ "mode": "url", "message": message.into(), "url": url.into() }))
    }

    /// Elicitation with caller-built params (for schemas with defaults, enums, and so on).
    /// A params object without `"mode": "url"` is form mode.
    pub fn elicitation(params: Value) -> Self {
        Self::new("elicitation/create", Some(params))
    }

    /// Sampling with caller-built `CreateMessageRequestParams`.
    pub fn sampling(params: Value) -> Self {
        Self::new("sampling/createMessage", Some(params))
    }

    /// Sampling of one user text message.
    pub fn sample_text(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self::sampling(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt.into() } }],
            "maxTokens": max_tokens,
        }))
    }

    /// Sampling built with [`Sampling`].
    pub fn sample(sampling: Sampling) -> Self {
        Self::sampling(Value::Object(sampling.0))
    }

    /// `roots/list`: the client's filesystem roots.
    pub fn list_roots() -> Self {
        Self::new("roots/list", Some(json!({})))
    }

    /// `elicitation/create`, `sampling/createMessage` or `roots/list`.
    pub fn method(&self) -> &'static str {
        self.0.method
    }

    /// The method and the params, moved out when this is the last handle on the request and
    /// copied otherwise (a legacy relay edits the params it sends).
    pub fn into_parts(self) -> (&'static str, Option<Value>) {
        let method = self.0.method;
        let params = match Arc::try_unwrap(self.0) {
            Ok(built) => built.params,
            Err(shared) => shared.params.clone(),
        };
        (method, params)
    }

    /// The request's params as built.
    pub fn params(&self) -> Option<&Value> {
        self.0.params.as_ref()
    }

    /// The compiled `requestedSchema` of a form elicitation (one without `"mode": "url"`),
    /// which its answers are checked against; `None` for any other request. Compiled once per
    /// request, so a request kept in a static is compiled once per process.
    pub(crate) fn form_schema(&self) -> Option<&FormSchema> {
        self.0
            .form_schema
            .get_or_init(|| {
                let params = self
                    .params()
                    .filter(|_| self.0.method == "elicitation/create")?;
                let url = params.get("mode").and_then(Value::as_str) == Some("url");
                let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
                (!url).then(|| FormSchema::compile(schema))
            })
            .as_ref()
    }

    /// The client capabilities this request needs, as a `ClientCapabilities`-shaped object:
    /// form or URL elicitation; sampling, plus `sampling.tools` for `tools`/`toolChoice` and
    /// `sampling.context` for `includeContext` other than `"none"`; roots.
    pub fn required_capabilities(&self) -> Value {
        Value::Object(Capabilities::needed_by(self.need()).to_map())
    }

    /// What this request needs the client to have declared.
    pub(crate) fn need(&self) -> Need {
        let param = |k: &str| self.params().and_then(|p| p.get(k));
        match self.0.method {
            "elicitation/create" if param("mode").and_then(Value::as_str) == Some("url") => {
                Need::Url
            }
            "elicitation/create" => Need::Form,
            "sampling/createMessage" => Need::Sampling {
                tools: param("tools").is_some() || param("toolChoice").is_some(),
                context: param("includeContext")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c != "none"),
            },
            _ => Need::Roots,
        }
    }
}

/// The client capabilities an input request needs, as [`InputRequest::required_capabilities`]
/// writes them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Need {
    /// `elicitation.form`.
    Form,
    /// `elicitation.url`.
    Url,
    /// `sampling`, with `sampling.tools` and `sampling.context` when the request uses them.
    Sampling { tools: bool, context: bool },
    /// `roots`.
    Roots,
}

/// A set of the client capabilities input requests can need: what a request needs, or what of
/// a round's needs a declaration lacks. Written out in one place, [`Capabilities::to_map`].
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Capabilities {
    pub(crate) form: bool,
    pub(crate) url: bool,
    /// `sampling` itself; its sub-capabilities imply it when written out.
    pub(crate) sampling: bool,
    pub(crate) sampling_tools: bool,
    pub(crate) sampling_context: bool,
    pub(crate) roots: bool,
}

impl Capabilities {
    /// What `need` requires.
    pub(crate) fn needed_by(need: Need) -> Self {
        let none = Self::default();
        match need {
            Need::Form => Self { form: true, ..none },
            Need::Url => Self { url: true, ..none },
            Need::Sampling { tools, context } => Self {
                sampling: true,
                sampling_tools: tools,
                sampling_context: context,
                ..none
            },
            Need::Roots => Self {
                roots: true,
                ..none
            },
        }
    }

    /// As a `ClientCapabilities`-shaped object, merged: empty when the set is.
    pub(crate) fn to_map(self) -> Map<String, Value> {
        let present = |on: bool, name: &str| on.then(|| (name.to_owned(), json!({})));
        let mut map = Map::new();
        let elicitation: Map<String, Value> =
            [present(self.form, "form"), present(self.url, "url")]
                .into_iter()
                .flatten()
                .collect();
        if !elicitation.is_empty() {
            map.insert("elicitation".into(), Value::Object(elicitation));
        }
        let sampling: Map<String, Value> = [
            present(self.sampling_tools, "tools"),
            present(self.sampling_context, "context"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if self.sampling || !sampling.is_empty() {
            map.insert("sampling".into(), Value::Object(sampling));
        }
        map.extend(present(self.roots, "roots"));
        map
    }
}

/// `CreateMessageRequestParams`, built: messages, limits, and optionally tools (which need the
/// client's `sampling.tools`) or server context (which needs `sampling.context`).
#[derive(Debug, Clone, PartialEq)]
pub struct Sampling(Map<String, Value>);

impl Sampling {
    /// No messages yet, and at most `max_tokens` tokens to sample.
    pub fn new(max_tokens: u32) -> Self {
        let mut params = Map::new();
        params.insert("messages".into(), json!([]));
        params.insert("maxTokens".into(), json!(max_tokens));
        Self(params)
    }

    fn message(mut self, role: &str, text: String) -> Self {
        if let Some(Value::Array(messages)) = self.0.get_mut("messages") {
            messages.push(json!({ "role": role, "content": { "type": "text", "text": text } }));
        }
        self
    }

    /// Appends a user message of text.
    pub fn user_text(self, text: impl Into<String>) -> Self {
        self.message("user", text.into())
    }

    /// Appends an assistant message of text (an earlier turn of the conversation).
    pub fn assistant_text(self, text: impl Into<String>) -> Self {
        self.message("assistant", text.into())
    }

    /// The system prompt the client's model may use.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.0
            .insert("systemPrompt".into(), Value::String(prompt.into()));
        self
    }

    /// The sampling temperature the client may use.
    pub fn temperature(mut self, temperature: f64) -> Self {
        self.0.insert("temperature".into(), json!(temperature));
        self
    }

    /// Tools the client's model may call (`Tool` objects).
    pub fn tools(mut self, tools: Vec<Value>) -> Self {
        self.0.insert("tools".into(), Value::Array(tools));
        self
    }

    /// `{"mode": "auto" | "required" | "none"}`.
    pub fn tool_choice(mut self, choice: Value) -> Self {
        self.0.insert("toolChoice".into(), choice);
        self
    }

    /// `"none"`, `"thisServer"` or `"allServers"` (deprecated; the last two need
    /// `sampling.context`).
    pub fn include_context(mut self, context: &str) -> Self {
        self.0
            .insert("includeContext".into(), Value::String(context.to_owned()));
        self
    }
}

/// Server-chosen keys to requests; a map keeps keys unique and their order deterministic.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// The user submitted the form (its `content`) or agreed to open the URL.
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the request without choosing.
    Cancel,
}

impl ElicitAction {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            ElicitAction::Accept => "accept",
            ElicitAction::Decline => "decline",
            ElicitAction::Cancel => "cancel",
        }
    }

    /// The action a wire name names, if it names one: only the exact string, as the schema
    /// has it. A match on the name, not serde's enum access through the answer's `Value`
    /// (BENCHMARKS.md, "2026-12-06 (morning)"), which also took `{"accept": null}`.
    pub fn from_name(name: &str) -> Option<Self> {
        match name {
            "accept" => Some(ElicitAction::Accept),
            "decline" => Some(ElicitAction::Decline),
            "cancel" => Some(ElicitAction::Cancel),
            _ => None,
        }
    }
}

/// One answer from `inputResponses`: a bare result object (`ElicitResult`,
/// `CreateMessageResult` or `ListRootsResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct InputResponse(Map<String, Value>);

impl InputResponse {
    /// An answer from the result object the client sent under its key.
    pub fn new(object: Map<String, Value>) -> Self {
        Self(object)
    }

    /// The result object as the client sent it.
    pub fn as_object(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The elicitation action, if this answer is an `ElicitResult`.
    pub fn action(&self) -> Option<ElicitAction> {
        self.0
            .get("action")
            .and_then(Value::as_str)
            .and_then(ElicitAction::from_name)
    }

    /// Accepted elicitation content, `None` for decline, cancel or a non-elicitation answer.
    pub fn accepted_content(&self) -> Option<&Map<String, Value>> {
        if self.action() != Some(ElicitAction::Accept) {
            return None;
        }
        self.0.get("content").and_then(Value::as_object)
    }

    /// A string field of accepted elicitation content.
    pub fn content_str(&self, field: &str) -> Option<&str> {
        self.accepted_content()?.get(field)?.as_str()
    }

    /// A boolean field of accepted elicitation content.
    pub fn content_bool(&self, field: &str) -> Option<bool> {
        self.accepted_content()?.get(field)?.as_bool()
    }

    /// The text of a `CreateMessageResult` whose content is text (or the first text block).
    pub fn sampled_text(&self) -> Option<&str> {
        self.0.get("role")?;
        match self.0.get("content")? {
            Value::Object(block) => text_of(block),
            Value::Array(blocks) => blocks.iter().filter_map(Value::as_object).find_map(text_of),
            _ => None,
        }
    }

    /// The roots of a `ListRootsResult`.
    pub fn roots(&self) -> Option<&Vec<Value>> {
        self.0.get("roots")?.as_array()
    }
}

fn text_of(block: &Map<String, Value>) -> Option<&str> {
    (block.get("type")?.as_str()? == "text").then(|| block.get("text")?.as_str())?
}

/// Every answer of a retry, by key.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// Reads `params.inputResponses`: absent means no answers; anything but an object of objects
/// is an error (the spec asks servers to validate; answering a malformed one as "complete"
/// would act on garbage). Takes the value, so the answers move to the handler uncopied.
pub fn parse_input_responses(value: Option<Value>) -> Result<InputResponses, McpError> {
    let Some(value) = value else {
        return Ok(InputResponses::new());
    };
    let Value::Object(map) = value else {
        return Err(McpError::invalid_params("inputResponses must be an object"));
    };
    // Inserted one by one: collecting would gather the answers in a vector, sort it and
    // build the map from it, about twice the work for the one or two answers a round has.
    let mut answers = InputResponses::new();
    for (key, answer) in map {
        let Value::Object(answer) = answer else {
            return Err(McpError::invalid_params(format!(
                "inputResponses[\"{key}\"] must be an object"
            )));
        };
        answers.insert(key, InputResponse::new(answer));
    }
    Ok(answers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_is_written_as_method_and_params() {
        let form = InputRequest::elicit_form("Name?", json!({"type": "object"}));
        let expected = json!({"method": "elicitation/create", "params": {
            "mode": "form", "message": "Name?", "requestedSchema": {"type": "object"}}});
        assert_eq!(serde_json::to_value(&form).expect("serializable"), expected);
        // The second write comes from the kept wire form, through another handle.
        assert_eq!(
            serde_json::to_value(form.clone()).expect("serializable"),
            expected
        );
        assert_eq!(
            serde_json::to_value(InputRequest::list_roots()).expect("serializable"),
            json!({"method": "roots/list", "params": {}})
        );
    }

    #[test]
    fn a_shared_request_hands_out_a_copy_of_its_params_and_keeps_its_own() {
        let asked = InputRequest::sample_text("Capital of France?", 10);
        let (method, params) = asked.clone().into_parts();
        assert_eq!(method, "sampling/createMessage");
        assert_eq!(params.as_ref(), asked.params());
        assert_eq!(
            serde_json::to_value(&asked).expect("serializable")["params"],
            params.expect("params")
        );
    }

    #[test]
    fn null_input_responses_are_rejected() {
        assert!(parse_input_responses(Some(Value::Null)).is_err());
    }

    #[test]
    fn every_answer_is_kept_under_its_key() {
        let answers = parse_input_responses(Some(json!({
            "b": {"action": "decline"},
            "a": {"action": "accept", "content": {"ok": true}},
        })))
        .expect("answers");
        assert_eq!(answers.keys().collect::<Vec<_>>(), ["a", "b"]);
        assert_eq!(answers["a"].action(), Some(ElicitAction::Accept));
        assert_eq!(answers["b"].action(), Some(ElicitAction::Decline));
    }

    #[test]
    fn a_non_object_answer_is_rejected() {
        assert!(parse_input_responses(Some(json!({"user_name": 12345}))).is_err());
    }

    #[test]
    fn decline_has_no_accepted_content() {
        let r = InputResponse::new(
            json!({"action": "decline"})
                .as_object()
                .cloned()
                .expect("object"),
        );
        assert_eq!(r.action(), Some(ElicitAction::Decline));
        assert!(r.accepted_content().is_none());
    }

    #[test]
    fn an_action_is_read_by_its_exact_wire_name_as_it_is_written() {
        for action in [
            ElicitAction::Accept,
            ElicitAction::Decline,
            ElicitAction::Cancel,
        ] {
            let answer = json!({"action": action.as_str()});
            let r = InputResponse::new(answer.as_object().cloned().expect("object"));
            assert_eq!(r.action(), Some(action));
        }
        for other in [
            json!("Accept"),
            json!("accepted"),
            json!(""),
            json!(true),
            json!({"accept": null}),
        ] {
            let answer = json!({"action": other});
            let r = InputResponse::new(answer.as_object().cloned().expect("object"));
            assert_eq!(r.action(), None, "{other}");
        }
    }

    #[test]
    fn sampling_with_tools_needs_sampling_tools() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object"}});
        let r = InputRequest::sample(Sampling::new(5).user_text("hi").tools(vec![tool]));
        assert_eq!(
            r.required_capabilities(),
            json!({"sampling": {"tools": {}}})
        );
    }

    #[test]
    fn sampling_with_server_context_needs_sampling_context() {
        let r = InputRequest::sample(
            Sampling::new(5)
                .user_text("hi")
                .include_context("thisServer"),
        );
        assert_eq!(
            r.required_capabilities(),
            json!({"sampling": {"context": {}}})
        );
        let none = InputRequest::sample(Sampling::new(5).user_text("hi").include_context("none"));
        assert_eq!(none.required_capabilities(), json!({"sampling": {}}));
    }

    #[test]
    fn elicitation_without_mode_is_form() {
        let r = InputRequest::elicitation(json!({"message": "m", "requestedSchema": {}}));
        assert_eq!(
            r.required_capabilities(),
            json!({"elicitation": {"form": {}}})
        );
    }

    #[test]
    fn sampled_text_reads_a_text_block() {
        let r = InputResponse::new(json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}).as_object().cloned().expect("object"));
        assert_eq!(r.sampled_text(), Some("Paris"));
    }
}
