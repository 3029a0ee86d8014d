//! The `requestedSchema` of a form elicitation, compiled to the few bytes that checking an
//! answer needs.
//!
//! A form schema is a restricted subset of JSON Schema: a flat object of primitive properties
//! (`PrimitiveSchemaDefinition` in the 2025-11-25 and 2026-07-28 schemas). What is compiled,
//! per property:
//! - `type` `string`, with `minLength`, `maxLength`, `format` (`email`, `uri`, `date`,
//!   `date-time`) and the options of a single-select enum (`enum`; `oneOf` of `const`/`title`;
//!   the legacy `enum` with `enumNames`, whose names are display only);
//! - `type` `number` or `integer`, with `minimum` and `maximum`;
//! - `type` `boolean`;
//! - `type` `array` (a multi-select), with `minItems`, `maxItems` and the options of
//!   `items.enum` or `items.anyOf` (`const`/`title`);
//! - an `enum` or `oneOf` without a `type`: the value must be one of its options;
//! - the top-level `required`.
//!
//! Anything else is left unchecked rather than refused: an unknown `type`, a keyword outside
//! the subset, an option list with an entry that is not a string. A check the runtime does
//! not understand must never turn away an answer that is valid.
//!
//! **Why bytes.** On the stateless wire a retry's answers are checked against the schema the
//! previous round asked with, and the only thing that survives between rounds is the sealed
//! `requestState`. So the compiled schema travels inside it, and is read there without being
//! decoded into owned values first: [`fields`] walks the bytes and hands out borrowed views.
//! The layout, per property, in the schema's key order:
//!
//! ```text
//! field   = head:u8 name:str [p0] [p1] [p2] [p3]    (each pN present when head bit 4+N is set)
//! head    = kind (bits 0-2) | required (bit 3) | which of p0..p3 follow (bits 4-7)
//! string  : p0 minLength:varint  p1 maxLength:varint  p2 format:u8  p3 options:list
//! number,
//! integer : p0 minimum:f64 (big-endian bits)  p1 maximum:f64
//! array   : p0 minItems:varint  p1 maxItems:varint  p2 items are strings (no bytes)  p3 options:list
//! any,
//! boolean : nothing
//! str     = len:varint bytes (UTF-8)        list = count:varint str*   (sorted, no repeats)
//! ```
//!
//! Varints are LEB128. `greet`'s `{name: string, required}` is 6 bytes.

use serde_json::{Map, Value};

use super::string_format::Format;

/// A compiled form schema: the compact bytes described in the module docs. Empty when the
/// schema has nothing the runtime checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FormSchema(Box<[u8]>);

impl FormSchema {
    /// Compiles a `requestedSchema`. Never fails: what is not understood is not checked.
    pub(crate) fn compile(requested_schema: &Value) -> FormSchema {
        let mut out = Vec::new();
        let properties = requested_schema
            .get("properties")
            .and_then(Value::as_object);
        let required: Vec<&str> = requested_schema
            .get("required")
            .and_then(Value::as_array)
            .map(|names| names.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        for (name, property) in properties.into_iter().flatten() {
            write_field(&mut out, name, required.contains(&name.as_str()), property);
        }
        // A required name with no property of its own must be present, whatever its value.
        for name in required {
            if !properties.is_some_and(|p| p.contains_key(name)) {
                write_field(&mut out, name, true, &Value::Null);
            }
        }
        FormSchema(out.into_boxed_slice())
    }

    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

const KIND_ANY: u8 = 0;
const KIND_STRING: u8 = 1;
const KIND_NUMBER: u8 = 2;
const KIND_INTEGER: u8 = 3;
const KIND_BOOLEAN: u8 = 4;
const KIND_ARRAY: u8 = 5;
const KIND_MASK: u8 = 0b0111;
const REQUIRED: u8 = 0b1000;
/// The head bit saying optional part `n` (0 to 3) follows.
const fn has(n: u8) -> u8 {
    0x10 << n
}

/// One property, as [`fields`] reads it back.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Field<'a> {
    pub(crate) name: &'a str,
    pub(crate) required: bool,
    pub(crate) rule: Rule<'a>,
}

/// What a property's value must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Rule<'a> {
    /// Anything (a property whose schema the runtime does not check).
    Any,
    String {
        min_length: Option<u64>,
        max_length: Option<u64>,
        format: Option<Format>,
        options: Option<Options<'a>>,
    },
    Number {
        integer: bool,
        minimum: Option<f64>,
        maximum: Option<f64>,
    },
    Boolean,
    Array {
        min_items: Option<u64>,
        max_items: Option<u64>,
        items: Items<'a>,
    },
}

