//! Checking a round's elicitation answers against the `requestedSchema` that asked for them
//! (the spec: a server SHOULD check that accepted `content` matches the schema it sent).
//!
//! [`AnswerSchemas`] holds the compiled schemas of one round's form elicitations, by input
//! key, as compact bytes (`FormSchema`): on the stateless wire they travel in the sealed
//! `requestState` to the retry, on a legacy session the shim keeps them while the client
//! answers. [`AnswerSchemas::check`] then looks at each answer whose key was asked:
//! - `decline` and `cancel` carry no content to check, and pass;
//! - `accept` must come with an object `content` (or none), whose values must fit their
//!   properties, and which must hold every required property;
//! - any other `action` is not an `ElicitResult`, and is refused.
//!
//! What is left alone, as the spec asks servers to ignore extra keys and data: an answer for
//! a key that was not asked (or not as a form), and a content field the schema does not name.
//! A key that was asked and not answered is not an error either: the handler decides (and
//! usually asks again).
//!
//! The answers are attacker input, so the work is bounded by them and by the schema: each
//! asked key is looked up once, each schema property once, each value is read once (a
//! multi-select's options are searched by bisection, so an array of many items costs each item
//! a logarithm of the options, not a scan). Extra keys and fields are never visited.

use serde_json::Value;

use super::form_schema::{fields, write_str, Field, Items, Reader, Rule, Unreadable};
use super::input::{InputRequests, InputResponses};

/// The compiled requested schemas of one round's form elicitations: `key:str schema:str`
/// repeated, in key order (the `str` of `form_schema`'s layout). Empty when the round asked
/// no form.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AnswerSchemas(Vec<u8>);

impl AnswerSchemas {
    /// The schemas of the form elicitations among `requests`. Each request compiles its schema
    /// once, the first time it is asked for (see `InputRequest::form_schema`), into the layout of
    /// `form_schema`.
    pub(crate) fn of(requests: &InputRequests) -> AnswerSchemas {
        let mut out = Vec::new();
        for (key, request) in requests {
            if let Some(schema) = request.form_schema() {
                // Room for both, and a two-byte varint before each: one allocation for a form.
                out.reserve(key.len() + schema.as_bytes().len() + 4);
                write_str(&mut out, key.as_bytes());
                write_str(&mut out, schema.as_bytes());
            }
        }
        AnswerSchemas(out)
    }

    /// Schemas carried as bytes (opened from a sealed state), exactly as [`as_bytes`] gave them.
    ///
    /// [`as_bytes`]: AnswerSchemas::as_bytes
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> AnswerSchemas {
        AnswerSchemas(bytes)
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }

    /// Checks every answer in `answers` whose key these schemas asked; the first mismatch,
    /// in key order and then property order, is the error.
    ///
    /// # Errors
    ///
    /// [`CheckError::Mismatch`] naming the key and the problem; [`CheckError::Unreadable`] if
    /// the bytes are not ones [`AnswerSchemas::of`] wrote (a bug: they are only ever read
    /// back authenticated).
    pub(crate) fn check(&self, answers: &InputResponses) -> Result<(), CheckError> {
        let mut reader = Reader(&self.0);
        while !reader.0.is_empty() {
            let (Some(key), Some(schema)) = (reader.str(), reader.str_bytes()) else {
                return Err(CheckError::Unreadable(Unreadable));
            };
            if let Some(answer) = answers.get(key) {
                check_answer(schema, answer.as_object()).map_err(|e| match e {
                    Refusal::Problem(problem) => CheckError::Mismatch(Mismatch {
                        key: key.to_owned(),
                        problem,
                    }),
                    Refusal::Unreadable(u) => CheckError::Unreadable(u),
                })?;
            }
        }
        Ok(())
    }
}

/// Why a round's answers were refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum CheckError {
    #[error(transparent)]
    Mismatch(Mismatch),
    #[error(transparent)]
    Unreadable(Unreadable),
}

/// An answer that does not fit the schema its key was asked with. Displays as the modern
/// wire phrases it: `inputResponses.<key>: <problem>`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("inputResponses.{key}: {problem}")]
pub(crate) struct Mismatch {
    /// The input key, as the server chose it.
    pub(crate) key: String,
    pub(crate) problem: Problem,
}

