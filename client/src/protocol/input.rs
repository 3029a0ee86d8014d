//! What a server asks of the client, and the client's answers.
//!
//! The same three kinds of question reach the client two ways: embedded in a modern
//! input-required result (`{method, params}` under a server-chosen key, SEP-2322), or as real
//! JSON-RPC requests on a legacy session. Both parse into [`InputRequest`]; the answers are
//! the bare result objects ([`InputResponse`]) in both cases.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{parse, Malformed};

/// One question from the server.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`: ask the user.
    Elicitation(ElicitRequest),
    /// `sampling/createMessage`: ask the client's language model.
    Sampling(SamplingRequest),
    /// `roots/list`: the client's filesystem roots.
    Roots,
}

/// The methods an input request may have.
pub const ELICITATION: &str = "elicitation/create";
/// See [`ELICITATION`].
pub const SAMPLING: &str = "sampling/createMessage";
/// See [`ELICITATION`].
pub const ROOTS: &str = "roots/list";

impl InputRequest {
    /// The method of the request.
    pub fn method(&self) -> &'static str {
        match self {
            Self::Elicitation(_) => ELICITATION,
            Self::Sampling(_) => SAMPLING,
            Self::Roots => ROOTS,
        }
    }

    /// A request of `method` with `params`, as a legacy server sends it. `Ok(None)` for a
    /// method that is not one of the three.
    pub fn from_method(method: &str, params: Option<Value>) -> Result<Option<Self>, Malformed> {
        let params = params.unwrap_or_else(|| Value::Object(Map::new()));
        Ok(Some(match method {
            ELICITATION => Self::Elicitation(ElicitRequest::parse(params)?),
            SAMPLING => {
                let mut request: SamplingRequest =
                    parse("sampling/createMessage params", params.clone())?;
                request.params = params;
                Self::Sampling(request)
            }
            ROOTS => Self::Roots,
            _ => return Ok(None),
        }))
    }

    /// An embedded request, `{"method": ..., "params": ...}`.
    pub fn parse_embedded(value: Value) -> Result<Self, Malformed> {
        const WHAT: &str = "an input request";
        let Value::Object(mut request) = value else {
            return Err(Malformed::new(WHAT, "not an object"));
        };
        let method = match request.remove("method") {
            Some(Value::String(m)) => m,
            _ => return Err(Malformed::new(WHAT, "no method")),
        };
        Self::from_method(&method, request.remove("params"))?
            .ok_or_else(|| Malformed::new(WHAT, format!("{method:?} is not an embeddable method")))
    }
}

/// An elicitation, in either mode.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequest {
    /// Form mode: a message and a flat schema of the fields to ask.
    Form(FormElicitation),
    /// URL mode: send the user to a URL (acceptance means only that they agreed to go).
    Url(UrlElicitation),
}

impl ElicitRequest {
    fn parse(params: Value) -> Result<Self, Malformed> {
        if params.get("mode").and_then(Value::as_str) == Some("url") {
            Ok(Self::Url(parse("URL elicitation params", params)?))
        } else {
            Ok(Self::Form(parse("form elicitation params", params)?))
        }
    }

    /// The message to show the user.
    pub fn message(&self) -> &str {
        match self {
            Self::Form(f) => &f.message,
            Self::Url(u) => &u.message,
        }
    }

    /// The request's params as the wire has them (`ElicitRequestFormParams` or
    /// `ElicitRequestURLParams`), for a handler that hands the question on whole.
    pub fn params(&self) -> Value {
        match self {
            Self::Form(f) => serde_json::json!({
                "mode": "form", "message": f.message, "requestedSchema": f.requested_schema
            }),
            Self::Url(u) => {
                let mut params =
                    serde_json::json!({"mode": "url", "message": u.message, "url": u.url});
                if let Some(id) = &u.elicitation_id {
                    params["elicitationId"] = Value::String(id.clone());
                }
                params
            }
        }
    }
}

/// Form-mode elicitation params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct FormElicitation {
    /// What to tell the user.
    pub message: String,
    /// A flat JSON schema: `{type: object, properties: {...}, required: [...]}`.
    pub requested_schema: Value,
}

impl FormElicitation {
    /// The schema's properties, in the server's order.
    pub fn properties(&self) -> impl Iterator<Item = (&String, &Value)> {
        self.requested_schema
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
    }

    /// The names the schema lists as required.
    pub fn required(&self) -> Vec<&str> {
        self.requested_schema
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect()
    }

