//! An elicitation's `requestedSchema`, read once into the fields of a form.
//!
//! The spec restricts it to an object of primitive fields (`PrimitiveSchemaDefinition`):
//! strings (with `format`, `minLength`, `maxLength`), numbers and integers (with `minimum`,
//! `maximum`), booleans, single-select enums (`enum`, `enum` + `enumNames`, `oneOf` of
//! `const` + `title`) and multi-select arrays of enums (`items.enum`, `items.anyOf`, with
//! `minItems`, `maxItems`), each with an optional `default` (SEP-1034). Anything else is a
//! [`SchemaError`] naming the field: the form cannot ask for it, and says so instead of
//! guessing (Codex CLI asks an integer field with an empty approve/decline, and the server asks
//! again forever).
//!
//! Keywords that change what is valid (lengths, bounds, options) must have the type the spec
//! gives them, or the schema is refused. A `default` is only a pre-filled answer, so one of the
//! wrong type, or naming no option, is ignored. Fields keep the order of the `properties` map
//! as it was parsed (serde_json sorts keys unless its `preserve_order` feature is on).

use serde_json::{Map, Number, Value};

use super::formats::Format;

/// The fields of a form, in order.
#[derive(Debug, Clone, PartialEq)]
pub struct FormSchema {
    pub fields: Vec<Field>,
}

/// One property of `requestedSchema`.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    /// The property name: the key of the answer in `content`.
    pub key: String,
    pub title: Option<String>,
    pub description: Option<String>,
    /// Listed in `required`: the form cannot be sent without it.
    pub required: bool,
    pub kind: Kind,
}

