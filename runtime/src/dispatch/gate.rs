//! The capability gate: an input request the request's own client capabilities do not
//! declare is never sent. Pure; reports every missing capability at once, merged, so a client
//! learns in one round trip everything it would need to declare.

use serde_json::{Map, Value};

use crate::protocol::input::{InputRequest, InputRequests};
use crate::protocol::ClientCapabilities;

/// The capabilities `requests` need that `declared` lacks, as a `ClientCapabilities`-shaped
/// object; `None` when everything is declared.
///
/// Most rounds ask for what a client declared as `{}` (a form under a bare `elicitation`,
/// plain sampling, roots), which the capabilities' bits answer at once, without the JSON
/// walk (BENCHMARKS.md, "2026-12-06 (morning)"). The walk is for the rest, and for naming
/// what is missing.
pub fn missing_capabilities(
    requests: &InputRequests,
    declared: &ClientCapabilities,
) -> Option<Value> {
    let covered = |request: &InputRequest| {
        request
            .covered_by_bare()
            .is_some_and(|name| declared.declares_bare(name))
    };
    if requests.values().all(covered) {
        return None;
    }
    let mut missing = Map::new();
    for request in requests.values() {
        if let Value::Object(required) = &*request.required_capabilities() {
            merge(
                &mut missing,
                missing_from(required, &|key| declared.get(key), None),
            );
        }
    }
    (!missing.is_empty()).then_some(Value::Object(missing))
}

/// What of `required` is not in `declared` (a lookup of what is declared under a key): an
/// absent key is missing with its whole subtree; a present one is descended only where the
/// requirement names sub-capabilities. A bare `elicitation` (neither `form` nor `url`)
/// declares form, as the spec reads it: `implied` names the sub-capability the parent declared
/// that way.
fn missing_from<'a>(
    required: &Map<String, Value>,
    declared: &dyn Fn(&str) -> Option<&'a Value>,
    implied: Option<&str>,
) -> Map<String, Value> {
    let mut missing = Map::new();
    for (key, need) in required {
        if implied == Some(key.as_str()) {
            continue;
        }
        let Some(have) = declared(key) else {
            missing.insert(key.clone(), need.clone());
            continue;
        };
        let Some(need) = need.as_object().filter(|n| !n.is_empty()) else {
            continue;
        };
        let have = have.as_object();
        let has = |sub: &str| have.is_some_and(|h| h.contains_key(sub));
        let bare = key == "elicitation" && !has("form") && !has("url");
        let sub = missing_from(
            need,
            &|sub| have.and_then(|h| h.get(sub)),
            bare.then_some("form"),
        );
        if !sub.is_empty() {
            missing.insert(key.clone(), Value::Object(sub));
        }
    }
    missing
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
}
