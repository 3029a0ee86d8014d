//! A form-mode elicitation asked of a person, field by field.
//!
//! The flow: the server's message, then "Answer / Decline / Cancel"; each field in turn, its
//! default (SEP-1034) pre-filled or pre-selected; a summary, then "Send / Change them /
//! Decline / Cancel" (the spec asks clients to let the user review an answer before it goes).
//! "Change them" asks every field again, starting from the previous answers. Esc at any
//! question cancels the whole form, and every help line says so.
//!
//! How each field is asked:
//! - string, number, integer: a line of text. Invalid text is refused where it was typed,
//!   with the reason, and asked again. Nothing typed leaves an optional field out of
//!   `content`, and is refused for a required one.
//! - boolean: Yes / No, as a choice (typing filters, so `y` or `n` then Enter works).
//! - single-select enum: its options by title.
//! - multi-select enum: its options by title, Space to select; `minItems` and `maxItems`
//!   are checked like text.
//!
//! An optional choice has a last option, "(leave out)". An optional boolean or choice
//! without a default starts on it, so that Enter never sends a value nobody chose.

use std::sync::Arc;

use serde_json::{Map, Value};

use super::ask::{Ask, MultiQuestion, SelectQuestion, Stop, TextQuestion};
use super::check::{self, Invalid};
use super::display::{clean, one_line};
use super::result::ElicitResult;
use super::schema::{Field, FormSchema, Kind, MultiChoice, NumberRules, Opt, TextRules};

/// The end of every help line.
pub const ESC_CANCELS: &str = "Esc cancels the form";
/// The option that leaves an optional field out of `content`.
pub const LEAVE_OUT: &str = "(leave out)";

const FIRST_QUESTION: &str = "Answer this form?";
const FIRST_OPTIONS: [&str; 3] = ["Answer", "Decline", "Cancel"];
const REVIEW_QUESTION: &str = "Send these answers?";
const REVIEW_OPTIONS: [&str; 4] = ["Send", "Change them", "Decline", "Cancel"];
const YES_NO: [&str; 2] = ["Yes", "No"];

/// Asks `schema`'s fields after showing `message`. Esc anywhere is `cancel`; Ctrl-C and a
/// failing terminal are errors.
pub fn fill_in<A: Ask>(
    ask: &mut A,
    message: &str,
    schema: &FormSchema,
) -> Result<ElicitResult, Stop> {
    match run(ask, message, schema) {
        Err(Stop::Escaped) => Ok(ElicitResult::cancel()),
        other => other,
    }
}

fn run<A: Ask>(ask: &mut A, message: &str, schema: &FormSchema) -> Result<ElicitResult, Stop> {
    ask.say(&format!("The server asks: {}", clean(message)))?;
    let help = format!(
        "Decline says no to the request; Cancel dismisses it without a choice · {ESC_CANCELS}"
    );
    match choose(ask, FIRST_QUESTION, &help, &FIRST_OPTIONS)? {
        0 => {}
        1 => return Ok(ElicitResult::decline()),
        _ => return Ok(ElicitResult::cancel()),
    }
    if schema.fields.is_empty() {
        return Ok(ElicitResult::accept(Map::new()));
    }
    let mut answers = Map::new();
    loop {
        answers = ask_fields(ask, schema, &answers)?;
        ask.say(&summary(schema, &answers))?;
        let help = format!("Change them asks every field again · {ESC_CANCELS}");
        match choose(ask, REVIEW_QUESTION, &help, &REVIEW_OPTIONS)? {
            0 => return Ok(ElicitResult::accept(answers)),
            1 => continue,
            2 => return Ok(ElicitResult::decline()),
            _ => return Ok(ElicitResult::cancel()),
        }
    }
}

fn choose<A: Ask>(ask: &mut A, label: &str, help: &str, options: &[&str]) -> Result<usize, Stop> {
    let options: Vec<String> = options.iter().map(|o| (*o).to_owned()).collect();
    ask.select(&SelectQuestion {
        label,
        help,
        options: &options,
        start: 0,
    })
}

/// Every field, each starting from `previous` (or its default); the answers as `content`.
fn ask_fields<A: Ask>(
    ask: &mut A,
    schema: &FormSchema,
    previous: &Map<String, Value>,
) -> Result<Map<String, Value>, Stop> {
    let mut content = Map::new();
    for field in &schema.fields {
        if let Some(value) = ask_field(ask, field, previous.get(&field.key))? {
            content.insert(field.key.clone(), value);
        }
    }
    Ok(content)
}

