//! The rules of a field applied to an answer: to what a person types (the form parses it and
//! asks again with the reason when it does not fit) and to a value given whole (the content of
//! an `--answer`). Pure functions; [`Invalid`]'s text is the reason the person reads.
//!
//! An empty typed answer means "no answer": a required field asks again, an optional one is
//! left out of `content`. So a required string field never sends `""`.

use serde_json::{Number, Value};

use super::formats::Format;
use super::schema::{Field, Kind, MultiChoice, NumberRules, Opt, TextRules};

/// Why an answer does not fit its field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum Invalid {
    #[error("an answer is required")]
    Required,
    #[error("enter at least {0} characters")]
    TooShort(usize),
    #[error("enter at most {0} characters")]
    TooLong(usize),
    #[error("enter {}", .0.describe())]
    NotOfFormat(Format),
    #[error("enter a whole number")]
    NotAnInteger,
    #[error("enter a number")]
    NotANumber,
    #[error("enter a number of at least {0}")]
    BelowMinimum(f64),
    #[error("enter a number of at most {0}")]
    AboveMaximum(f64),
    #[error("choose at least {0}")]
    TooFew(usize),
    #[error("choose at most {0}")]
    TooMany(usize),
    #[error("'{0}' is not one of the options")]
    NotAnOption(String),
    #[error("'{0}' is chosen twice")]
    ChosenTwice(String),
    #[error("expected {0}")]
    WrongType(&'static str),
}

/// Parses typed text for a string field. `Ok(None)`: nothing typed, optional field.
pub fn text(field: &Field, rules: &TextRules, input: &str) -> Result<Option<String>, Invalid> {
    if input.is_empty() {
        return skipped(field);
    }
    check_text(rules, input)?;
    Ok(Some(input.to_owned()))
}

/// Parses typed text for a number or integer field. `Ok(None)`: nothing typed, optional field.
/// A whole number is sent as a JSON integer, for `number` fields too.
pub fn number(field: &Field, rules: &NumberRules, input: &str) -> Result<Option<Number>, Invalid> {
    let input = input.trim();
    if input.is_empty() {
        return skipped(field);
    }
    let number = match input.parse::<i64>() {
        Ok(whole) => Number::from(whole),
        Err(_) if rules.integer => return Err(Invalid::NotAnInteger),
        // `parse` takes "inf" and "NaN", which JSON has no numbers for.
        Err(_) => input
            .parse::<f64>()
            .ok()
            .and_then(Number::from_f64)
            .ok_or(Invalid::NotANumber)?,
    };
    check_bounds(rules, &number)?;
    Ok(Some(number))
}

/// Checks how many options are selected (`minItems`, `maxItems`). Nothing selected in an
/// optional field is always fine: the field is then left out.
pub fn selection_count(field: &Field, multi: &MultiChoice, count: usize) -> Result<(), Invalid> {
    if count == 0 && !field.required {
        return Ok(());
    }
    match (multi.min_items, multi.max_items) {
        (Some(min), _) if count < min => Err(Invalid::TooFew(min)),
        (_, Some(max)) if count > max => Err(Invalid::TooMany(max)),
        _ => Ok(()),
    }
}

impl Field {
    /// Checks a value given whole, as it would go into `content`.
    pub fn check(&self, value: &Value) -> Result<(), Invalid> {
        match (&self.kind, value) {
            (Kind::Text(rules), Value::String(s)) => check_text(rules, s),
            (Kind::Text(_), _) => Err(Invalid::WrongType("a string")),
            (Kind::Number(rules), Value::Number(n)) => {
                if rules.integer && !(n.is_i64() || n.is_u64()) {
                    return Err(Invalid::NotAnInteger);
                }
                check_bounds(rules, n)
            }
            (Kind::Number(_), _) => Err(Invalid::WrongType("a number")),
            (Kind::Boolean { .. }, Value::Bool(_)) => Ok(()),
            (Kind::Boolean { .. }, _) => Err(Invalid::WrongType("true or false")),
            (Kind::Choice(choice), Value::String(s)) => is_option(&choice.options, s),
            (Kind::Choice(_), _) => Err(Invalid::WrongType("one option, as a string")),
            (Kind::Multi(multi), Value::Array(items)) => check_selection(self, multi, items),
            (Kind::Multi(_), _) => Err(Invalid::WrongType("an array of options")),
        }
    }
}

