//! The input requests a server embeds in an input-required result (SEP-2322), and the answers
//! a client sends back on its retry.
//!
//! An embedded request is `{method, params}` with no id: only `elicitation/create`,
//! `sampling/createMessage` and `roots/list` may be embedded, which is why the constructors
//! are the only way to make one. Answers carry no method, so they stay raw JSON objects with
//! typed views; a view that does not fit yields `None`, and a handler then asks again.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use super::error::McpError;

/// The three kinds of input a server may ask for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InputKind {
    FormElicitation,
    UrlElicitation,
    Sampling,
    SamplingWithTools,
    Roots,
}

/// One embedded request: `{"method": ..., "params": ...}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InputRequest {
    method: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    params: Option<Value>,
}

impl InputRequest {
    /// Form-mode elicitation: a message and a flat JSON schema of what to ask.
    pub fn elicit_form(message: impl Into<String>, requested_schema: Value) -> Self {
        Self::elicitation(
            json!({ "mode": "form", "message": message.into(), "requestedSchema": requested_schema }),
        )
    }

    /// URL-mode elicitation: the user is sent to `url`; acceptance means only that they agreed
    /// to go. Modern requests carry no `elicitationId`; the legacy shim adds one.
    pub fn elicit_url(message: impl Into<String>, url: impl Into<String>) -> Self {
        Self::elicitation(json!({ "mode": "url", "message": message.into(), "url": url.into() }))
    }

    /// Elicitation with caller-built params (for schemas with defaults, enums, and so on).
    /// A params object without `"mode": "url"` is form mode.
    pub fn elicitation(params: Value) -> Self {
        Self {
            method: "elicitation/create",
            params: Some(params),
        }
    }

    /// Sampling with caller-built `CreateMessageRequestParams`.
    pub fn sampling(params: Value) -> Self {
        Self {
            method: "sampling/createMessage",
            params: Some(params),
        }
    }

    /// Sampling of one user text message.
    pub fn sample_text(prompt: impl Into<String>, max_tokens: u32) -> Self {
        Self::sampling(json!({
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt.into() } }],
            "maxTokens": max_tokens,
        }))
    }

    /// `roots/list`: the client's filesystem roots.
    pub fn list_roots() -> Self {
        Self {
            method: "roots/list",
            params: Some(json!({})),
        }
    }

    pub fn method(&self) -> &'static str {
        self.method
    }

    pub fn params(&self) -> Option<&Value> {
        self.params.as_ref()
    }

    /// Mutable params, for transports that must add legacy-only fields (`elicitationId`).
    pub fn params_mut(&mut self) -> Option<&mut Value> {
        self.params.as_mut()
    }

    /// Which capability class this request belongs to (what the gate checks).
    pub fn kind(&self) -> InputKind {
        let param = |k: &str| self.params.as_ref().and_then(|p| p.get(k));
        match self.method {
            "elicitation/create" if param("mode").and_then(Value::as_str) == Some("url") => {
                InputKind::UrlElicitation
            }
            "elicitation/create" => InputKind::FormElicitation,
            "sampling/createMessage"
                if param("tools").is_some() || param("toolChoice").is_some() =>
            {
                InputKind::SamplingWithTools
            }
            "sampling/createMessage" => InputKind::Sampling,
            _ => InputKind::Roots,
        }
    }
}

/// Server-chosen keys to requests; a map keeps keys unique and their order deterministic.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElicitAction {
    Accept,
    Decline,
    Cancel,
}

/// One answer from `inputResponses`: a bare result object (`ElicitResult`,
/// `CreateMessageResult` or `ListRootsResult`).
#[derive(Debug, Clone, PartialEq)]
pub struct InputResponse(Map<String, Value>);

impl InputResponse {
    pub fn new(object: Map<String, Value>) -> Self {
        Self(object)
    }

    pub fn as_object(&self) -> &Map<String, Value> {
        &self.0
    }

    /// The elicitation action, if this answer is an `ElicitResult`.
    pub fn action(&self) -> Option<ElicitAction> {
        self.0
            .get("action")
            .and_then(|a| ElicitAction::deserialize(a).ok())
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
/// would act on garbage).
pub fn parse_input_responses(value: Option<&Value>) -> Result<InputResponses, McpError> {
    let Some(value) = value else {
        return Ok(InputResponses::new());
    };
    let Value::Object(map) = value else {
        return Err(McpError::invalid_params("inputResponses must be an object"));
    };
    map.iter()
        .map(|(key, answer)| match answer {
            Value::Object(o) => Ok((key.clone(), InputResponse::new(o.clone()))),
            _ => Err(McpError::invalid_params(format!(
                "inputResponses[\"{key}\"] must be an object"
            ))),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn null_input_responses_are_rejected() {
        assert!(parse_input_responses(Some(&Value::Null)).is_err());
    }

    #[test]
    fn a_non_object_answer_is_rejected() {
        assert!(parse_input_responses(Some(&json!({"user_name": 12345}))).is_err());
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
    fn sampling_with_tools_is_its_own_kind() {
        let r = InputRequest::sampling(json!({"messages": [], "maxTokens": 5, "tools": []}));
        assert_eq!(r.kind(), InputKind::SamplingWithTools);
    }

    #[test]
    fn elicitation_without_mode_is_form() {
        assert_eq!(
            InputRequest::elicitation(json!({"message": "m", "requestedSchema": {}})).kind(),
            InputKind::FormElicitation
        );
    }

    #[test]
    fn sampled_text_reads_a_text_block() {
        let r = InputResponse::new(json!({"role": "assistant", "content": {"type": "text", "text": "Paris"}, "model": "m"}).as_object().cloned().expect("object"));
        assert_eq!(r.sampled_text(), Some("Paris"));
    }
}