/// What kind of answer a field takes, with its rules and default.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text(TextRules),
    Number(NumberRules),
    Boolean {
        default: Option<bool>,
    },
    /// One option (`type: string` with `enum` or `oneOf`).
    Choice(Choice),
    /// Any number of options (`type: array` of an enum).
    Multi(MultiChoice),
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct TextRules {
    pub format: Option<Format>,
    /// In characters (Unicode scalar values), as JSON Schema counts.
    pub min_length: Option<usize>,
    pub max_length: Option<usize>,
    pub default: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct NumberRules {
    /// `type: integer`: whole numbers only.
    pub integer: bool,
    pub minimum: Option<f64>,
    pub maximum: Option<f64>,
    pub default: Option<Number>,
}

/// A value the user can pick, and what the form shows for it.
#[derive(Debug, Clone, PartialEq)]
pub struct Opt {
    pub value: String,
    /// The option's title, or its value when it has none.
    pub label: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub options: Vec<Opt>,
    /// Index of the default option.
    pub default: Option<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct MultiChoice {
    pub options: Vec<Opt>,
    pub min_items: Option<usize>,
    pub max_items: Option<usize>,
    /// Indices of the options selected by default.
    pub default: Vec<usize>,
}

/// Why a `requestedSchema` cannot be shown as a form.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SchemaError {
    #[error("requestedSchema is not {{\"type\": \"object\", \"properties\": {{...}}}}")]
    NotAnObject,
    #[error("requestedSchema has no \"properties\" object")]
    NoProperties,
    #[error("requestedSchema's \"required\" is not an array of field names")]
    BadRequired,
    #[error("requestedSchema's \"required\" names '{0}', which is not one of its properties")]
    UnknownRequired(String),
    #[error("field '{key}' {problem}")]
    Field { key: String, problem: FieldProblem },
}

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum FieldProblem {
    #[error("is not a schema object")]
    NotASchema,
    #[error("has type {0}; a form field is a string, number, integer, boolean or an array of enum strings")]
    UnsupportedType(String),
    #[error("is an array whose items are not an enum of strings (items.enum or items.anyOf)")]
    ArrayNotOfEnum,
    #[error("has no options to choose from")]
    NoOptions,
    #[error("has an option that is not a string (in {0})")]
    OptionNotAString(&'static str),
    #[error("has {names} enumNames for {values} enum values")]
    EnumNamesMismatch { names: usize, values: usize },
    #[error("has a \"{keyword}\" that is not {expected}")]
    BadKeyword {
        keyword: &'static str,
        expected: &'static str,
    },
}

impl FormSchema {
    /// Reads `requestedSchema`.
    pub fn parse(schema: &Value) -> Result<FormSchema, SchemaError> {
        let schema = schema.as_object().ok_or(SchemaError::NotAnObject)?;
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(SchemaError::NotAnObject);
        }
        let properties = schema
            .get("properties")
            .and_then(Value::as_object)
            .ok_or(SchemaError::NoProperties)?;
        let required = required_keys(schema.get("required"))?;
        if let Some(unknown) = required.iter().find(|k| !properties.contains_key(**k)) {
            return Err(SchemaError::UnknownRequired((*unknown).to_owned()));
        }
        let fields = properties
            .iter()
            .map(|(key, property)| {
                let field = |problem| SchemaError::Field {
                    key: key.clone(),
                    problem,
                };
                let property = property
                    .as_object()
                    .ok_or_else(|| field(FieldProblem::NotASchema))?;
                Ok(Field {
                    key: key.clone(),
                    title: string(property, "title"),
                    description: string(property, "description"),
                    required: required.contains(&key.as_str()),
                    kind: kind(property).map_err(field)?,
                })
            })
            .collect::<Result<_, SchemaError>>()?;
        Ok(FormSchema { fields })
    }
}

impl Field {
    /// What the form calls the field: its title, or its key.
    pub fn label(&self) -> &str {
        self.title.as_deref().unwrap_or(&self.key)
    }
}

impl Opt {
    fn new(value: String, title: Option<String>) -> Opt {
        let label = title.unwrap_or_else(|| value.clone());
        Opt { value, label }
    }
}

fn required_keys(required: Option<&Value>) -> Result<Vec<&str>, SchemaError> {
    let Some(required) = required else {
        return Ok(Vec::new());
    };
    required
        .as_array()
        .ok_or(SchemaError::BadRequired)?
        .iter()
        .map(|k| k.as_str().ok_or(SchemaError::BadRequired))
        .collect()
}

fn kind(property: &Map<String, Value>) -> Result<Kind, FieldProblem> {
    let unsupported = |t: Option<&Value>| {
        FieldProblem::UnsupportedType(t.map_or_else(|| "(none)".to_owned(), Value::to_string))
    };
    let ty = property.get("type");
    match ty.and_then(Value::as_str) {
        Some("string") if property.contains_key("enum") || property.contains_key("oneOf") => {
            single_choice(property).map(Kind::Choice)
        }
        Some("string") => text_rules(property).map(Kind::Text),
        Some(t @ ("number" | "integer")) => {
            number_rules(property, t == "integer").map(Kind::Number)
        }
        Some("boolean") => Ok(Kind::Boolean {
            default: property.get("default").and_then(Value::as_bool),
        }),
        Some("array") => multi_choice(property).map(Kind::Multi),
        _ => Err(unsupported(ty)),
    }
}

fn text_rules(property: &Map<String, Value>) -> Result<TextRules, FieldProblem> {
    Ok(TextRules {
        format: string(property, "format").and_then(|f| Format::from_name(&f)),
        min_length: count(property, "minLength")?,
        max_length: count(property, "maxLength")?,
        default: string(property, "default"),
    })
}

fn number_rules(property: &Map<String, Value>, integer: bool) -> Result<NumberRules, FieldProblem> {
    let bound = |keyword: &'static str| match property.get(keyword) {
        None => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or(FieldProblem::BadKeyword {
            keyword,
            expected: "a number",
        }),
    };
    let default = match property.get("default") {
        Some(Value::Number(n)) if !integer || n.is_i64() || n.is_u64() => Some(n.clone()),
        _ => None,
    };
    Ok(NumberRules {
        integer,
        minimum: bound("minimum")?,
        maximum: bound("maximum")?,
        default,
    })
}