/// One field; `None` when an optional field is left out.
fn ask_field<A: Ask>(
    ask: &mut A,
    field: &Field,
    start: Option<&Value>,
) -> Result<Option<Value>, Stop> {
    match &field.kind {
        Kind::Text(rules) => ask_text(ask, field, rules, start),
        Kind::Number(rules) => ask_number(ask, field, rules, start),
        Kind::Boolean { default } => {
            let start = start.and_then(Value::as_bool).or(*default);
            let options = YES_NO.map(|o| Opt {
                value: o.to_owned(),
                label: o.to_owned(),
            });
            let picked = ask_choice(ask, field, &options, start.map(|yes| usize::from(!yes)))?;
            Ok(picked.map(|i| Value::Bool(i == 0)))
        }
        Kind::Choice(choice) => {
            let start = start
                .and_then(Value::as_str)
                .and_then(|v| choice.options.iter().position(|o| o.value == v))
                .or(choice.default);
            let picked = ask_choice(ask, field, &choice.options, start)?;
            Ok(picked.map(|i| Value::String(choice.options[i].value.clone())))
        }
        Kind::Multi(multi) => ask_multi(ask, field, multi, start),
    }
}

fn ask_text<A: Ask>(
    ask: &mut A,
    field: &Field,
    rules: &TextRules,
    start: Option<&Value>,
) -> Result<Option<Value>, Stop> {
    let initial = start.and_then(Value::as_str).or(rules.default.as_deref());
    let (f, r) = (field.clone(), rules.clone());
    let parse = move |typed: &str| check::text(&f, &r, typed).map(|t| t.map(Value::String));
    let hint = text_hint(rules);
    ask_typed(ask, field, &hint, initial.unwrap_or(""), parse)
}

fn ask_number<A: Ask>(
    ask: &mut A,
    field: &Field,
    rules: &NumberRules,
    start: Option<&Value>,
) -> Result<Option<Value>, Stop> {
    let initial = match start {
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => rules.default.as_ref().map(ToString::to_string),
    };
    let (f, r) = (field.clone(), rules.clone());
    let parse = move |typed: &str| check::number(&f, &r, typed).map(|n| n.map(Value::Number));
    let hint = number_hint(rules);
    ask_typed(ask, field, &hint, initial.as_deref().unwrap_or(""), parse)
}

/// Asks a line until `parse` takes it. The asker already refuses what `parse` refuses; the
/// loop is there so that an asker that returns refused text anyway gets the reason and the
/// question again, rather than a value the form never checked.
fn ask_typed<A: Ask>(
    ask: &mut A,
    field: &Field,
    hint: &str,
    initial: &str,
    parse: impl Fn(&str) -> Result<Option<Value>, Invalid> + Send + Sync + 'static,
) -> Result<Option<Value>, Stop> {
    let parse = Arc::new(parse);
    let check = {
        let parse = Arc::clone(&parse);
        Arc::new(move |typed: &str| parse(typed).map(|_| ()))
    };
    let label = label(field);
    let help = help(field, hint, "leave it empty to leave it out");
    let question = TextQuestion {
        label: &label,
        help: &help,
        initial,
        check,
    };
    loop {
        let typed = ask.text(&question)?;
        match parse(&typed) {
            Ok(value) => return Ok(value),
            Err(reason) => ask.say(&reason.to_string())?,
        }
    }
}

/// One of `options`, plus [`LEAVE_OUT`] for an optional field; `start` is the pre-selected
/// option. `None` when left out.
fn ask_choice<A: Ask>(
    ask: &mut A,
    field: &Field,
    options: &[Opt],
    start: Option<usize>,
) -> Result<Option<usize>, Stop> {
    let mut labels: Vec<String> = options.iter().map(|o| one_line(&o.label)).collect();
    if !field.required {
        labels.push(LEAVE_OUT.to_owned());
    }
    let start = match start {
        Some(i) => i,
        None if field.required => 0,
        None => options.len(),
    };
    let label = label(field);
    let help = help(field, "↑↓ to move, type to filter, Enter to choose", "");
    let picked = ask.select(&SelectQuestion {
        label: &label,
        help: &help,
        options: &labels,
        start,
    })?;
    Ok((picked < options.len()).then_some(picked))
}

