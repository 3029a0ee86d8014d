//! `--answer KEY=JSON`: an input request answered on the command line.
//!
//! KEY is the key of the request in the server's `inputRequests`. JSON is the whole answer, as
//! it goes into `inputResponses[KEY]`: an `ElicitResult` (`{"action":"accept","content":{...}}`),
//! a `CreateMessageResult` or a `ListRootsResult`. Whole, not just the form's content, so one
//! flag answers every kind of request and can also decline or cancel. Each flag answers its
//! key once: a server that asks the same key again did not take the answer, and sending it
//! again would only loop.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One `--answer`, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct PresetAnswer {
    pub key: String,
    pub answer: Map<String, Value>,
}

/// Why an `--answer` cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PresetError {
    #[error(
        "expected KEY=JSON, e.g. name='{{\"action\":\"accept\",\"content\":{{\"name\":\"Ada\"}}}}'"
    )]
    NoEquals,
    #[error("the KEY before '=' is empty")]
    EmptyKey,
    #[error("the answer to '{key}' is not JSON: {problem}")]
    NotJson {
        key: String,
        problem: serde_json::Error,
    },
    #[error("the answer to '{key}' is not a JSON object (the whole answer, e.g. an ElicitResult)")]
    NotAnObject { key: String },
    #[error("'{0}' is answered twice")]
    Twice(String),
}

/// Parses one `KEY=JSON` (clap's value parser for `--answer`). The key ends at the first `=`.
pub fn parse_preset(arg: &str) -> Result<PresetAnswer, PresetError> {
    let (key, json) = arg.split_once('=').ok_or(PresetError::NoEquals)?;
    if key.is_empty() {
        return Err(PresetError::EmptyKey);
    }
    let key = key.to_owned();
    match serde_json::from_str(json) {
        Ok(Value::Object(answer)) => Ok(PresetAnswer { key, answer }),
        Ok(_) => Err(PresetError::NotAnObject { key }),
        Err(problem) => Err(PresetError::NotJson { key, problem }),
    }
}

/// Every `--answer`, by key, each to be used once.
#[derive(Debug, Clone, Default)]
pub struct PresetAnswers(BTreeMap<String, Map<String, Value>>);

impl PresetAnswers {
    /// The answers; a key given twice is an error rather than a silent choice.
    pub fn new(presets: Vec<PresetAnswer>) -> Result<PresetAnswers, PresetError> {
        let mut answers = BTreeMap::new();
        for PresetAnswer { key, answer } in presets {
            if answers.contains_key(&key) {
                return Err(PresetError::Twice(key));
            }
            answers.insert(key, answer);
        }
        Ok(PresetAnswers(answers))
    }

    /// The answer to `key`, which is then used up.
    pub fn take(&mut self, key: &str) -> Option<Map<String, Value>> {
        self.0.remove(key)
    }

    /// Is one of the answers an object with member `field` (a `CreateMessageResult` has
    /// `model`, a `ListRootsResult` `roots`)?
    pub fn any_with(&self, field: &str) -> bool {
        self.0.values().any(|answer| answer.contains_key(field))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn key_and_whole_answer_are_split_at_the_first_equals() {
        let preset = parse_preset(r#"user_name={"action":"accept","content":{"eq":"a=b"}}"#)
            .expect("a preset");
        assert_eq!(preset.key, "user_name");
        assert_eq!(
            Value::Object(preset.answer),
            json!({"action": "accept", "content": {"eq": "a=b"}})
        );
    }

    #[test]
    fn an_argument_without_equals_is_refused_with_an_example() {
        let error = parse_preset("user_name").expect_err("no =");
        assert!(matches!(error, PresetError::NoEquals));
        assert!(error.to_string().contains("KEY=JSON"));
    }

    #[test]
    fn an_empty_key_is_refused() {
        assert!(matches!(parse_preset("={}"), Err(PresetError::EmptyKey)));
    }

    #[test]
    fn bad_json_is_refused_naming_the_key() {
        let error = parse_preset("k={action:accept}").expect_err("not JSON");
        assert!(matches!(&error, PresetError::NotJson { key, .. } if key == "k"));
        assert!(error
            .to_string()
            .starts_with("the answer to 'k' is not JSON: "));
    }

    #[test]
    fn json_that_is_not_an_object_is_refused() {
        assert!(matches!(
            parse_preset("k=\"accept\""),
            Err(PresetError::NotAnObject { .. })
        ));
    }

    #[test]
    fn a_key_answered_twice_is_refused() {
        let presets = vec![
            parse_preset("k={}").expect("a preset"),
            parse_preset("k={}").expect("a preset"),
        ];
        assert!(matches!(PresetAnswers::new(presets), Err(PresetError::Twice(k)) if k == "k"));
    }

    #[test]
    fn an_answer_is_used_once() {
        let mut answers =
            PresetAnswers::new(vec![parse_preset("k={}").expect("a preset")]).expect("answers");
        assert_eq!(answers.take("k"), Some(Map::new()));
        assert_eq!(answers.take("k"), None);
    }
}