/// `oneOf` of `{const, title}`, or `enum` with optional `enumNames`.
fn single_choice(property: &Map<String, Value>) -> Result<Choice, FieldProblem> {
    let options = match property.get("oneOf") {
        Some(one_of) => titled_options(one_of, "oneOf")?,
        None => enum_options(property)?,
    };
    let default =
        string(property, "default").and_then(|d| options.iter().position(|o| o.value == d));
    Ok(Choice { options, default })
}

/// `items.anyOf` of `{const, title}`, or `items.enum`.
fn multi_choice(property: &Map<String, Value>) -> Result<MultiChoice, FieldProblem> {
    let items = property
        .get("items")
        .and_then(Value::as_object)
        .ok_or(FieldProblem::ArrayNotOfEnum)?;
    let options = match (items.get("anyOf"), items.contains_key("enum")) {
        (Some(any_of), _) => titled_options(any_of, "items.anyOf")?,
        (None, true) => enum_options(items)?,
        (None, false) => return Err(FieldProblem::ArrayNotOfEnum),
    };
    let default = match property.get("default").and_then(Value::as_array) {
        Some(values) => options
            .iter()
            .enumerate()
            .filter(|(_, o)| values.iter().any(|v| v.as_str() == Some(&o.value)))
            .map(|(i, _)| i)
            .collect(),
        None => Vec::new(),
    };
    Ok(MultiChoice {
        options,
        min_items: count(property, "minItems")?,
        max_items: count(property, "maxItems")?,
        default,
    })
}

fn titled_options(list: &Value, keyword: &'static str) -> Result<Vec<Opt>, FieldProblem> {
    let list = list.as_array().ok_or(FieldProblem::BadKeyword {
        keyword,
        expected: "an array of {const, title}",
    })?;
    let options = list
        .iter()
        .map(|item| {
            let value = item.get("const").and_then(Value::as_str);
            let value = value.ok_or(FieldProblem::OptionNotAString(keyword))?;
            let title = item.get("title").and_then(Value::as_str).map(str::to_owned);
            Ok(Opt::new(value.to_owned(), title))
        })
        .collect::<Result<Vec<_>, _>>()?;
    non_empty(options)
}

fn enum_options(schema: &Map<String, Value>) -> Result<Vec<Opt>, FieldProblem> {
    let values = schema
        .get("enum")
        .and_then(Value::as_array)
        .ok_or(FieldProblem::BadKeyword {
            keyword: "enum",
            expected: "an array of strings",
        })?;
    let values = values
        .iter()
        .map(|v| v.as_str().ok_or(FieldProblem::OptionNotAString("enum")))
        .collect::<Result<Vec<_>, _>>()?;
    let names: Vec<Option<String>> = match schema.get("enumNames") {
        None => vec![None; values.len()],
        Some(names) => {
            let names = names.as_array().ok_or(FieldProblem::BadKeyword {
                keyword: "enumNames",
                expected: "an array of strings",
            })?;
            if names.len() != values.len() {
                return Err(FieldProblem::EnumNamesMismatch {
                    names: names.len(),
                    values: values.len(),
                });
            }
            names
                .iter()
                .map(|n| n.as_str().map(str::to_owned))
                .collect()
        }
    };
    let options = values
        .into_iter()
        .zip(names)
        .map(|(value, title)| Opt::new(value.to_owned(), title))
        .collect();
    non_empty(options)
}

fn non_empty(options: Vec<Opt>) -> Result<Vec<Opt>, FieldProblem> {
    if options.is_empty() {
        Err(FieldProblem::NoOptions)
    } else {
        Ok(options)
    }
}