fn ask_multi<A: Ask>(
    ask: &mut A,
    field: &Field,
    multi: &MultiChoice,
    start: Option<&Value>,
) -> Result<Option<Value>, Stop> {
    let selected: Vec<usize> = match start.and_then(Value::as_array) {
        Some(values) => (0..multi.options.len())
            .filter(|&i| {
                values
                    .iter()
                    .any(|v| v.as_str() == Some(&multi.options[i].value))
            })
            .collect(),
        None => multi.default.clone(),
    };
    let labels: Vec<String> = multi.options.iter().map(|o| one_line(&o.label)).collect();
    let (f, m) = (field.clone(), multi.clone());
    let check = Arc::new(move |count: usize| check::selection_count(&f, &m, count));
    let hint = format!("Space to select, Enter to send{}", count_hint(multi));
    let label = label(field);
    let help = help(field, &hint, "select none to leave it out");
    loop {
        let picked = ask.multi_select(&MultiQuestion {
            label: &label,
            help: &help,
            options: &labels,
            selected: &selected,
            check: check.clone(),
        })?;
        match check::selection_count(field, multi, picked.len()) {
            Ok(()) if picked.is_empty() && !field.required => return Ok(None),
            Ok(()) => {
                let values = picked.iter().filter_map(|&i| multi.options.get(i));
                return Ok(Some(
                    values.map(|o| Value::String(o.value.clone())).collect(),
                ));
            }
            Err(reason) => ask.say(&reason.to_string())?,
        }
    }
}

/// The field's title (or key), marked when optional.
fn label(field: &Field) -> String {
    let label = one_line(field.label());
    if field.required {
        label
    } else {
        format!("{label} (optional)")
    }
}

/// Description · what to enter · how to leave an optional field out · how to cancel.
fn help(field: &Field, hint: &str, leave_out: &str) -> String {
    let description = field.description.as_deref().map(one_line);
    let leave_out = (!field.required && !leave_out.is_empty()).then_some(leave_out);
    let parts = [
        description.as_deref(),
        Some(hint),
        leave_out,
        Some(ESC_CANCELS),
    ];
    parts
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(" · ")
}