fn skipped<T>(field: &Field) -> Result<Option<T>, Invalid> {
    if field.required {
        Err(Invalid::Required)
    } else {
        Ok(None)
    }
}

fn check_text(rules: &TextRules, text: &str) -> Result<(), Invalid> {
    let length = text.chars().count();
    match (rules.min_length, rules.max_length) {
        (Some(min), _) if length < min => return Err(Invalid::TooShort(min)),
        (_, Some(max)) if length > max => return Err(Invalid::TooLong(max)),
        _ => {}
    }
    match rules.format {
        Some(format) if !format.accepts(text) => Err(Invalid::NotOfFormat(format)),
        _ => Ok(()),
    }
}

fn check_bounds(rules: &NumberRules, number: &Number) -> Result<(), Invalid> {
    let Some(value) = number.as_f64() else {
        return Err(Invalid::NotANumber);
    };
    match (rules.minimum, rules.maximum) {
        (Some(min), _) if value < min => Err(Invalid::BelowMinimum(min)),
        (_, Some(max)) if value > max => Err(Invalid::AboveMaximum(max)),
        _ => Ok(()),
    }
}

fn is_option(options: &[Opt], value: &str) -> Result<(), Invalid> {
    if options.iter().any(|o| o.value == value) {
        Ok(())
    } else {
        Err(Invalid::NotAnOption(value.to_owned()))
    }
}