/// What is wrong with an answer. Field names come from the server's schema; no value of the
/// client's is repeated back.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum Problem {
    #[error("action must be \"accept\", \"decline\" or \"cancel\"")]
    Action,
    #[error("content must be an object")]
    Content,
    #[error("field '{0}' is required")]
    Missing(String),
    #[error("field '{field}' must be {expected}")]
    Type {
        field: String,
        expected: &'static str,
    },
    #[error("field '{0}' must be one of the schema's options")]
    NotAnOption(String),
    #[error("field '{field}' must have at least {min} characters")]
    TooShort { field: String, min: u64 },
    #[error("field '{field}' must have at most {max} characters")]
    TooLong { field: String, max: u64 },
    #[error("field '{field}' must be a valid {format}")]
    Format { field: String, format: &'static str },
    #[error("field '{field}' must be at least {min}")]
    BelowMinimum { field: String, min: f64 },
    #[error("field '{field}' must be at most {max}")]
    AboveMaximum { field: String, max: f64 },
    #[error("field '{field}' must have at least {min} items")]
    TooFewItems { field: String, min: u64 },
    #[error("field '{field}' must have at most {max} items")]
    TooManyItems { field: String, max: u64 },
    #[error("field '{field}' item {index} must be a string")]
    ItemType { field: String, index: usize },
    #[error("field '{field}' item {index} must be one of the schema's options")]
    ItemNotAnOption { field: String, index: usize },
}

enum Refusal {
    Problem(Problem),
    Unreadable(Unreadable),
}

impl From<Problem> for Refusal {
    fn from(problem: Problem) -> Self {
        Refusal::Problem(problem)
    }
}

/// One answer (an `ElicitResult`) against one compiled schema.
fn check_answer(schema: &[u8], answer: &serde_json::Map<String, Value>) -> Result<(), Refusal> {
    match answer.get("action").and_then(Value::as_str) {
        Some("accept") => {}
        Some("decline" | "cancel") => return Ok(()),
        _ => return Err(Problem::Action.into()),
    }
    let content = match answer.get("content") {
        None => None,
        Some(Value::Object(content)) => Some(content),
        Some(_) => return Err(Problem::Content.into()),
    };
    for field in fields(schema) {
        let field = field.map_err(Refusal::Unreadable)?;
        match content.and_then(|c| c.get(field.name)) {
            Some(value) => check_value(&field, value)?,
            None if field.required => return Err(Problem::Missing(field.name.to_owned()).into()),
            None => {}
        }
    }
    Ok(())
}

/// One content value against its property.
fn check_value(field: &Field<'_>, value: &Value) -> Result<(), Problem> {
    let name = || field.name.to_owned();
    let wrong_type = |expected| Problem::Type {
        field: name(),
        expected,
    };
    match field.rule {
        Rule::Any => Ok(()),
        Rule::Boolean if value.is_boolean() => Ok(()),
        Rule::Boolean => Err(wrong_type("a boolean")),
        Rule::String {
            min_length,
            max_length,
            format,
            options,
        } => {
            let Some(s) = value.as_str() else {
                return Err(match options {
                    Some(_) => Problem::NotAnOption(name()),
                    None => wrong_type("a string"),
                });
            };
            if options.is_some_and(|o| !o.contains(s)) {
                return Err(Problem::NotAnOption(name()));
            }
            // Lengths count characters, as JSON Schema does. There are never more characters
            // than bytes, so the byte length settles most cases without counting.
            let bytes = s.len() as u64;
            let chars = || s.chars().count() as u64;
            if let Some(min) = min_length.filter(|&min| bytes < min || chars() < min) {
                return Err(Problem::TooShort { field: name(), min });
            }
            if let Some(max) = max_length.filter(|&max| bytes > max && chars() > max) {
                return Err(Problem::TooLong { field: name(), max });
            }
            match format {
                Some(format) if !format.matches(s) => Err(Problem::Format {
                    field: name(),
                    format: format.name(),
                }),
                _ => Ok(()),
            }
        }
        Rule::Number {
            integer,
            minimum,
            maximum,
        } => {
            let Some(n) = value.as_f64() else {
                return Err(wrong_type(if integer { "an integer" } else { "a number" }));
            };
            // JSON Schema's integer is a number without a fraction: 2.0 is one.
            if integer && !(value.is_i64() || value.is_u64() || n.fract() == 0.0) {
                return Err(wrong_type("an integer"));
            }
            if let Some(min) = minimum.filter(|&min| n < min) {
                return Err(Problem::BelowMinimum { field: name(), min });
            }
            if let Some(max) = maximum.filter(|&max| n > max) {
                return Err(Problem::AboveMaximum { field: name(), max });
            }
            Ok(())
        }
        Rule::Array {
            min_items,
            max_items,
            items,
        } => {
            let Some(values) = value.as_array() else {
                return Err(wrong_type("an array"));
            };
            let len = values.len() as u64;
            if let Some(min) = min_items.filter(|&min| len < min) {
                return Err(Problem::TooFewItems { field: name(), min });
            }
            if let Some(max) = max_items.filter(|&max| len > max) {
                return Err(Problem::TooManyItems { field: name(), max });
            }
            check_items(field.name, items, values)
        }
    }
}

