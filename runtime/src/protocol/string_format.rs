//! The four string formats an elicitation form may ask for (`email`, `uri`, `date`,
//! `date-time`), checked the way a form answer needs: strictly where the format has one
//! spelling (RFC 3339 dates and times), leniently where real addresses and URIs vary more than
//! their grammars admit, so that no answer a user could reasonably type is refused.
//!
//! Every check is one pass over the string, without allocating.

/// A `format` of the elicitation `StringSchema`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    Email,
    Uri,
    Date,
    DateTime,
}

impl Format {
    /// The format a schema names, or `None` for one this module does not know.
    pub(crate) fn from_name(name: &str) -> Option<Format> {
        match name {
            "email" => Some(Format::Email),
            "uri" => Some(Format::Uri),
            "date" => Some(Format::Date),
            "date-time" => Some(Format::DateTime),
            _ => None,
        }
    }

    /// The name the schema uses.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Format::Email => "email",
            Format::Uri => "uri",
            Format::Date => "date",
            Format::DateTime => "date-time",
        }
    }

    /// Whether `s` is a value of this format.
    pub(crate) fn matches(self, s: &str) -> bool {
        match self {
            Format::Email => is_email(s),
            Format::Uri => is_uri(s),
            Format::Date => is_date(s.as_bytes()),
            Format::DateTime => is_date_time(s.as_bytes()),
        }
    }
}

/// `local@domain`: both parts non-empty, no whitespace or control characters, and a domain of
/// non-empty dot-separated labels or a bracketed address literal. The local part is not
/// parsed further (a quoted local part may hold almost anything, `@` included, so the domain
/// is what follows the last `@`).
fn is_email(s: &str) -> bool {
    let Some((local, domain)) = s.rsplit_once('@') else {
        return false;
    };
    if local.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if domain.starts_with('[') && domain.ends_with(']') && domain.len() > 2 {
        return true;
    }
    !domain.is_empty() && domain.split('.').all(|label| !label.is_empty())
}

/// An absolute URI (RFC 3986): a scheme (a letter, then letters, digits, `+`, `-` or `.`), a
/// colon, and the rest in printable ASCII with no space. Characters RFC 3986 excludes (`<`,
/// `>`, `"`, `{`, `}`, `|`, `\`, `^`, `` ` ``) are refused as well; the structure after the
/// scheme is not parsed further.
fn is_uri(s: &str) -> bool {
    let Some((scheme, _)) = s.split_once(':') else {
        return false;
    };
    let mut scheme_bytes = scheme.bytes();
    let scheme_ok = scheme_bytes.next().is_some_and(|b| b.is_ascii_alphabetic())
        && scheme_bytes.all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'-' | b'.'));
    scheme_ok
        && s.bytes()
            .all(|b| b.is_ascii_graphic() && !b"<>\"{}|\\^`".contains(&b))
}

/// RFC 3339 `full-date`: `YYYY-MM-DD`, a real day of a real month (leap years counted).
fn is_date(s: &[u8]) -> bool {
    if s.len() != 10 || s[4] != b'-' || s[7] != b'-' {
        return false;
    }
    let (Some(year), Some(month), Some(day)) =
        (digits(&s[0..4]), digits(&s[5..7]), digits(&s[8..10]))
    else {
        return false;
    };
    (1..=12).contains(&month) && (1..=days_in_month(year, month)).contains(&day)
}

/// RFC 3339 `date-time`: a full date, `T` (or `t`), `HH:MM:SS` with an optional fraction, and
/// an offset: `Z` (or `z`) or `+HH:MM` / `-HH:MM`. Second 60 is allowed (a leap second).
fn is_date_time(s: &[u8]) -> bool {
    if s.len() < 20 || !is_date(&s[..10]) || !matches!(s[10], b'T' | b't') {
        return false;
    }
    let time = &s[11..];
    if !is_clock(&time[..8], 60) {
        return false;
    }
    let mut rest = &time[8..];
    if let Some(fraction) = rest.strip_prefix(b".") {
        let digits = fraction.iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return false;
        }
        rest = &fraction[digits..];
    }
    match rest {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', offset @ ..] => {
            offset.len() == 5 && offset[2] == b':' && is_hour_minute(offset)
        }
        _ => false,
    }
}

