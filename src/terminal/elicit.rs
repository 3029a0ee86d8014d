//! An `elicitation/create` request's params, asked of a person: form mode (`mode` absent or
//! `"form"`) or URL mode (`"url"`). Params that cannot be asked are an [`ElicitError`], never
//! a guess.

use serde_json::Value;

use super::ask::{Ask, Stop};
use super::form;
use super::result::ElicitResult;
use super::schema::{FormSchema, SchemaError};
use super::url;

/// Why an elicitation got no answer from the person.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ElicitError {
    #[error("the elicitation's params are not an object with a string \"message\"")]
    NoMessage,
    #[error("unknown elicitation mode '{0}' (known: form, url)")]
    UnknownMode(String),
    #[error("the form cannot be shown: {0}")]
    Schema(#[from] SchemaError),
    #[error("the URL elicitation's \"url\" is not a URI: {0:?}")]
    BadUrl(String),
    #[error(transparent)]
    Stopped(#[from] Stop),
}

/// Asks the person for the answer to `params` (an `ElicitRequestFormParams` or
/// `ElicitRequestURLParams`).
pub fn elicit<A: Ask>(ask: &mut A, params: &Value) -> Result<ElicitResult, ElicitError> {
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .ok_or(ElicitError::NoMessage)?;
    match params.get("mode").and_then(Value::as_str) {
        None | Some("form") => {
            let schema = params.get("requestedSchema").unwrap_or(&Value::Null);
            let schema = FormSchema::parse(schema)?;
            Ok(form::fill_in(ask, message, &schema)?)
        }
        Some("url") => {
            let raw = params.get("url").and_then(Value::as_str).unwrap_or("");
            let parsed =
                fluent_uri::Uri::parse(raw).map_err(|_| ElicitError::BadUrl(raw.to_owned()))?;
            Ok(url::consent(ask, message, &parsed)?)
        }
        Some(other) => Err(ElicitError::UnknownMode(other.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::scripted::{Scripted, Step};
    use serde_json::json;

    #[test]
    fn params_without_mode_are_a_form() {
        let mut ask = Scripted::new(vec![Step::Choose("Decline")]);
        let params =
            json!({"message": "m", "requestedSchema": {"type": "object", "properties": {}}});
        let result = elicit(&mut ask, &params).expect("an answer");
        assert_eq!(result, ElicitResult::decline());
        assert!(ask.saw("select: Answer this form?"));
    }

    #[test]
    fn url_mode_asks_for_consent() {
        let mut ask = Scripted::new(vec![Step::Enter]);
        let params = json!({"mode": "url", "message": "m", "url": "https://example.com/x"});
        let result = elicit(&mut ask, &params).expect("an answer");
        assert_eq!(result, ElicitResult::consent());
    }

    #[test]
    fn a_nested_schema_is_a_typed_error_and_asks_nothing() {
        let mut ask = Scripted::new(vec![]);
        let params = json!({"message": "m", "requestedSchema": {"type": "object",
            "properties": {"address": {"type": "object"}}}});
        let error = elicit(&mut ask, &params).expect_err("not a form");
        assert!(
            matches!(error, ElicitError::Schema(SchemaError::Field { .. })),
            "{error:?}"
        );
        assert_eq!(
            error.to_string(),
            "the form cannot be shown: field 'address' has type \"object\"; a form field is a \
             string, number, integer, boolean or an array of enum strings"
        );
        assert_eq!(ask.lines().count(), 0);
    }

    #[test]
    fn a_missing_schema_is_a_typed_error() {
        let mut ask = Scripted::new(vec![]);
        let error = elicit(&mut ask, &json!({"message": "m"})).expect_err("no schema");
        assert!(matches!(
            error,
            ElicitError::Schema(SchemaError::NotAnObject)
        ));
    }

    #[test]
    fn a_url_that_is_not_a_uri_is_a_typed_error() {
        let mut ask = Scripted::new(vec![]);
        let params = json!({"mode": "url", "message": "m", "url": "not a url"});
        let error = elicit(&mut ask, &params).expect_err("bad url");
        assert!(matches!(error, ElicitError::BadUrl(_)));
    }

    #[test]
    fn an_unknown_mode_is_a_typed_error() {
        let mut ask = Scripted::new(vec![]);
        let error = elicit(&mut ask, &json!({"mode": "voice", "message": "m"})).expect_err("mode");
        assert!(matches!(error, ElicitError::UnknownMode(m) if m == "voice"));
    }
}
