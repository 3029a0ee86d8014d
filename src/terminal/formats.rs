//! The string formats an elicitation field may name (`email`, `uri`, `date`, `date-time`) and
//! their checks. They mean what JSON Schema's format vocabulary means, and use the parsers the
//! `jsonschema` crate uses for email and URI, so that what the form accepts is what a server
//! validating with a JSON Schema library accepts too.

/// A `format` of a string field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// An RFC 5321 mailbox, `name@example.com`, without a display name.
    Email,
    /// An RFC 3986 URI: a scheme, then the rest (`https://example.com/a`, `urn:isbn:1`).
    Uri,
    /// An RFC 3339 `full-date`, `2026-07-28`, a day that exists.
    Date,
    /// An RFC 3339 `date-time` with its offset, `2026-07-28T14:30:00Z`.
    DateTime,
}

impl Format {
    /// The format a schema names; `None` for a name the spec does not list (JSON Schema makes
    /// an unknown format an annotation, so the field is then a plain string).
    pub fn from_name(name: &str) -> Option<Format> {
        match name {
            "email" => Some(Format::Email),
            "uri" => Some(Format::Uri),
            "date" => Some(Format::Date),
            "date-time" => Some(Format::DateTime),
            _ => None,
        }
    }

    /// What the user reads when a value does not fit: a noun and an example.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Email => "an email address like name@example.com",
            Format::Uri => "a URI with a scheme, like https://example.com/page",
            Format::Date => "a date as YYYY-MM-DD, like 2026-07-28",
            Format::DateTime => "a date and time with an offset, like 2026-07-28T14:30:00Z",
        }
    }

    /// Whether `value` is of this format.
    pub fn accepts(self, value: &str) -> bool {
        match self {
            Format::Email => is_email(value),
            Format::Uri => fluent_uri::Uri::parse(value).is_ok(),
            Format::Date => is_date(value),
            Format::DateTime => {
                time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
                    .is_ok()
            }
        }
    }
}

fn is_email(value: &str) -> bool {
    // The crate's default also takes `Name <name@example.com>`, which is not an address.
    let options = email_address::Options {
        allow_display_text: false,
        ..email_address::Options::default()
    };
    email_address::EmailAddress::parse_with_options(value, options).is_ok()
}

/// `YYYY-MM-DD`, four, two and two ASCII digits, naming a day of the calendar.
fn is_date(value: &str) -> bool {
    let bytes = value.as_bytes();
    if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
        return false;
    }
    let number = |range: std::ops::Range<usize>| {
        value
            .get(range)
            .filter(|part| part.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|part| part.parse::<u16>().ok())
    };
    let (Some(year), Some(month), Some(day)) = (number(0..4), number(5..7), number(8..10)) else {
        return false;
    };
    let Ok(month) = time::Month::try_from(month as u8) else {
        return false;
    };
    time::Date::from_calendar_date(i32::from(year), month, day as u8).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn email_takes_an_address_and_refuses_a_display_name_or_a_bare_word() {
        assert!(Format::Email.accepts("ada@example.com"));
        assert!(!Format::Email.accepts("Ada <ada@example.com>"));
        assert!(!Format::Email.accepts("ada"));
        assert!(!Format::Email.accepts("ada@"));
    }

    #[test]
    fn uri_needs_a_scheme() {
        assert!(Format::Uri.accepts("https://example.com/a?b=c"));
        assert!(Format::Uri.accepts("urn:isbn:0451450523"));
        assert!(!Format::Uri.accepts("example.com/a"));
        assert!(!Format::Uri.accepts("https://exa mple.com"));
    }

    #[test]
    fn date_is_a_day_that_exists() {
        assert!(Format::Date.accepts("2024-02-29"));
        assert!(!Format::Date.accepts("2023-02-29"));
        assert!(!Format::Date.accepts("2026-13-01"));
        assert!(!Format::Date.accepts("2026-7-28"));
        assert!(!Format::Date.accepts("2026-07-28T00:00:00Z"));
    }

    #[test]
    fn date_time_needs_an_offset() {
        assert!(Format::DateTime.accepts("2026-07-28T14:30:00Z"));
        assert!(Format::DateTime.accepts("2026-07-28T14:30:00.5+02:00"));
        assert!(!Format::DateTime.accepts("2026-07-28T14:30:00"));
        assert!(!Format::DateTime.accepts("2026-07-28"));
    }

    #[test]
    fn an_unlisted_format_name_is_none() {
        assert_eq!(Format::from_name("hostname"), None);
        assert_eq!(Format::from_name("date-time"), Some(Format::DateTime));
    }
}