/// `HH:MM:SS` with the hour below 24, the minute below 60 and the second at most `max_second`.
fn is_clock(s: &[u8], max_second: u32) -> bool {
    s.len() == 8
        && s[2] == b':'
        && s[5] == b':'
        && is_hour_minute(&s[..5])
        && digits(&s[6..8]).is_some_and(|second| second <= max_second)
}

/// `HH:MM` (the separator at index 2 is the caller's to check).
fn is_hour_minute(s: &[u8]) -> bool {
    matches!(
        (digits(&s[0..2]), digits(&s[3..5])),
        (Some(hour), Some(minute)) if hour < 24 && minute < 60
    )
}

/// The value of an all-digit ASCII slice, or `None` if a byte is not a digit.
fn digits(s: &[u8]) -> Option<u32> {
    s.iter().try_fold(0u32, |n, b| {
        b.is_ascii_digit().then(|| n * 10 + u32::from(b - b'0'))
    })
}

fn days_in_month(year: u32, month: u32) -> u32 {
    match month {
        2 if year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400)) => {
            29
        }
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_email_needs_a_local_part_and_a_domain() {
        for ok in [
            "ada@example.com",
            "a.b+tag@sub.example.org",
            "\"a@b\"@example.com",
            "x@[192.0.2.1]",
            "x@localhost",
        ] {
            assert!(Format::Email.matches(ok), "{ok}");
        }
        for bad in [
            "",
            "ada",
            "@example.com",
            "ada@",
            "ada@example..com",
            "ada @example.com",
            "ada@.com",
            "ada@example.com.",
        ] {
            assert!(!Format::Email.matches(bad), "{bad}");
        }
    }

    #[test]
    fn a_uri_needs_a_scheme_and_no_space() {
        for ok in [
            "https://example.com/a?b=c#d",
            "mailto:ada@example.com",
            "urn:isbn:0451450523",
            "git+ssh://host/repo",
        ] {
            assert!(Format::Uri.matches(ok), "{ok}");
        }
        for bad in [
            "",
            "example.com",
            "/relative/path",
            "1http://x",
            "https://exa mple.com",
            "https://x/<a>",
            "https://é.fr",
            ":nothing",
        ] {
            assert!(!Format::Uri.matches(bad), "{bad}");
        }
    }

    #[test]
    fn a_date_is_a_real_day_in_rfc_3339_form() {
        for ok in ["2024-02-29", "2000-02-29", "1999-12-31", "2026-07-28"] {
            assert!(Format::Date.matches(ok), "{ok}");
        }
        for bad in [
            "2023-02-29",
            "1900-02-29",
            "2024-13-01",
            "2024-00-10",
            "2024-04-31",
            "2024-1-01",
            "24-01-01",
            "2024/01/01",
            "2024-01-01T00:00:00Z",
        ] {
            assert!(!Format::Date.matches(bad), "{bad}");
        }
    }

    #[test]
    fn a_date_time_has_a_time_and_an_offset() {
        for ok in [
            "2026-07-28T10:00:00Z",
            "2026-07-28t10:00:00.123z",
            "2026-07-28T23:59:60+01:00",
            "2026-07-28T00:00:00-05:30",
        ] {
            assert!(Format::DateTime.matches(ok), "{ok}");
        }
        for bad in [
            "2026-07-28",
            "2026-07-28T10:00",
            "2026-07-28T10:00:00",
            "2026-07-28 10:00:00Z",
            "2026-07-28T24:00:00Z",
            "2026-07-28T10:60:00Z",
            "2026-07-28T10:00:61Z",
            "2026-07-28T10:00:00.Z",
            "2026-07-28T10:00:00+0100",
            "2026-07-28T10:00:00+24:00",
            "2026-02-30T10:00:00Z",
        ] {
            assert!(!Format::DateTime.matches(bad), "{bad}");
        }
    }

    #[test]
    fn an_unknown_format_name_is_not_a_format() {
        assert_eq!(Format::from_name("ipv4"), None);
        assert_eq!(Format::from_name("date-time"), Some(Format::DateTime));
    }
}