fn string(property: &Map<String, Value>, keyword: &str) -> Option<String> {
    property
        .get(keyword)
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// A non-negative integer keyword (`minLength`, `maxItems`, ...).
fn count(
    property: &Map<String, Value>,
    keyword: &'static str,
) -> Result<Option<usize>, FieldProblem> {
    match property.get(keyword) {
        None => Ok(None),
        Some(v) => v
            .as_u64()
            .and_then(|n| usize::try_from(n).ok())
            .map(Some)
            .ok_or(FieldProblem::BadKeyword {
                keyword,
                expected: "a non-negative integer",
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn one_field(property: Value) -> Result<Field, SchemaError> {
        let schema = json!({"type": "object", "properties": {"f": property}, "required": ["f"]});
        Ok(FormSchema::parse(&schema)?.fields.remove(0))
    }

    fn kind_of(property: Value) -> Kind {
        one_field(property).expect("a supported field").kind
    }

    fn problem_of(property: Value) -> FieldProblem {
        match one_field(property) {
            Err(SchemaError::Field { key, problem }) if key == "f" => problem,
            other => panic!("expected a field problem, got {other:?}"),
        }
    }

    fn opts(pairs: &[(&str, &str)]) -> Vec<Opt> {
        pairs
            .iter()
            .map(|(v, l)| Opt {
                value: (*v).into(),
                label: (*l).into(),
            })
            .collect()
    }

    #[test]
    fn a_string_keeps_its_format_lengths_and_default() {
        let kind = kind_of(json!({"type": "string", "format": "email", "minLength": 3,
            "maxLength": 40, "default": "a@b.c"}));
        assert_eq!(
            kind,
            Kind::Text(TextRules {
                format: Some(Format::Email),
                min_length: Some(3),
                max_length: Some(40),
                default: Some("a@b.c".into()),
            })
        );
    }

    #[test]
    fn an_integer_keeps_its_bounds_and_default() {
        let kind = kind_of(json!({"type": "integer", "minimum": 0, "maximum": 150, "default": 30}));
        assert_eq!(
            kind,
            Kind::Number(NumberRules {
                integer: true,
                minimum: Some(0.0),
                maximum: Some(150.0),
                default: Some(30.into()),
            })
        );
    }

    #[test]
    fn an_integer_ignores_a_fractional_default() {
        let Kind::Number(rules) = kind_of(json!({"type": "integer", "default": 2.5})) else {
            panic!("a number field");
        };
        assert_eq!(rules.default, None);
    }

    #[test]
    fn a_number_takes_a_fractional_default() {
        let Kind::Number(rules) = kind_of(json!({"type": "number", "default": 95.5})) else {
            panic!("a number field");
        };
        assert!(!rules.integer);
        assert_eq!(rules.default, serde_json::Number::from_f64(95.5));
    }

    #[test]
    fn a_boolean_keeps_its_default() {
        assert_eq!(
            kind_of(json!({"type": "boolean", "default": true})),
            Kind::Boolean {
                default: Some(true)
            }
        );
    }

    #[test]
    fn a_plain_enum_shows_its_values() {
        let kind = kind_of(json!({"type": "string", "enum": ["a", "b"], "default": "b"}));
        assert_eq!(
            kind,
            Kind::Choice(Choice {
                options: opts(&[("a", "a"), ("b", "b")]),
                default: Some(1),
            })
        );
    }

    #[test]
    fn a_one_of_enum_shows_its_titles() {
        let kind = kind_of(json!({"type": "string", "oneOf": [
            {"const": "v1", "title": "First"}, {"const": "v2", "title": "Second"}]}));
        assert_eq!(
            kind,
            Kind::Choice(Choice {
                options: opts(&[("v1", "First"), ("v2", "Second")]),
                default: None,
            })
        );
    }

    #[test]
    fn a_legacy_enum_shows_its_enum_names() {
        let kind = kind_of(json!({"type": "string", "enum": ["o1", "o2"],
            "enumNames": ["Option One", "Option Two"]}));
        let Kind::Choice(choice) = kind else {
            panic!("a choice");
        };
        assert_eq!(
            choice.options,
            opts(&[("o1", "Option One"), ("o2", "Option Two")])
        );
    }

    #[test]
    fn enum_names_of_another_length_are_refused() {
        let problem = problem_of(json!({"type": "string", "enum": ["a", "b"], "enumNames": ["A"]}));
        assert_eq!(
            problem,
            FieldProblem::EnumNamesMismatch {
                names: 1,
                values: 2
            }
        );
    }

    #[test]
    fn a_default_that_names_no_option_is_ignored() {
        let Kind::Choice(choice) =
            kind_of(json!({"type": "string", "enum": ["a"], "default": "z"}))
        else {
            panic!("a choice");
        };
        assert_eq!(choice.default, None);
    }

    #[test]
    fn a_multi_select_of_items_enum_keeps_its_counts_and_defaults() {
        let kind = kind_of(
            json!({"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]},
            "minItems": 1, "maxItems": 2, "default": ["c", "a"]}),
        );
        assert_eq!(
            kind,
            Kind::Multi(MultiChoice {
                options: opts(&[("a", "a"), ("b", "b"), ("c", "c")]),
                min_items: Some(1),
                max_items: Some(2),
                default: vec![0, 2],
            })
        );
    }

    #[test]
    fn a_multi_select_of_items_any_of_shows_its_titles() {
        let Kind::Multi(multi) = kind_of(json!({"type": "array", "items": {"anyOf": [
            {"const": "v1", "title": "First Choice"}]}}))
        else {
            panic!("a multi-select");
        };
        assert_eq!(multi.options, opts(&[("v1", "First Choice")]));
    }

    #[test]
    fn an_array_of_free_strings_is_refused() {
        let problem = problem_of(json!({"type": "array", "items": {"type": "string"}}));
        assert_eq!(problem, FieldProblem::ArrayNotOfEnum);
    }

    #[test]
    fn a_nested_object_is_refused_with_its_type() {
        let problem = problem_of(json!({"type": "object", "properties": {}}));
        assert_eq!(problem, FieldProblem::UnsupportedType("\"object\"".into()));
    }

    #[test]
    fn a_field_without_a_type_is_refused() {
        assert_eq!(
            problem_of(json!({"title": "x"})),
            FieldProblem::UnsupportedType("(none)".into())
        );
    }

    #[test]
    fn an_empty_enum_is_refused() {
        assert_eq!(
            problem_of(json!({"type": "string", "enum": []})),
            FieldProblem::NoOptions
        );
    }

    #[test]
    fn a_negative_length_is_refused() {
        assert_eq!(
            problem_of(json!({"type": "string", "minLength": -1})),
            FieldProblem::BadKeyword {
                keyword: "minLength",
                expected: "a non-negative integer"
            }
        );
    }

    #[test]
    fn a_schema_that_is_not_an_object_schema_is_refused() {
        assert_eq!(
            FormSchema::parse(&json!({"type": "string"})),
            Err(SchemaError::NotAnObject)
        );
        assert_eq!(
            FormSchema::parse(&json!({"type": "object"})),
            Err(SchemaError::NoProperties)
        );
    }

    #[test]
    fn required_must_name_properties() {
        let schema =
            json!({"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]});
        assert_eq!(
            FormSchema::parse(&schema),
            Err(SchemaError::UnknownRequired("b".into()))
        );
    }

    #[test]
    fn fields_not_listed_in_required_are_optional() {
        let schema = json!({"type": "object", "required": ["a"],
            "properties": {"a": {"type": "string", "title": "A"}, "b": {"type": "boolean"}}});
        let form = FormSchema::parse(&schema).expect("a form");
        let flags: Vec<_> = form
            .fields
            .iter()
            .map(|f| (f.label(), f.required))
            .collect();
        assert_eq!(flags, [("A", true), ("b", false)]);
    }
}