/// What the items of a multi-select must be.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Items<'a> {
    Any,
    Strings,
    OneOf(Options<'a>),
}

/// An enum's options: `count` strings, sorted and without repeats, packed as `str`s.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Options<'a> {
    count: u64,
    packed: &'a [u8],
}

impl<'a> Options<'a> {
    /// The options in order, as bytes.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &'a [u8]> + 'a {
        let mut reader = Reader(self.packed);
        (0..self.count).map_while(move |_| reader.str_bytes())
    }

    /// Whether `value` is one of the options.
    pub(crate) fn contains(&self, value: &str) -> bool {
        self.iter().any(|option| option == value.as_bytes())
    }
}

/// Why the bytes of a schema cannot be read. Only the runtime writes them and only
/// authenticated bytes are read, so this is a bug, never a client's doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("compiled form schema is truncated or not one the runtime wrote")]
pub(crate) struct Unreadable;

/// The properties of a compiled schema, in order.
pub(crate) fn fields(bytes: &[u8]) -> impl Iterator<Item = Result<Field<'_>, Unreadable>> {
    let mut reader = Reader(bytes);
    std::iter::from_fn(move || (!reader.0.is_empty()).then(|| reader.field().ok_or(Unreadable)))
}

// ---------------------------------------------------------------------------------------------
// Writing

fn write_field(out: &mut Vec<u8>, name: &str, required: bool, property: &Value) {
    let empty = Map::new();
    let p = property.as_object().unwrap_or(&empty);
    let head_at = out.len();
    out.push(0);
    write_str(out, name.as_bytes());
    let mut head = if required { REQUIRED } else { 0 };
    let options = || options_of(p.get("enum"), p.get("oneOf"));
    match p.get("type").and_then(Value::as_str) {
        Some("string") => {
            head |= KIND_STRING;
            head |= write_varint_part(out, 0, p.get("minLength"));
            head |= write_varint_part(out, 1, p.get("maxLength"));
            let format = p
                .get("format")
                .and_then(Value::as_str)
                .and_then(Format::from_name);
            if let Some(format) = format {
                out.push(format_code(format));
                head |= has(2);
            }
            head |= write_options_part(out, 3, options());
        }
        Some(kind @ ("number" | "integer")) => {
            head |= if kind == "integer" {
                KIND_INTEGER
            } else {
                KIND_NUMBER
            };
            for (n, key) in [(0, "minimum"), (1, "maximum")] {
                if let Some(bound) = p.get(key).and_then(Value::as_f64) {
                    out.extend_from_slice(&bound.to_bits().to_be_bytes());
                    head |= has(n);
                }
            }
        }
        Some("boolean") => head |= KIND_BOOLEAN,
        Some("array") => {
            head |= KIND_ARRAY;
            head |= write_varint_part(out, 0, p.get("minItems"));
            head |= write_varint_part(out, 1, p.get("maxItems"));
            let items = p.get("items");
            let item = |k: &str| items.and_then(|i| i.get(k));
            if item("type").and_then(Value::as_str) == Some("string") {
                head |= has(2);
            }
            head |= write_options_part(out, 3, options_of(item("enum"), item("anyOf")));
        }
        // An enum with no type: still one of its options.
        None if options().is_some() => {
            head |= KIND_STRING;
            head |= write_options_part(out, 3, options());
        }
        _ => head |= KIND_ANY,
    }
    out[head_at] = head;
}

/// The options of `enum` (all strings) or, failing that, of a `oneOf`/`anyOf` list of
/// `{const}` objects (all string consts): sorted, repeats dropped. `None` when neither is a
/// list the runtime fully understands, so that nothing is refused on a partial reading.
fn options_of<'v>(enum_: Option<&'v Value>, consts: Option<&'v Value>) -> Option<Vec<&'v str>> {
    let from_enum = enum_
        .and_then(Value::as_array)
        .and_then(|values| values.iter().map(Value::as_str).collect::<Option<Vec<_>>>());
    let from_consts = || {
        consts.and_then(Value::as_array).and_then(|entries| {
            entries
                .iter()
                .map(|e| e.get("const").and_then(Value::as_str))
                .collect::<Option<Vec<_>>>()
        })
    };
    let mut options = from_enum.or_else(from_consts)?;
    options.sort_unstable();
    options.dedup();
    Some(options)
}

