//! The capability gate: an input request the request's own client capabilities do not
//! declare is never sent. Pure; reports every missing capability at once, merged, so a client
//! learns in one round trip everything it would need to declare.

use serde_json::Value;

use crate::protocol::input::{Capabilities, InputRequests, Need};
use crate::protocol::ClientCapabilities;

/// The capabilities `requests` need that `declared` lacks, as a `ClientCapabilities`-shaped
/// object; `None` when everything is declared.
///
/// Each request's need is one of a few ([`Need`]), answered by the declaration's own
/// lookups (bits for capabilities declared as `{}`); JSON is built only for what is missing.
/// A bare `elicitation` (neither `form` nor `url`) declares form, as the spec reads it.
pub fn missing_capabilities(
    requests: &InputRequests,
    declared: &ClientCapabilities,
) -> Option<Value> {
    let mut lacking = Capabilities::default();
    for request in requests.values() {
        match request.need() {
            Need::Form => lacking.form |= !declares_form(declared),
            Need::Url => lacking.url |= !declared.has_sub("elicitation", "url"),
            Need::Sampling { tools, context } => {
                lacking.sampling |= !declared.has("sampling");
                lacking.sampling_tools |= tools && !declared.has_sub("sampling", "tools");
                lacking.sampling_context |= context && !declared.has_sub("sampling", "context");
            }
            Need::Roots => lacking.roots |= !declared.has("roots"),
        }
    }
    // The usual round lacks nothing: no map is built for it.
    if lacking == Capabilities::default() {
        return None;
    }
    Some(Value::Object(lacking.to_map()))
}

/// Form elicitation as the gate reads a declaration: `elicitation` declared, unless it names
/// `url` and not `form` (an `elicitation` that is not an object names neither).
fn declares_form(declared: &ClientCapabilities) -> bool {
    match declared.get("elicitation") {
        None => false,
        Some(elicitation) => elicitation
            .as_object()
            .is_none_or(|m| m.contains_key("form") || !m.contains_key("url")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::input::InputRequest;
    use serde_json::json;

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
    fn sampling_with_tools_and_context_reports_both_missing() {
        let r = requests(vec![InputRequest::sampling(json!({
            "messages": [], "maxTokens": 1, "tools": [], "includeContext": "allServers"
        }))]);
        assert_eq!(
            missing_capabilities(&r, &caps(json!({"sampling": {}}))),
            Some(json!({"sampling": {"tools": {}, "context": {}}}))
        );
        assert_eq!(
            missing_capabilities(&r, &caps(json!({"sampling": {"tools": {}, "context": {}}}))),
            None
        );
    }

    #[test]
    fn url_elicitation_is_not_implied_by_a_bare_elicitation() {
        let r = requests(vec![InputRequest::elicit_url("m", "https://example.com")]);
        assert_eq!(
            missing_capabilities(&r, &caps(json!({"elicitation": {}}))),
            Some(json!({"elicitation": {"url": {}}}))
        );
    }

    #[test]
    fn form_elicitation_is_not_implied_by_url_elicitation() {
        let r = requests(vec![InputRequest::elicit_form("m", json!({}))]);
        let url_only = caps(json!({"elicitation": {"url": {}}}));
        assert_eq!(
            missing_capabilities(&r, &url_only),
            Some(json!({"elicitation": {"form": {}}}))
        );
        assert_eq!(url_only, caps(json!({"elicitation": {"url": {}}})));
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

    #[test]
    fn a_declaration_of_bare_capabilities_covers_a_form_plain_sampling_and_roots() {
        let r = requests(vec![
            InputRequest::elicit_form("m", json!({})),
            InputRequest::sample_text("p", 10),
            InputRequest::list_roots(),
        ]);
        let bare = caps(json!({"elicitation": {}, "sampling": {}, "roots": {}}));
        assert_eq!(missing_capabilities(&r, &bare), None);
        let without_roots = caps(json!({"elicitation": {}, "sampling": {}}));
        assert_eq!(
            missing_capabilities(&r, &without_roots),
            Some(json!({"roots": {}}))
        );
    }

    #[test]
    fn a_declaration_kept_whole_is_read_as_json() {
        let r = requests(vec![InputRequest::elicit_form("m", json!({}))]);
        let whole = caps(json!({"elicitation": {"form": {}}, "x-custom": {"a": 1}}));
        assert_eq!(missing_capabilities(&r, &whole), None);
        let whole_without = caps(json!({"roots": {"listChanged": true}}));
        assert_eq!(
            missing_capabilities(&r, &whole_without),
            Some(json!({"elicitation": {"form": {}}}))
        );
    }

    #[test]
    fn with_nothing_declared_what_is_missing_is_what_each_request_requires() {
        let tool = json!({"name": "t", "inputSchema": {"type": "object"}});
        for request in [
            InputRequest::elicit_form("m", json!({})),
            InputRequest::elicit_url("m", "https://example.com"),
            InputRequest::sample_text("p", 10),
            InputRequest::sample(
                crate::protocol::input::Sampling::new(5).tools(vec![tool.clone()]),
            ),
            InputRequest::sampling(
                json!({"messages": [], "maxTokens": 1, "includeContext": "thisServer"}),
            ),
            InputRequest::list_roots(),
        ] {
            let required = request.required_capabilities();
            assert_eq!(
                missing_capabilities(&requests(vec![request]), &caps(json!({}))),
                Some(required)
            );
        }
    }

    #[test]
    fn a_capability_that_is_not_an_object_declares_itself_and_no_sub_capability() {
        // Only an unchecked declaration can hold one: `declared` refuses it with -32602.
        let odd = ClientCapabilities::new(
            json!({"elicitation": true, "sampling": true})
                .as_object()
                .cloned()
                .expect("object"),
        );
        let r = requests(vec![
            InputRequest::elicit_form("m", json!({})),
            InputRequest::elicit_url("m", "https://example.com"),
            InputRequest::sampling(json!({"messages": [], "maxTokens": 1, "tools": []})),
        ]);
        assert_eq!(
            missing_capabilities(&r, &odd),
            Some(json!({"elicitation": {"url": {}}, "sampling": {"tools": {}}}))
        );
    }
}
