//! Whether an answer given whole (an `--answer`, a sampling command's output) is the kind of
//! answer its request wants, checked before it is sent, so that a typo is reported here,
//! naming the key, instead of the server asking again for reasons it does not send back.
//!
//! An accepted form's content is checked against the form's own rules (the ones the terminal
//! form applies) when the schema is one the form can read; otherwise it is sent as given.

use serde_json::{Map, Value};

use super::method::InputMethod;
use crate::terminal::check::Invalid;
use crate::terminal::FormSchema;

/// How an answer does not fit its request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Misfit {
    #[error("an ElicitResult needs \"action\": \"accept\", \"decline\" or \"cancel\"")]
    NoAction,
    #[error("an accepted form needs \"content\", an object")]
    NoContent,
    #[error("an accepted URL elicitation carries no \"content\"")]
    UrlContent,
    #[error("content has '{0}', which the form does not ask for")]
    UnknownField(String),
    #[error("content lacks '{0}', which the form requires")]
    MissingField(String),
    #[error("content field '{key}': {invalid}")]
    BadField { key: String, invalid: Invalid },
    #[error("a CreateMessageResult needs \"role\" and \"model\" strings and a \"content\"")]
    NotAMessage,
    #[error("a ListRootsResult needs \"roots\", an array of objects each with a \"uri\" string")]
    NotRoots,
}

/// Checks `answer` against the request (`method`, `params`) it answers.
pub fn check(
    method: InputMethod,
    params: &Value,
    answer: &Map<String, Value>,
) -> Result<(), Misfit> {
    match method {
        InputMethod::Elicitation => elicitation(params, answer),
        InputMethod::Sampling => sampling(answer),
        InputMethod::Roots => roots(answer),
    }
}

/// A `CreateMessageResult`'s required members.
pub fn sampling(answer: &Map<String, Value>) -> Result<(), Misfit> {
    let is_str = |k: &str| answer.get(k).is_some_and(Value::is_string);
    if is_str("role") && is_str("model") && answer.contains_key("content") {
        Ok(())
    } else {
        Err(Misfit::NotAMessage)
    }
}

fn roots(answer: &Map<String, Value>) -> Result<(), Misfit> {
    let roots = answer
        .get("roots")
        .and_then(Value::as_array)
        .ok_or(Misfit::NotRoots)?;
    if roots
        .iter()
        .all(|r| r.get("uri").is_some_and(Value::is_string))
    {
        Ok(())
    } else {
        Err(Misfit::NotRoots)
    }
}

fn elicitation(params: &Value, answer: &Map<String, Value>) -> Result<(), Misfit> {
    let action = answer.get("action").and_then(Value::as_str);
    match action {
        Some("decline" | "cancel") => return Ok(()),
        Some("accept") => {}
        _ => return Err(Misfit::NoAction),
    }
    let content = answer.get("content");
    if params.get("mode").and_then(Value::as_str) == Some("url") {
        return match content {
            None => Ok(()),
            Some(_) => Err(Misfit::UrlContent),
        };
    }
    let content = content
        .and_then(Value::as_object)
        .ok_or(Misfit::NoContent)?;
    match params.get("requestedSchema").map(FormSchema::parse) {
        Some(Ok(form)) => form_content(&form, content),
        // A form the terminal cannot show can still be answered whole: that is what
        // `--answer` is for.
        _ => Ok(()),
    }
}

fn form_content(form: &FormSchema, content: &Map<String, Value>) -> Result<(), Misfit> {
    if let Some(unknown) = content
        .keys()
        .find(|k| !form.fields.iter().any(|f| &f.key == *k))
    {
        return Err(Misfit::UnknownField(unknown.clone()));
    }
    for field in &form.fields {
        match content.get(&field.key) {
            None if field.required => return Err(Misfit::MissingField(field.key.clone())),
            None => {}
            Some(value) => field.check(value).map_err(|invalid| Misfit::BadField {
                key: field.key.clone(),
                invalid,
            })?,
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().expect("an object")
    }

    fn form_params() -> Value {
        json!({"message": "m", "requestedSchema": {"type": "object", "required": ["age"],
            "properties": {"age": {"type": "integer", "maximum": 150}, "nick": {"type": "string"}}}})
    }

    fn elicit(answer: Value) -> Result<(), Misfit> {
        check(InputMethod::Elicitation, &form_params(), &object(answer))
    }

    #[test]
    fn an_accepted_form_that_fits_its_schema_passes() {
        assert_eq!(
            elicit(json!({"action": "accept", "content": {"age": 36}})),
            Ok(())
        );
    }

    #[test]
    fn decline_and_cancel_need_no_content() {
        assert_eq!(elicit(json!({"action": "decline"})), Ok(()));
        assert_eq!(elicit(json!({"action": "cancel"})), Ok(()));
    }

    #[test]
    fn an_unknown_action_is_refused() {
        assert_eq!(elicit(json!({"action": "yes"})), Err(Misfit::NoAction));
    }

    #[test]
    fn accepted_content_is_checked_field_by_field() {
        assert_eq!(
            elicit(json!({"action": "accept", "content": {"age": 200}})),
            Err(Misfit::BadField {
                key: "age".into(),
                invalid: Invalid::AboveMaximum(150.0)
            })
        );
        assert_eq!(
            elicit(json!({"action": "accept", "content": {"nick": "a"}})),
            Err(Misfit::MissingField("age".into()))
        );
        assert_eq!(
            elicit(json!({"action": "accept", "content": {"age": 1, "zip": "x"}})),
            Err(Misfit::UnknownField("zip".into()))
        );
    }

    #[test]
    fn a_form_the_terminal_cannot_show_is_answered_as_given() {
        let params = json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"address": {"type": "object"}}}});
        let answer = object(json!({"action": "accept", "content": {"address": {"city": "X"}}}));
        assert_eq!(check(InputMethod::Elicitation, &params, &answer), Ok(()));
    }

    #[test]
    fn an_accepted_url_elicitation_has_no_content() {
        let params = json!({"mode": "url", "message": "m", "url": "https://example.com"});
        let with_content = object(json!({"action": "accept", "content": {}}));
        assert_eq!(
            check(InputMethod::Elicitation, &params, &with_content),
            Err(Misfit::UrlContent)
        );
    }

    #[test]
    fn a_sampling_answer_needs_role_content_and_model() {
        let good = object(json!({"role": "assistant", "model": "m",
            "content": {"type": "text", "text": "hi"}}));
        assert_eq!(check(InputMethod::Sampling, &json!({}), &good), Ok(()));
        let bad = object(json!({"role": "assistant", "content": "hi"}));
        assert_eq!(
            check(InputMethod::Sampling, &json!({}), &bad),
            Err(Misfit::NotAMessage)
        );
    }

    #[test]
    fn a_roots_answer_needs_uris() {
        let good = object(json!({"roots": [{"uri": "file:///tmp"}]}));
        assert_eq!(check(InputMethod::Roots, &Value::Null, &good), Ok(()));
        let bad = object(json!({"roots": [{"name": "tmp"}]}));
        assert_eq!(
            check(InputMethod::Roots, &Value::Null, &bad),
            Err(Misfit::NotRoots)
        );
    }
}