fn text_hint(rules: &TextRules) -> String {
    let length = match (rules.min_length, rules.max_length) {
        (Some(min), Some(max)) => format!("{min} to {max} characters"),
        (Some(min), None) => format!("at least {min} characters"),
        (None, Some(max)) => format!("at most {max} characters"),
        (None, None) => String::new(),
    };
    let format = rules.format.map(|f| f.describe().to_owned());
    [format, Some(length)]
        .into_iter()
        .flatten()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

fn number_hint(rules: &NumberRules) -> String {
    let noun = if rules.integer {
        "a whole number"
    } else {
        "a number"
    };
    match (rules.minimum, rules.maximum) {
        (Some(min), Some(max)) => format!("{noun} from {min} to {max}"),
        (Some(min), None) => format!("{noun} of at least {min}"),
        (None, Some(max)) => format!("{noun} of at most {max}"),
        (None, None) => noun.to_owned(),
    }
}

fn count_hint(multi: &MultiChoice) -> String {
    match (multi.min_items, multi.max_items) {
        (Some(min), Some(max)) => format!(" (choose {min} to {max})"),
        (Some(min), None) => format!(" (choose at least {min})"),
        (None, Some(max)) => format!(" (choose at most {max})"),
        (None, None) => String::new(),
    }
}

/// "Your answers:" and one line per field, options by their titles.
fn summary(schema: &FormSchema, answers: &Map<String, Value>) -> String {
    let mut text = String::from("Your answers:");
    for field in &schema.fields {
        let shown = match answers.get(&field.key) {
            None => LEAVE_OUT.to_owned(),
            Some(value) => shown_value(field, value),
        };
        text.push_str(&format!("\n  {}: {}", one_line(field.label()), shown));
    }
    text
}

fn shown_value(field: &Field, value: &Value) -> String {
    let title = |options: &[Opt], v: &str| {
        let option = options.iter().find(|o| o.value == v);
        one_line(option.map_or(v, |o| o.label.as_str()))
    };
    match (&field.kind, value) {
        (Kind::Choice(choice), Value::String(v)) => title(&choice.options, v),
        (Kind::Multi(multi), Value::Array(items)) => items
            .iter()
            .filter_map(Value::as_str)
            .map(|v| title(&multi.options, v))
            .collect::<Vec<_>>()
            .join(", "),
        (_, Value::Bool(true)) => "Yes".to_owned(),
        (_, Value::Bool(false)) => "No".to_owned(),
        (_, Value::String(s)) => one_line(s),
        (_, other) => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::scripted::{Scripted, Step};
    use serde_json::json;

    fn form(schema: Value) -> FormSchema {
        FormSchema::parse(&schema).expect("a form schema")
    }

    fn fill(schema: Value, steps: Vec<Step>) -> (ElicitResult, Scripted) {
        let mut ask = Scripted::new(steps);
        let result = fill_in(&mut ask, "Tell us", &form(schema)).expect("an answer");
        ask.assert_script_used();
        (result, ask)
    }

    fn accepted(result: &ElicitResult) -> Value {
        assert_eq!(result.action, ElicitAction::Accept, "{result:?}");
        Value::Object(result.content.clone().expect("content"))
    }

    /// Answer, the fields' `steps`, then Send.
    fn answered(fields: Vec<Step>) -> Vec<Step> {
        let mut steps = vec![Step::Choose("Answer")];
        steps.extend(fields);
        steps.push(Step::Choose("Send"));
        steps
    }

    fn one(property: Value, required: bool) -> Value {
        let required = if required { json!(["f"]) } else { json!([]) };
        json!({"type": "object", "properties": {"f": property}, "required": required})
    }

    use roundtrip_runtime::protocol::input::ElicitAction;

    #[test]
    fn decline_at_the_first_question_asks_no_field() {
        let (result, ask) = fill(
            one(json!({"type": "string"}), true),
            vec![Step::Choose("Decline")],
        );
        assert_eq!(result, ElicitResult::decline());
        assert!(ask.saw("say: The server asks: Tell us"));
        assert!(!ask.saw("text:"));
    }

    #[test]
    fn cancel_at_the_first_question_is_cancel() {
        let (result, _) = fill(
            one(json!({"type": "string"}), true),
            vec![Step::Choose("Cancel")],
        );
        assert_eq!(result, ElicitResult::cancel());
    }

    #[test]
    fn esc_in_a_field_cancels_the_whole_form() {
        let schema = json!({"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string"}}});
        let (result, ask) = fill(schema, vec![Step::Choose("Answer"), Step::Esc]);
        assert_eq!(result, ElicitResult::cancel());
        assert_eq!(ask.count("text:"), 1, "b is never asked");
    }

    #[test]
    fn ctrl_c_is_an_error_not_an_answer() {
        let mut ask = Scripted::new(vec![Step::Choose("Answer"), Step::CtrlC]);
        let outcome = fill_in(&mut ask, "m", &form(one(json!({"type": "string"}), true)));
        assert!(matches!(outcome, Err(Stop::Interrupted)), "{outcome:?}");
    }

    #[test]
    fn every_help_line_says_esc_cancels() {
        let (_, ask) = fill(
            one(json!({"type": "string"}), true),
            answered(vec![Step::Type("x")]),
        );
        let questions: Vec<_> = ask.lines().filter(|l| !l.starts_with("say:")).collect();
        assert_eq!(questions.len(), 3, "{questions:?}");
        assert!(
            questions.iter().all(|q| q.contains(ESC_CANCELS)),
            "{questions:?}"
        );
    }

    #[test]
    fn a_string_is_asked_again_with_the_reason_until_it_fits() {
        let schema = one(
            json!({"type": "string", "title": "Ticket", "minLength": 3}),
            true,
        );
        let (result, ask) = fill(schema, answered(vec![Step::Type("ab"), Step::Type("abc")]));
        assert_eq!(accepted(&result), json!({"f": "abc"}));
        assert!(ask.saw("refused Ticket: enter at least 3 characters"));
    }

    #[test]
    fn a_string_over_max_length_is_asked_again() {
        let schema = one(json!({"type": "string", "maxLength": 2}), true);
        let (result, ask) = fill(schema, answered(vec![Step::Type("abc"), Step::Type("ab")]));
        assert_eq!(accepted(&result), json!({"f": "ab"}));
        assert!(ask.saw("refused f: enter at most 2 characters"));
    }

    #[test]
    fn each_string_format_is_validated_in_the_form() {
        for (format, bad, good) in [
            ("email", "ada", "ada@example.com"),
            ("uri", "example.com", "https://example.com"),
            ("date", "2026-02-30", "2026-02-28"),
            ("date-time", "2026-07-28", "2026-07-28T09:00:00+01:00"),
        ] {
            let schema = one(json!({"type": "string", "format": format}), true);
            let (result, ask) = fill(schema, answered(vec![Step::Type(bad), Step::Type(good)]));
            assert_eq!(accepted(&result), json!({"f": good}), "{format}");
            assert_eq!(ask.count("refused f: enter "), 1, "{format}");
        }
    }

    #[test]
    fn an_integer_is_asked_again_until_whole_and_in_range() {
        let schema = one(
            json!({"type": "integer", "title": "Age", "minimum": 0, "maximum": 150}),
            true,
        );
        let steps = answered(vec![Step::Type("abc"), Step::Type("200"), Step::Type("36")]);
        let (result, ask) = fill(schema, steps);
        assert_eq!(accepted(&result), json!({"f": 36}));
        assert!(ask.saw("refused Age: enter a whole number"));
        assert!(ask.saw("refused Age: enter a number of at most 150"));
        assert!(ask.saw("help: a whole number from 0 to 150"));
    }

    #[test]
    fn a_number_takes_a_fraction_and_respects_its_minimum() {
        let schema = one(json!({"type": "number", "minimum": 1.5}), true);
        let (result, ask) = fill(schema, answered(vec![Step::Type("1"), Step::Type("2.25")]));
        assert_eq!(accepted(&result), json!({"f": 2.25}));
        assert!(ask.saw("refused f: enter a number of at least 1.5"));
    }

    #[test]
    fn a_boolean_is_yes_or_no() {
        let schema = one(json!({"type": "boolean"}), true);
        let (result, ask) = fill(schema, answered(vec![Step::Choose("No")]));
        assert_eq!(accepted(&result), json!({"f": false}));
        assert!(
            ask.saw("select: f [>Yes|No]"),
            "{:?}",
            ask.lines().collect::<Vec<_>>()
        );
    }

    #[test]
    fn a_titled_one_of_enum_shows_titles_and_sends_the_value() {
        let schema = one(
            json!({"type": "string", "oneOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}),
            true,
        );
        let (result, ask) = fill(schema, answered(vec![Step::Choose("Second")]));
        assert_eq!(accepted(&result), json!({"f": "v2"}));
        assert!(ask.saw("select: f [>First|Second]"));
    }

    #[test]
    fn a_legacy_enum_names_enum_shows_names_and_sends_the_value() {
        let schema = one(
            json!({"type": "string", "enum": ["o1", "o2"],
            "enumNames": ["Option One", "Option Two"]}),
            true,
        );
        let (result, _) = fill(schema, answered(vec![Step::Choose("Option Two")]));
        assert_eq!(accepted(&result), json!({"f": "o2"}));
    }

    #[test]
    fn a_plain_enum_shows_and_sends_its_values() {
        let schema = one(json!({"type": "string", "enum": ["red", "green"]}), true);
        let (result, _) = fill(schema, answered(vec![Step::Choose("green")]));
        assert_eq!(accepted(&result), json!({"f": "green"}));
    }

    #[test]
    fn a_multi_select_of_items_enum_sends_the_chosen_values_in_order() {
        let schema = one(
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}}),
            true,
        );
        let (result, _) = fill(schema, answered(vec![Step::Pick(vec!["c", "a"])]));
        assert_eq!(accepted(&result), json!({"f": ["a", "c"]}));
    }

    #[test]
    fn a_multi_select_of_items_any_of_shows_titles_and_sends_values() {
        let schema = one(
            json!({"type": "array", "items": {"anyOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}}),
            true,
        );
        let (result, ask) = fill(schema, answered(vec![Step::Pick(vec!["Second"])]));
        assert_eq!(accepted(&result), json!({"f": ["v2"]}));
        assert!(ask.saw("multi: f [First|Second]"));
    }

    #[test]
    fn a_multi_select_outside_min_and_max_items_is_asked_again() {
        let schema = one(
            json!({"type": "array", "items": {"enum": ["a", "b", "c"]},
            "minItems": 1, "maxItems": 2}),
            true,
        );
        let steps = answered(vec![
            Step::Pick(vec![]),
            Step::Pick(vec!["a", "b", "c"]),
            Step::Pick(vec!["b"]),
        ]);
        let (result, ask) = fill(schema, steps);
        assert_eq!(accepted(&result), json!({"f": ["b"]}));
        assert!(ask.saw("refused f: choose at least 1"));
        assert!(ask.saw("refused f: choose at most 2"));
    }

    #[test]
    fn defaults_of_every_type_are_prefilled_and_sent_with_enter() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive"], "default": "inactive"},
            "tags": {"type": "array", "items": {"enum": ["x", "y"]}, "default": ["y"]},
            "verified": {"type": "boolean", "default": false}}});
        let (result, ask) = fill(schema, answered(vec![Step::Enter; 6]));
        assert_eq!(
            accepted(&result),
            json!({"name": "John Doe", "age": 30, "score": 95.5, "status": "inactive",
                "tags": ["y"], "verified": false})
        );
        assert!(ask.saw("text: name (optional) [John Doe]"));
        assert!(ask.saw("select: status (optional) [active|>inactive|(leave out)]"));
        assert!(ask.saw("multi: tags (optional) [x|*y]"));
        assert!(ask.saw("select: verified (optional) [Yes|>No|(leave out)]"));
    }

    #[test]
    fn optional_fields_left_empty_are_left_out_of_content() {
        let schema = json!({"type": "object", "required": ["name"], "properties": {
            "name": {"type": "string"},
            "nick": {"type": "string"},
            "age": {"type": "integer"},
            "plan": {"type": "string", "enum": ["free", "pro"]},
            "tags": {"type": "array", "items": {"enum": ["x"]}},
            "news": {"type": "boolean"}}});
        // Fields come in key order: age, name, news, nick, plan, tags.
        let steps = answered(vec![
            Step::Type(""),
            Step::Type("Ada"),
            Step::Enter,
            Step::Type(""),
            Step::Enter,
            Step::Pick(vec![]),
        ]);
        let (result, ask) = fill(schema, steps);
        assert_eq!(accepted(&result), json!({"name": "Ada"}));
        assert!(ask.saw("help: leave it empty to leave it out"));
        assert!(ask.saw("select: plan (optional) [free|pro|>(leave out)]"));
    }

    #[test]
    fn an_empty_required_field_is_asked_again() {
        let schema = one(json!({"type": "string"}), true);
        let (result, ask) = fill(schema, answered(vec![Step::Type(""), Step::Type("x")]));
        assert_eq!(accepted(&result), json!({"f": "x"}));
        assert!(ask.saw("refused f: an answer is required"));
    }

    #[test]
    fn the_review_shows_the_answers_by_title() {
        let schema = json!({"type": "object", "properties": {
            "plan": {"type": "string", "title": "Plan", "oneOf": [{"const": "p", "title": "Pro"}]},
            "news": {"type": "boolean", "title": "Newsletter"}}});
        let (_, ask) = fill(
            schema,
            answered(vec![Step::Choose("Yes"), Step::Choose("Pro")]),
        );
        assert!(ask.saw("say: Your answers:\n  Newsletter: Yes\n  Plan: Pro"));
    }

    #[test]
    fn change_them_asks_again_from_the_previous_answers() {
        let schema = one(json!({"type": "integer"}), true);
        let steps = vec![
            Step::Choose("Answer"),
            Step::Type("1"),
            Step::Choose("Change them"),
            Step::Type("2"),
            Step::Choose("Send"),
        ];
        let (result, ask) = fill(schema, steps);
        assert_eq!(accepted(&result), json!({"f": 2}));
        assert!(ask.saw("text: f [1]"));
    }

    #[test]
    fn decline_at_the_review_sends_no_content() {
        let schema = one(json!({"type": "string"}), true);
        let steps = vec![
            Step::Choose("Answer"),
            Step::Type("x"),
            Step::Choose("Decline"),
        ];
        let (result, _) = fill(schema, steps);
        assert_eq!(result, ElicitResult::decline());
    }

    #[test]
    fn a_form_without_fields_is_accepted_with_empty_content() {
        let schema = json!({"type": "object", "properties": {}});
        let (result, _) = fill(schema, vec![Step::Choose("Answer")]);
        assert_eq!(accepted(&result), json!({}));
    }

    #[test]
    fn server_text_cannot_send_escape_sequences_to_the_terminal() {
        let schema = one(json!({"type": "string", "title": "Na\u{1b}[2Jme"}), true);
        let mut ask = Scripted::new(answered(vec![Step::Type("x")]));
        fill_in(&mut ask, "hi\u{1b}]0;owned\u{7}", &form(schema)).expect("an answer");
        assert!(ask.lines().all(|l| !l.contains('\u{1b}')));
        assert!(ask.saw("text: Na\\u{1b}[2Jme"));
    }
}
