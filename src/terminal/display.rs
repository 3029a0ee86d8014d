//! Server text made safe to print. Messages, titles, descriptions, options and URLs come from
//! the server; a control character in them (an ANSI escape above all) could move the cursor,
//! recolour or rewrite what the person reads, for instance to show another URL than the one
//! sent. Every such character is shown as an escape (`\u{1b}`) instead; newlines and tabs stay.

use std::borrow::Cow;

/// `text` with its control characters, other than newline and tab, written as escapes.
pub fn clean(text: &str) -> Cow<'_, str> {
    let unsafe_char = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !text.chars().any(unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if unsafe_char(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` on one line: [`clean`], with newlines and tabs as spaces (for labels and options).
pub fn one_line(text: &str) -> String {
    clean(text).replace(['\n', '\t'], " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_escape_sequence_is_shown_not_obeyed() {
        assert_eq!(clean("a\u{1b}[2Kb"), "a\\u{1b}[2Kb");
    }

    #[test]
    fn plain_text_with_newlines_is_kept_as_is() {
        assert!(matches!(
            clean("two\nlines\t!"),
            Cow::Borrowed("two\nlines\t!")
        ));
    }

    #[test]
    fn one_line_flattens_newlines() {
        assert_eq!(one_line("a\nb\u{7}"), "a b\\u{7}");
    }
}