    /// Every property's `default` (SEP-1034), as accepted content: what a form pre-fills,
    /// and what a client that accepts without asking sends.
    pub fn defaults(&self) -> Map<String, Value> {
        self.properties()
            .filter_map(|(name, schema)| Some((name.clone(), schema.get("default")?.clone())))
            .collect()
    }
}

/// URL-mode elicitation params.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UrlElicitation {
    /// Why the user should go there.
    pub message: String,
    /// Where to send them.
    pub url: String,
    /// The legacy wire's id of the out-of-band flow (2025-11-25 only).
    #[serde(default)]
    pub elicitation_id: Option<String>,
}

/// `sampling/createMessage` params. The common fields are typed; all of them stay in
/// [`SamplingRequest::params`] as the server sent them.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation so far (`SamplingMessage` objects).
    pub messages: Vec<Value>,
    /// The most tokens to sample.
    pub max_tokens: u64,
    /// A system prompt, if the server asked for one.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Tools the model may call (needs the `sampling.tools` capability).
    #[serde(default)]
    pub tools: Option<Vec<Value>>,
    /// How the model should choose tools.
    #[serde(default)]
    pub tool_choice: Option<Value>,
    /// `"none"`, `"thisServer"` or `"allServers"` (deprecated).
    #[serde(default)]
    pub include_context: Option<String>,
    /// Sampling temperature.
    #[serde(default)]
    pub temperature: Option<f64>,
    /// Sequences that end sampling.
    #[serde(default)]
    pub stop_sequences: Option<Vec<String>>,
    /// The server's model preferences.
    #[serde(default)]
    pub model_preferences: Option<Value>,
    /// Every param, typed above or not (`metadata`, `_meta`, ...), as the server sent them.
    #[serde(skip)]
    pub params: Value,
}

impl SamplingRequest {
    /// Does the request offer tools to the model?
    pub fn uses_tools(&self) -> bool {
        self.tools.is_some() || self.tool_choice.is_some()
    }