fn write_varint_part(out: &mut Vec<u8>, n: u8, value: Option<&Value>) -> u8 {
    match value.and_then(Value::as_u64) {
        Some(v) => {
            write_varint(out, v);
            has(n)
        }
        None => 0,
    }
}

fn write_options_part(out: &mut Vec<u8>, n: u8, options: Option<Vec<&str>>) -> u8 {
    let Some(options) = options else {
        return 0;
    };
    write_varint(out, options.len() as u64);
    for option in options {
        write_str(out, option.as_bytes());
    }
    has(n)
}

pub(crate) fn write_str(out: &mut Vec<u8>, s: &[u8]) {
    write_varint(out, s.len() as u64);
    out.extend_from_slice(s);
}

fn write_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn format_code(format: Format) -> u8 {
    match format {
        Format::Email => 1,
        Format::Uri => 2,
        Format::Date => 3,
        Format::DateTime => 4,
    }
}

// ---------------------------------------------------------------------------------------------
// Reading

/// A cursor over compact bytes; every read is `None` past the end.
pub(crate) struct Reader<'a>(pub(crate) &'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Option<u8> {
        let (&b, rest) = self.0.split_first()?;
        self.0 = rest;
        Some(b)
    }

    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let bytes = self.0.get(..n)?;
        self.0 = &self.0[n..];
        Some(bytes)
    }

    fn varint(&mut self) -> Option<u64> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            v |= u64::from(b & 0x7f) << shift;
            if b < 0x80 {
                return Some(v);
            }
        }
        None
    }

    pub(crate) fn str_bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        self.take(len)
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.str_bytes()?).ok()
    }

    fn f64(&mut self) -> Option<f64> {
        let bytes: [u8; 8] = self.take(8)?.try_into().ok()?;
        Some(f64::from_bits(u64::from_be_bytes(bytes)))
    }

    fn options(&mut self) -> Option<Options<'a>> {
        let count = self.varint()?;
        let start = self.0;
        for _ in 0..count {
            self.str_bytes()?;
        }
        let packed = &start[..start.len() - self.0.len()];
        Some(Options { count, packed })
    }

    fn field(&mut self) -> Option<Field<'a>> {
        let head = self.byte()?;
        let name = self.str()?;
        let part = |n: u8| head & has(n) != 0;
        let rule = match head & KIND_MASK {
            KIND_ANY => Rule::Any,
            KIND_STRING => Rule::String {
                min_length: if part(0) { Some(self.varint()?) } else { None },
                max_length: if part(1) { Some(self.varint()?) } else { None },
                format: if part(2) {
                    Some(format_of(self.byte()?)?)
                } else {
                    None
                },
                options: if part(3) { Some(self.options()?) } else { None },
            },
            kind @ (KIND_NUMBER | KIND_INTEGER) => Rule::Number {
                integer: kind == KIND_INTEGER,
                minimum: if part(0) { Some(self.f64()?) } else { None },
                maximum: if part(1) { Some(self.f64()?) } else { None },
            },
            KIND_BOOLEAN => Rule::Boolean,
            KIND_ARRAY => Rule::Array {
                min_items: if part(0) { Some(self.varint()?) } else { None },
                max_items: if part(1) { Some(self.varint()?) } else { None },
                items: match (part(2), part(3)) {
                    (_, true) => Items::OneOf(self.options()?),
                    (true, false) => Items::Strings,
                    (false, false) => Items::Any,
                },
            },
            _ => return None,
        };
        Some(Field {
            name,
            required: head & REQUIRED != 0,
            rule,
        })
    }
}

