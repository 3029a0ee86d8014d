//! `ElicitResult`, what the person's answer to an elicitation becomes on the wire.

use roundtrip_runtime::protocol::input::ElicitAction;
use serde_json::{Map, Value};

/// `{"action": "accept", "content": {...}}`, `{"action": "decline"}` or `{"action": "cancel"}`.
/// `content` is there only for an accepted form (an accepted URL elicitation has none).
#[derive(Debug, Clone, PartialEq)]
pub struct ElicitResult {
    pub action: ElicitAction,
    pub content: Option<Map<String, Value>>,
}

impl ElicitResult {
    pub fn accept(content: Map<String, Value>) -> ElicitResult {
        ElicitResult {
            action: ElicitAction::Accept,
            content: Some(content),
        }
    }

    /// Accepted without content: URL mode, where the answer means only "I will go there".
    pub fn consent() -> ElicitResult {
        ElicitResult::only(ElicitAction::Accept)
    }

    pub fn decline() -> ElicitResult {
        ElicitResult::only(ElicitAction::Decline)
    }

    pub fn cancel() -> ElicitResult {
        ElicitResult::only(ElicitAction::Cancel)
    }

    fn only(action: ElicitAction) -> ElicitResult {
        ElicitResult {
            action,
            content: None,
        }
    }

    /// The JSON object sent under the request's key in `inputResponses`.
    pub fn to_json(&self) -> Value {
        let mut object = Map::new();
        object.insert("action".into(), Value::from(self.action.as_str()));
        if let Some(content) = &self.content {
            object.insert("content".into(), Value::Object(content.clone()));
        }
        Value::Object(object)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_accepted_form_carries_its_content() {
        let content = json!({"name": "Ada"})
            .as_object()
            .cloned()
            .expect("an object");
        assert_eq!(
            ElicitResult::accept(content).to_json(),
            json!({"action": "accept", "content": {"name": "Ada"}})
        );
    }

    #[test]
    fn decline_cancel_and_consent_carry_no_content() {
        assert_eq!(
            ElicitResult::decline().to_json(),
            json!({"action": "decline"})
        );
        assert_eq!(
            ElicitResult::cancel().to_json(),
            json!({"action": "cancel"})
        );
        assert_eq!(
            ElicitResult::consent().to_json(),
            json!({"action": "accept"})
        );
    }
}