fn check_selection(field: &Field, multi: &MultiChoice, items: &[Value]) -> Result<(), Invalid> {
    let mut seen: Vec<&str> = Vec::with_capacity(items.len());
    for item in items {
        let item = item
            .as_str()
            .ok_or(Invalid::WrongType("an array of options"))?;
        is_option(&multi.options, item)?;
        if seen.contains(&item) {
            return Err(Invalid::ChosenTwice(item.to_owned()));
        }
        seen.push(item);
    }
    selection_count(field, multi, items.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::schema::FormSchema;
    use serde_json::json;

    fn field(property: Value, required: bool) -> Field {
        let required = if required { json!(["f"]) } else { json!([]) };
        let schema = json!({"type": "object", "properties": {"f": property}, "required": required});
        FormSchema::parse(&schema).expect("a form").fields.remove(0)
    }

    fn typed_text(property: Value, input: &str) -> Result<Option<String>, Invalid> {
        let f = field(property, true);
        let Kind::Text(rules) = &f.kind else {
            panic!("a text field")
        };
        text(&f, rules, input)
    }

    fn typed_number(
        property: Value,
        required: bool,
        input: &str,
    ) -> Result<Option<Number>, Invalid> {
        let f = field(property, required);
        let Kind::Number(rules) = &f.kind else {
            panic!("a number field")
        };
        number(&f, rules, input)
    }

    #[test]
    fn a_string_shorter_than_min_length_is_refused_with_the_length() {
        let reply = typed_text(json!({"type": "string", "minLength": 3}), "ab");
        assert_eq!(reply, Err(Invalid::TooShort(3)));
        assert_eq!(
            Invalid::TooShort(3).to_string(),
            "enter at least 3 characters"
        );
    }

    #[test]
    fn a_string_longer_than_max_length_is_refused() {
        let reply = typed_text(json!({"type": "string", "maxLength": 2}), "abc");
        assert_eq!(reply, Err(Invalid::TooLong(2)));
    }

    #[test]
    fn string_length_counts_characters_not_bytes() {
        let reply = typed_text(json!({"type": "string", "maxLength": 3}), "héé");
        assert_eq!(reply, Ok(Some("héé".into())));
    }

    #[test]
    fn a_string_of_the_wrong_format_is_refused_with_an_example() {
        let reply = typed_text(json!({"type": "string", "format": "email"}), "ada");
        assert_eq!(reply, Err(Invalid::NotOfFormat(Format::Email)));
        assert_eq!(
            Invalid::NotOfFormat(Format::Email).to_string(),
            "enter an email address like name@example.com"
        );
    }

    #[test]
    fn each_format_is_checked_on_typed_text() {
        for (format, good, bad) in [
            ("email", "ada@example.com", "ada@"),
            ("uri", "https://example.com", "example.com"),
            ("date", "2026-07-28", "28/07/2026"),
            ("date-time", "2026-07-28T09:00:00Z", "2026-07-28 09:00"),
        ] {
            let property = json!({"type": "string", "format": format});
            assert_eq!(
                typed_text(property.clone(), good),
                Ok(Some(good.into())),
                "{format}"
            );
            assert!(typed_text(property, bad).is_err(), "{format} refuses {bad}");
        }
    }

    #[test]
    fn an_empty_required_string_is_asked_again() {
        assert_eq!(
            typed_text(json!({"type": "string"}), ""),
            Err(Invalid::Required)
        );
    }

    #[test]
    fn an_empty_optional_answer_is_left_out() {
        assert_eq!(
            typed_number(json!({"type": "integer"}), false, ""),
            Ok(None)
        );
    }

    #[test]
    fn an_integer_field_refuses_a_fraction_and_a_word() {
        let property = json!({"type": "integer"});
        assert_eq!(
            typed_number(property.clone(), true, "2.5"),
            Err(Invalid::NotAnInteger)
        );
        assert_eq!(
            typed_number(property.clone(), true, "abc"),
            Err(Invalid::NotAnInteger)
        );
        assert_eq!(typed_number(property, true, " 42 "), Ok(Some(42.into())));
    }

    #[test]
    fn a_number_field_takes_a_fraction_and_refuses_infinity() {
        let property = json!({"type": "number"});
        assert_eq!(
            typed_number(property.clone(), true, "95.5"),
            Ok(Number::from_f64(95.5))
        );
        assert_eq!(
            typed_number(property, true, "inf"),
            Err(Invalid::NotANumber)
        );
    }

    #[test]
    fn numbers_outside_minimum_and_maximum_are_refused_with_the_bound() {
        let property = json!({"type": "integer", "minimum": 0, "maximum": 150});
        assert_eq!(
            typed_number(property.clone(), true, "-1"),
            Err(Invalid::BelowMinimum(0.0))
        );
        assert_eq!(
            typed_number(property, true, "151"),
            Err(Invalid::AboveMaximum(150.0))
        );
        assert_eq!(
            Invalid::AboveMaximum(150.0).to_string(),
            "enter a number of at most 150"
        );
    }

    #[test]
    fn selection_count_follows_min_and_max_items() {
        let f = field(
            json!({"type": "array", "items": {"enum": ["a", "b", "c"]}, "minItems": 1, "maxItems": 2}),
            true,
        );
        let Kind::Multi(multi) = &f.kind else {
            panic!("a multi-select")
        };
        assert_eq!(selection_count(&f, multi, 0), Err(Invalid::TooFew(1)));
        assert_eq!(selection_count(&f, multi, 3), Err(Invalid::TooMany(2)));
        assert_eq!(selection_count(&f, multi, 2), Ok(()));
    }

    #[test]
    fn an_optional_multi_select_with_nothing_chosen_is_fine() {
        let f = field(
            json!({"type": "array", "items": {"enum": ["a"]}, "minItems": 1}),
            false,
        );
        let Kind::Multi(multi) = &f.kind else {
            panic!("a multi-select")
        };
        assert_eq!(selection_count(&f, multi, 0), Ok(()));
    }

    #[test]
    fn a_whole_value_is_checked_against_its_field() {
        let age = field(json!({"type": "integer", "maximum": 150}), true);
        assert_eq!(age.check(&json!(30)), Ok(()));
        assert_eq!(age.check(&json!(30.5)), Err(Invalid::NotAnInteger));
        assert_eq!(age.check(&json!("30")), Err(Invalid::WrongType("a number")));
        let plan = field(json!({"type": "string", "enum": ["free", "pro"]}), true);
        assert_eq!(
            plan.check(&json!("gold")),
            Err(Invalid::NotAnOption("gold".into()))
        );
        let flag = field(json!({"type": "boolean"}), true);
        assert_eq!(
            flag.check(&json!("yes")),
            Err(Invalid::WrongType("true or false"))
        );
    }

    #[test]
    fn a_whole_multi_select_value_refuses_unknown_and_repeated_options() {
        let tags = field(
            json!({"type": "array", "items": {"enum": ["a", "b"]}}),
            true,
        );
        assert_eq!(tags.check(&json!(["a", "b"])), Ok(()));
        assert_eq!(
            tags.check(&json!(["a", "z"])),
            Err(Invalid::NotAnOption("z".into()))
        );
        assert_eq!(
            tags.check(&json!(["a", "a"])),
            Err(Invalid::ChosenTwice("a".into()))
        );
    }
}
