//! The capability gate: an input request the request's own client capabilities do not
//! declare is never sent. Pure; reports every missing capability at once, merged, so a client
//! learns in one round trip everything it would need to declare.

use serde_json::{json, Map, Value};

use crate::protocol::input::{InputKind, InputRequests};
use crate::protocol::ClientCapabilities;

/// The capabilities `requests` need that `declared` lacks, as a `ClientCapabilities`-shaped
/// object; `None` when everything is declared.
pub fn missing_capabilities(
    requests: &InputRequests,
    declared: &ClientCapabilities,
) -> Option<Value> {
    let mut missing = Map::new();
    for request in requests.values() {
        let (allowed, need) = match request.kind() {
            InputKind::FormElicitation => (
                declared.allows_form_elicitation(),
                json!({"elicitation": {"form": {}}}),
            ),
            InputKind::UrlElicitation => (
                declared.allows_url_elicitation(),
                json!({"elicitation": {"url": {}}}),
            ),
            InputKind::Sampling => (declared.has("sampling"), json!({"sampling": {}})),
            InputKind::SamplingWithTools => (
                declared.has_sub("sampling", "tools"),
                json!({"sampling": {"tools": {}}}),
            ),
            InputKind::Roots => (declared.has("roots"), json!({"roots": {}})),
        };
        if !allowed {
            if let Value::Object(need) = need {
                merge(&mut missing, need);
            }
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

fn merge(into: &mut Map<String, Value>, from: Map<String, Value>) {
    for (key, value) in from {
        match (into.get_mut(&key), value) {
            (Some(Value::Object(existing)), Value::Object(more)) => merge(existing, more),
            (_, value) => {
                into.entry(key).or_insert(value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::input::InputRequest;

    fn caps(v: Value) -> ClientCapabilities {
        ClientCapabilities::new(v.as_object().cloned().unwrap_or_default())
    }

    fn requests(list: Vec<InputRequest>) -> InputRequests {
        list.into_iter()
            .enumerate()
            .map(|(i, r)| (format!("k{i}"), r))
            .collect()
    }

    #[test]
    fn every_missing_capability_is_reported_merged() {
        let r = requests(vec![
            InputRequest::elicit_form("m", json!({})),
            InputRequest::elicit_url("m", "https://example.com"),
            InputRequest::sample_text("p", 10),
            InputRequest::list_roots(),
        ]);
        assert_eq!(
            missing_capabilities(&r, &caps(json!({}))),
            Some(json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}}))
        );
    }

    #[test]
    fn declared_capabilities_pass() {
        let r = requests(vec![
            InputRequest::elicit_form("m", json!({})),
            InputRequest::list_roots(),
        ]);
        assert_eq!(
            missing_capabilities(&r, &caps(json!({"elicitation": {}, "roots": {}}))),
            None
        );
    }

    #[test]
    fn tool_sampling_needs_sampling_tools() {
        let r = requests(vec![InputRequest::sampling(
            json!({"messages": [], "maxTokens": 1, "toolChoice": {"mode": "auto"}}),
        )]);
        assert_eq!(
            missing_capabilities(&r, &caps(json!({"sampling": {}}))),
            Some(json!({"sampling": {"tools": {}}}))
        );
        assert_eq!(
            missing_capabilities(&r, &caps(json!({"sampling": {"tools": {}}}))),
            None
        );
    }
}