fn format_of(code: u8) -> Option<Format> {
    match code {
        1 => Some(Format::Email),
        2 => Some(Format::Uri),
        3 => Some(Format::Date),
        4 => Some(Format::DateTime),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Every field of `schema`, compiled and read back.
    fn read_back(schema: &FormSchema) -> Vec<Field<'_>> {
        fields(schema.as_bytes())
            .collect::<Result<_, _>>()
            .expect("the runtime reads what it wrote")
    }

    fn options<'a>(rule: &Rule<'a>) -> Vec<&'a [u8]> {
        match rule {
            Rule::String {
                options: Some(o), ..
            }
            | Rule::Array {
                items: Items::OneOf(o),
                ..
            } => o.iter().collect(),
            other => panic!("no options in {other:?}"),
        }
    }

    #[test]
    fn greets_one_required_string_compiles_to_six_bytes() {
        let schema = FormSchema::compile(&json!({"type": "object",
            "properties": {"name": {"type": "string", "title": "Your name"}}, "required": ["name"]}));
        assert_eq!(
            schema.as_bytes(),
            [KIND_STRING | REQUIRED, 4, b'n', b'a', b'm', b'e']
        );
    }

    #[test]
    fn every_constraint_of_the_subset_reads_back_as_written() {
        let schema = FormSchema::compile(&json!({"type": "object", "properties": {
            "s": {"type": "string", "minLength": 1, "maxLength": 300, "format": "email"},
            "n": {"type": "number", "minimum": -1.5, "maximum": 2.5},
            "i": {"type": "integer", "minimum": 0},
            "b": {"type": "boolean"},
            "a": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["x"]}},
        }, "required": ["b"]}));
        let fields = read_back(&schema);
        let by_name = |name: &str| fields.iter().find(|f| f.name == name).expect("field").rule;
        assert!(matches!(
            by_name("s"),
            Rule::String {
                min_length: Some(1),
                max_length: Some(300),
                format: Some(Format::Email),
                options: None
            }
        ));
        assert_eq!(
            by_name("n"),
            Rule::Number {
                integer: false,
                minimum: Some(-1.5),
                maximum: Some(2.5)
            }
        );
        assert_eq!(
            by_name("i"),
            Rule::Number {
                integer: true,
                minimum: Some(0.0),
                maximum: None
            }
        );
        assert_eq!(by_name("b"), Rule::Boolean);
        assert!(matches!(
            by_name("a"),
            Rule::Array {
                min_items: Some(1),
                max_items: Some(2),
                items: Items::OneOf(_)
            }
        ));
        assert_eq!(options(&by_name("a")), [b"x"]);
        let required: Vec<&str> = fields
            .iter()
            .filter(|f| f.required)
            .map(|f| f.name)
            .collect();
        assert_eq!(required, ["b"]);
    }

    #[test]
    fn options_are_stored_sorted_without_repeats() {
        let schema = FormSchema::compile(&json!({"properties": {
            "e": {"type": "string", "enum": ["b", "a", "b"]}}}));
        assert_eq!(options(&read_back(&schema)[0].rule), [b"a", b"b"]);
    }

    #[test]
    fn a_titled_enum_stores_its_consts_and_not_its_titles() {
        let schema = FormSchema::compile(&json!({"properties": {
            "e": {"type": "string", "oneOf": [{"const": "v", "title": "Vee"}]}}}));
        assert_eq!(options(&read_back(&schema)[0].rule), [b"v"]);
    }

    #[test]
    fn a_property_outside_the_subset_compiles_to_any() {
        let schema = FormSchema::compile(&json!({"properties": {
            "o": {"type": "object"}, "u": {"type": ["string", "null"]}, "x": true}}));
        assert!(read_back(&schema).iter().all(|f| f.rule == Rule::Any));
    }

    #[test]
    fn a_schema_without_properties_or_required_compiles_to_nothing() {
        for schema in [
            json!({"type": "object"}),
            json!(null),
            json!("string"),
            json!({"properties": []}),
        ] {
            assert!(
                FormSchema::compile(&schema).as_bytes().is_empty(),
                "{schema}"
            );
        }
    }

    #[test]
    fn long_names_and_large_bounds_survive_the_varints() {
        let name = "n".repeat(300);
        let schema = FormSchema::compile(&json!({"properties": {
            name.clone(): {"type": "string", "maxLength": u64::MAX}}}));
        let fields = read_back(&schema);
        assert_eq!(fields[0].name, name);
        assert!(matches!(
            fields[0].rule,
            Rule::String {
                max_length: Some(u64::MAX),
                ..
            }
        ));
    }

    #[test]
    fn truncated_bytes_are_unreadable() {
        let schema = FormSchema::compile(&json!({"properties": {
            "n": {"type": "number", "minimum": 1}}}));
        let bytes = schema.as_bytes();
        for cut in 1..bytes.len() {
            assert!(
                fields(&bytes[..cut]).any(|f| f.is_err()),
                "{cut} bytes read as a whole schema"
            );
        }
    }
}