/// The items of a multi-select.
fn check_items(field: &str, items: Items<'_>, values: &[Value]) -> Result<(), Problem> {
    // The options are stored sorted: collected once, each item is found by bisection.
    let options: Option<Vec<&[u8]>> = match items {
        Items::Any => return Ok(()),
        Items::Strings => None,
        Items::OneOf(options) => Some(options.iter().collect()),
    };
    for (index, value) in values.iter().enumerate() {
        let Some(s) = value.as_str() else {
            return Err(match options {
                Some(_) => Problem::ItemNotAnOption {
                    field: field.to_owned(),
                    index,
                },
                None => Problem::ItemType {
                    field: field.to_owned(),
                    index,
                },
            });
        };
        if options
            .as_ref()
            .is_some_and(|o| o.binary_search(&s.as_bytes()).is_err())
        {
            return Err(Problem::ItemNotAnOption {
                field: field.to_owned(),
                index,
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::input::{InputRequest, InputResponse};
    use serde_json::json;

    /// `answers` checked against one form asked under `user_name` with `schema`.
    fn check_answers(schema: Value, answers: Value) -> Result<(), CheckError> {
        let mut requests = InputRequests::new();
        requests.insert(
            "user_name".into(),
            InputRequest::elicit_form("Who?", schema),
        );
        let Value::Object(answers) = answers else {
            panic!("answers must be an object: {answers}");
        };
        let answers = answers
            .into_iter()
            .map(|(key, answer)| match answer {
                Value::Object(a) => (key, InputResponse::new(a)),
                other => panic!("an answer must be an object: {other}"),
            })
            .collect();
        AnswerSchemas::of(&requests).check(&answers)
    }

    /// An accepted answer with `content`, under the asked key.
    fn check(schema: Value, content: Value) -> Result<(), CheckError> {
        check_answers(
            schema,
            json!({"user_name": {"action": "accept", "content": content}}),
        )
    }

    /// A form of the one optional property `field`.
    fn one(property: Value) -> Value {
        json!({"type": "object", "properties": {"field": property}})
    }

    /// A form of the one required string `name`.
    fn name_required() -> Value {
        json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]})
    }

    /// The problem `check` reports; panics if it passed.
    fn problem(schema: Value, content: Value) -> Problem {
        match check(schema, content) {
            Err(CheckError::Mismatch(m)) => {
                assert_eq!(m.key, "user_name");
                m.problem
            }
            other => panic!("expected a mismatch, got {other:?}"),
        }
    }

    /// `field: good` fits `property` and `field: bad` does not: what is wrong with `bad`.
    fn fits_then_refused(property: Value, good: Value, bad: Value) -> Problem {
        let schema = one(property);
        assert_eq!(
            check(schema.clone(), json!({ "field": good })),
            Ok(()),
            "{good}"
        );
        problem(schema, json!({ "field": bad }))
    }

    fn field() -> String {
        "field".to_owned()
    }

    fn wrong_type(expected: &'static str) -> Problem {
        Problem::Type {
            field: field(),
            expected,
        }
    }

    /// `good` fits a string of `format` and `bad` is refused as not of it.
    fn fits_then_refused_as_format(format: &'static str, good: &str, bad: &str) {
        let property = json!({"type": "string", "format": format});
        let got = fits_then_refused(property, json!(good), json!(bad));
        assert_eq!(
            got,
            Problem::Format {
                field: field(),
                format
            }
        );
    }

    #[test]
    fn a_string_field_takes_a_string() {
        assert_eq!(
            check(one(json!({"type": "string"})), json!({"field": "Ada"})),
            Ok(())
        );
    }

    #[test]
    fn a_number_where_a_string_is_wanted_is_refused() {
        let got = fits_then_refused(json!({"type": "string"}), json!("7"), json!(7));
        assert_eq!(got, wrong_type("a string"));
    }

    #[test]
    fn min_length_counts_characters_not_bytes() {
        let got = fits_then_refused(
            json!({"type": "string", "minLength": 3}),
            json!("ééé"),
            json!("éé"),
        );
        assert_eq!(
            got,
            Problem::TooShort {
                field: field(),
                min: 3
            }
        );
    }

    #[test]
    fn a_string_over_max_length_is_refused() {
        let got = fits_then_refused(
            json!({"type": "string", "maxLength": 2}),
            json!("éé"),
            json!("abc"),
        );
        assert_eq!(
            got,
            Problem::TooLong {
                field: field(),
                max: 2
            }
        );
    }

    #[test]
    fn an_email_field_refuses_what_is_not_an_address() {
        fits_then_refused_as_format("email", "ada@example.com", "ada");
    }

    #[test]
    fn a_uri_field_refuses_what_has_no_scheme() {
        fits_then_refused_as_format("uri", "https://example.com/", "example.com");
    }

    #[test]
    fn a_date_field_refuses_a_day_that_does_not_exist() {
        fits_then_refused_as_format("date", "2024-02-29", "2023-02-29");
    }

    #[test]
    fn a_date_time_field_refuses_a_time_without_an_offset() {
        fits_then_refused_as_format("date-time", "2026-07-28T09:30:00Z", "2026-07-28T09:30");
    }

    #[test]
    fn a_format_outside_the_subset_is_not_checked() {
        let schema = one(json!({"type": "string", "format": "ipv4"}));
        assert_eq!(check(schema, json!({"field": "not an address"})), Ok(()));
    }

    #[test]
    fn a_number_field_takes_integers_and_fractions() {
        let schema = one(json!({"type": "number"}));
        assert_eq!(check(schema.clone(), json!({"field": 3})), Ok(()));
        assert_eq!(check(schema, json!({"field": 88.5})), Ok(()));
    }

    #[test]
    fn a_string_where_a_number_is_wanted_is_refused() {
        let got = fits_then_refused(json!({"type": "number"}), json!(3), json!("3"));
        assert_eq!(got, wrong_type("a number"));
    }

    #[test]
    fn an_integer_field_refuses_a_fraction() {
        let got = fits_then_refused(json!({"type": "integer"}), json!(-2), json!(2.5));
        assert_eq!(got, wrong_type("an integer"));
    }

    #[test]
    fn an_integer_field_takes_a_whole_number_written_with_a_fraction() {
        assert_eq!(
            check(one(json!({"type": "integer"})), json!({"field": 2.0})),
            Ok(())
        );
    }

    #[test]
    fn a_number_below_minimum_is_refused() {
        let got = fits_then_refused(
            json!({"type": "integer", "minimum": 18}),
            json!(18),
            json!(17),
        );
        assert_eq!(
            got,
            Problem::BelowMinimum {
                field: field(),
                min: 18.0
            }
        );
    }

    #[test]
    fn a_number_above_maximum_is_refused() {
        let got = fits_then_refused(
            json!({"type": "number", "maximum": 1.5}),
            json!(1.5),
            json!(1.6),
        );
        assert_eq!(
            got,
            Problem::AboveMaximum {
                field: field(),
                max: 1.5
            }
        );
    }

    #[test]
    fn a_boolean_field_refuses_the_string_true() {
        let got = fits_then_refused(json!({"type": "boolean"}), json!(false), json!("true"));
        assert_eq!(got, wrong_type("a boolean"));
    }

    #[test]
    fn a_value_outside_an_enum_is_refused() {
        let got = fits_then_refused(
            json!({"type": "string", "enum": ["red", "green"]}),
            json!("green"),
            json!("blue"),
        );
        assert_eq!(got, Problem::NotAnOption(field()));
    }

    #[test]
    fn a_titled_single_select_takes_a_const_not_a_title() {
        let property = json!({"type": "string", "oneOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]});
        let got = fits_then_refused(property, json!("v2"), json!("First"));
        assert_eq!(got, Problem::NotAnOption(field()));
    }

    #[test]
    fn a_legacy_titled_enum_takes_a_value_not_an_enum_name() {
        let property = json!({"type": "string", "enum": ["opt1", "opt2"],
            "enumNames": ["Option One", "Option Two"]});
        let got = fits_then_refused(property, json!("opt1"), json!("Option One"));
        assert_eq!(got, Problem::NotAnOption(field()));
    }

    #[test]
    fn an_enum_without_a_type_still_restricts_the_value() {
        let got = fits_then_refused(json!({"enum": ["a", "b"]}), json!("a"), json!(1));
        assert_eq!(got, Problem::NotAnOption(field()));
    }

    #[test]
    fn an_enum_with_an_option_that_is_not_a_string_is_not_checked() {
        let schema = one(json!({"type": "string", "enum": ["a", 2]}));
        assert_eq!(check(schema, json!({"field": "z"})), Ok(()));
    }

    #[test]
    fn a_string_where_an_array_is_wanted_is_refused() {
        let property = json!({"type": "array", "items": {"type": "string", "enum": ["a", "b"]}});
        let got = fits_then_refused(property, json!(["a"]), json!("a"));
        assert_eq!(got, wrong_type("an array"));
    }

    #[test]
    fn a_multi_select_item_outside_items_enum_is_refused() {
        let property =
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}});
        let got = fits_then_refused(property, json!(["c", "a"]), json!(["a", "d"]));
        assert_eq!(
            got,
            Problem::ItemNotAnOption {
                field: field(),
                index: 1
            }
        );
    }

    #[test]
    fn a_titled_multi_select_takes_the_consts_of_items_any_of() {
        let property = json!({"type": "array", "items": {"anyOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}});
        let got = fits_then_refused(property, json!(["v1", "v2"]), json!(["Second"]));
        assert_eq!(
            got,
            Problem::ItemNotAnOption {
                field: field(),
                index: 0
            }
        );
    }

    #[test]
    fn a_multi_select_item_that_is_not_a_string_is_refused() {
        let property = json!({"type": "array", "items": {"type": "string"}});
        let got = fits_then_refused(property, json!(["x"]), json!(["x", 2]));
        assert_eq!(
            got,
            Problem::ItemType {
                field: field(),
                index: 1
            }
        );
    }

    #[test]
    fn fewer_items_than_min_items_are_refused() {
        let property = json!({"type": "array", "minItems": 2, "items": {"enum": ["a", "b"]}});
        let got = fits_then_refused(property, json!(["a", "b"]), json!(["a"]));
        assert_eq!(
            got,
            Problem::TooFewItems {
                field: field(),
                min: 2
            }
        );
    }

    #[test]
    fn more_items_than_max_items_are_refused() {
        let property = json!({"type": "array", "maxItems": 1, "items": {"enum": ["a", "b"]}});
        let got = fits_then_refused(property, json!(["b"]), json!(["a", "b"]));
        assert_eq!(
            got,
            Problem::TooManyItems {
                field: field(),
                max: 1
            }
        );
    }

    #[test]
    fn a_missing_required_field_is_refused() {
        assert_eq!(
            problem(name_required(), json!({})),
            Problem::Missing("name".into())
        );
    }

    #[test]
    fn a_missing_optional_field_is_fine() {
        assert_eq!(check(one(json!({"type": "string"})), json!({})), Ok(()));
    }

    #[test]
    fn a_required_name_without_a_property_must_be_present_with_any_value() {
        let schema = json!({"type": "object", "properties": {}, "required": ["token"]});
        assert_eq!(check(schema.clone(), json!({"token": [1, {}]})), Ok(()));
        assert_eq!(problem(schema, json!({})), Problem::Missing("token".into()));
    }

    #[test]
    fn an_unknown_extra_field_in_the_content_is_ignored() {
        let content = json!({"field": "x", "extra": {"deep": [1]}});
        assert_eq!(check(one(json!({"type": "string"})), content), Ok(()));
    }

    #[test]
    fn an_answer_for_a_key_that_was_not_asked_is_ignored() {
        let answers = json!({"other": {"action": "accept", "content": {"field": 1}}});
        assert_eq!(
            check_answers(one(json!({"type": "string"})), answers),
            Ok(())
        );
    }

    #[test]
    fn a_key_that_was_asked_and_not_answered_is_left_to_the_handler() {
        assert_eq!(check_answers(name_required(), json!({})), Ok(()));
    }

    #[test]
    fn a_declined_answer_is_not_checked() {
        let answers = json!({"user_name": {"action": "decline", "content": {"name": 1}}});
        assert_eq!(check_answers(name_required(), answers), Ok(()));
    }

    #[test]
    fn a_cancelled_answer_is_not_checked() {
        let answers = json!({"user_name": {"action": "cancel"}});
        assert_eq!(check_answers(name_required(), answers), Ok(()));
    }

    #[test]
    fn an_answer_without_a_known_action_is_refused() {
        for answer in [json!({"action": "maybe"}), json!({"content": {}})] {
            let got = check_answers(one(json!({"type": "string"})), json!({"user_name": answer}));
            assert!(
                matches!(&got, Err(CheckError::Mismatch(m)) if m.problem == Problem::Action),
                "{got:?}"
            );
        }
    }

    #[test]
    fn an_accepted_answer_without_content_has_no_fields() {
        let answers = json!({"user_name": {"action": "accept"}});
        assert_eq!(
            check_answers(one(json!({"type": "string"})), answers.clone()),
            Ok(())
        );
        assert!(matches!(
            check_answers(name_required(), answers),
            Err(CheckError::Mismatch(Mismatch {
                problem: Problem::Missing(_),
                ..
            }))
        ));
    }

    #[test]
    fn content_that_is_not_an_object_is_refused() {
        assert_eq!(
            problem(one(json!({"type": "string"})), json!("Ada")),
            Problem::Content
        );
    }

    #[test]
    fn keywords_outside_the_subset_are_ignored() {
        let schema = json!({"type": "object", "additionalProperties": false, "properties": {
            "code": {"type": "string", "pattern": "^[0-9]+$"},
            "either": {"type": ["string", "null"]},
            "nested": {"type": "object", "properties": {"x": {"type": "integer"}}},
        }});
        let content = json!({"code": "abc", "either": 5, "nested": {"x": "y"}, "extra": 1});
        assert_eq!(check(schema, content), Ok(()));
    }

    #[test]
    fn a_mismatch_names_the_key_and_the_field_in_the_modern_wording() {
        let schema = json!({"type": "object", "properties": {"age": {"type": "integer"}}});
        let got = check(schema, json!({"age": "forty"}));
        assert_eq!(
            got.map_err(|e| e.to_string()),
            Err("inputResponses.user_name: field 'age' must be an integer".to_owned())
        );
    }

    #[test]
    fn answers_to_url_elicitation_sampling_and_roots_are_not_checked() {
        let mut requests = InputRequests::new();
        requests.insert(
            "login".into(),
            InputRequest::elicit_url("Sign in", "https://x.test"),
        );
        requests.insert("llm".into(), InputRequest::sample_text("Hi", 5));
        requests.insert("roots".into(), InputRequest::list_roots());
        assert!(AnswerSchemas::of(&requests).as_bytes().is_empty());
    }

    #[test]
    fn schemas_that_are_not_ones_the_runtime_wrote_are_unreadable() {
        let accepted = json!({"action": "accept", "content": {}});
        let mut answers = InputResponses::new();
        answers.insert(
            "k".into(),
            InputResponse::new(accepted.as_object().cloned().unwrap_or_default()),
        );
        // A key whose length runs past the end; a field of an unknown kind (7).
        for bytes in [vec![5, b'a'], vec![1, b'k', 3, 7, 1, b'f']] {
            assert_eq!(
                AnswerSchemas::from_bytes(bytes).check(&answers),
                Err(CheckError::Unreadable(Unreadable))
            );
        }
    }
}