    /// The text of the last message with text content, if any.
    pub fn last_text(&self) -> Option<&str> {
        self.messages.iter().rev().find_map(|m| {
            let content = m.get("content")?;
            let block = match content {
                Value::Array(blocks) => blocks.iter().find(|b| b["type"] == "text")?,
                block => block,
            };
            (block.get("type")?.as_str()? == "text").then(|| block.get("text")?.as_str())?
        })
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    /// They answered (form) or agreed to go (URL).
    Accept,
    /// They said no.
    Decline,
    /// They dismissed it without choosing.
    Cancel,
}

/// The answer to an elicitation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's values, when accepted in form mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

impl ElicitResult {
    /// Accepted, with the form's values.
    pub fn accept(content: Map<String, Value>) -> Self {
        Self {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// Accepted without content (URL mode: the user agreed to go).
    pub fn accept_url() -> Self {
        Self {
            action: ElicitAction::Accept,
            content: None,
        }
    }

    /// Declined.
    pub fn decline() -> Self {
        Self {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// Cancelled.
    pub fn cancel() -> Self {
        Self {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// The answer to a sampling request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// `"assistant"`, normally.
    pub role: String,
    /// A content block (or, with tools, an array of them).
    pub content: Value,
    /// The model that sampled.
    pub model: String,
    /// Why sampling stopped (`"endTurn"`, `"maxTokens"`, `"toolUse"`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

impl CreateMessageResult {
    /// An assistant text reply that ended its turn.
    pub fn text(model: impl Into<String>, text: impl Into<String>) -> Self {
        Self {
            role: "assistant".into(),
            content: serde_json::json!({"type": "text", "text": text.into()}),
            model: model.into(),
            stop_reason: Some("endTurn".into()),
        }
    }
}

/// One root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// A name to show.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// A root at `uri` named `name`.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Self {
            uri: uri.into(),
            name,
        }
    }
}

/// The answer to `roots/list`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

/// One answer, written as the bare result object.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
#[non_exhaustive]
pub enum InputResponse {
    /// An elicitation's answer.
    Elicitation(ElicitResult),
    /// A sampling answer.
    Sampling(CreateMessageResult),
    /// The roots.
    Roots(ListRootsResult),
}

/// Server-chosen keys to questions.
pub type InputRequests = BTreeMap<String, InputRequest>;
/// The answers of one round, under the questions' keys.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// An input-required result (SEP-2322): the questions of this round and the state to echo.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct InputRequired {
    /// The questions, by key (empty for a state-only round).
    pub input_requests: InputRequests,
    /// The opaque state to send back unchanged, if the server sent one.
    pub request_state: Option<String>,
}

impl InputRequired {
    /// Reads `inputRequests` and `requestState` of an input-required result.
    pub fn parse(result: &Map<String, Value>) -> Result<Self, Malformed> {
        let input_requests = match result.get("inputRequests") {
            None | Some(Value::Null) => InputRequests::new(),
            Some(Value::Object(requests)) => requests
                .iter()
                .map(|(key, r)| Ok((key.clone(), InputRequest::parse_embedded(r.clone())?)))
                .collect::<Result<_, Malformed>>()?,
            Some(_) => return Err(Malformed::new("inputRequests", "not an object")),
        };
        let request_state = match result.get("requestState") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(Malformed::new("requestState", "not a string")),
        };
        Ok(Self {
            input_requests,
            request_state,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn embedded_requests_of_each_kind_parse() {
        let ir = InputRequired::parse(&object(json!({
            "resultType": "input_required",
            "inputRequests": {
                "a": {"method": "elicitation/create", "params": {"message": "Name?", "requestedSchema": {"type": "object", "properties": {}}}},
                "b": {"method": "elicitation/create", "params": {"mode": "url", "message": "Go", "url": "https://x.test"}},
                "c": {"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5, "tools": []}},
                "d": {"method": "roots/list"}
            },
            "requestState": "s"
        })))
        .expect("well-formed");
        assert!(matches!(
            ir.input_requests["a"],
            InputRequest::Elicitation(ElicitRequest::Form(_))
        ));
        assert!(matches!(
            ir.input_requests["b"],
            InputRequest::Elicitation(ElicitRequest::Url(_))
        ));
        let InputRequest::Sampling(s) = &ir.input_requests["c"] else {
            panic!("sampling")
        };
        assert!(s.uses_tools());
        assert_eq!(ir.input_requests["d"], InputRequest::Roots);
        assert_eq!(ir.request_state.as_deref(), Some("s"));
    }

    #[test]
    fn a_sampling_request_keeps_every_param_it_was_sent_with() {
        let params = json!({"messages": [], "maxTokens": 5, "metadata": {"trace": "t1"}});
        let Ok(Some(InputRequest::Sampling(request))) =
            InputRequest::from_method(SAMPLING, Some(params.clone()))
        else {
            panic!("a sampling request")
        };
        assert_eq!(request.params, params);
    }

    #[test]
    fn an_elicitation_gives_back_its_wire_params() {
        let form =
            json!({"mode": "form", "message": "Name?", "requestedSchema": {"type": "object"}});
        let url =
            json!({"mode": "url", "message": "Go", "url": "https://x.test", "elicitationId": "e1"});
        for params in [form, url] {
            let Ok(Some(InputRequest::Elicitation(request))) =
                InputRequest::from_method(ELICITATION, Some(params.clone()))
            else {
                panic!("an elicitation")
            };
            assert_eq!(request.params(), params);
        }
    }

    #[test]
    fn an_embedded_ping_is_malformed() {
        let r = InputRequired::parse(&object(
            json!({"inputRequests": {"p": {"method": "ping", "params": {}}}}),
        ));
        assert!(r.is_err());
    }

    #[test]
    fn defaults_are_collected_from_the_schema() {
        let form = FormElicitation {
            message: "m".into(),
            requested_schema: json!({"type": "object", "properties": {
                "name": {"type": "string", "default": "John Doe"},
                "age": {"type": "integer", "default": 30},
                "free": {"type": "string"}
            }}),
        };
        assert_eq!(
            Value::Object(form.defaults()),
            json!({"name": "John Doe", "age": 30})
        );
    }

    #[test]
    fn answers_are_written_as_bare_results() {
        let decline = serde_json::to_value(InputResponse::Elicitation(ElicitResult::decline()));
        assert_eq!(decline.ok(), Some(json!({"action": "decline"})));
        let roots = InputResponse::Roots(ListRootsResult {
            roots: vec![Root::new("file:///w", None)],
        });
        assert_eq!(
            serde_json::to_value(roots).ok(),
            Some(json!({"roots": [{"uri": "file:///w"}]}))
        );
    }

    #[test]
    fn the_last_text_of_a_conversation_is_found() {
        let s: SamplingRequest = serde_json::from_value(json!({"maxTokens": 5, "messages": [
            {"role": "user", "content": {"type": "text", "text": "first"}},
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": "second"}]}
        ]}))
        .expect("sampling params");
        assert_eq!(s.last_text(), Some("second"));
    }
}
