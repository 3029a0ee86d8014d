//! A URL-mode elicitation: the server wants the person to visit a page (to sign in, to pay,
//! to enter a secret the server must not see in a form). The person reads the message, the
//! whole URL and its host, and consents or not. Nothing is opened here, before or after: on
//! consent the person opens the URL themselves, and the answer, `accept` without content,
//! tells the server only that they agreed to go (2026-07-28 §2.7).

use fluent_uri::Uri;

use super::ask::{Ask, SelectQuestion, Stop};
use super::display::{clean, one_line};
use super::result::ElicitResult;

const QUESTION: &str = "Will you open this page?";
const OPTIONS: [&str; 3] = ["Yes, I will open it", "No (decline)", "Cancel"];

/// Shows `message` and `url`, and asks for consent. Esc is `cancel`.
pub fn consent<A: Ask>(ask: &mut A, message: &str, url: &Uri<&str>) -> Result<ElicitResult, Stop> {
    match run(ask, message, url) {
        Err(Stop::Escaped) => Ok(ElicitResult::cancel()),
        other => other,
    }
}

fn run<A: Ask>(ask: &mut A, message: &str, url: &Uri<&str>) -> Result<ElicitResult, Stop> {
    let mut text = format!(
        "The server asks you to open a web page: {}\n  URL:  {}",
        clean(message),
        one_line(url.as_str())
    );
    if let Some(authority) = url.authority() {
        text.push_str(&format!("\n  Host: {}", one_line(authority.host())));
    }
    if url.scheme().as_str() != "https" {
        text.push_str("\n  This page is not served over https.");
    }
    text.push_str("\nNothing opens by itself: if you agree, open the URL in your browser.");
    ask.say(&text)?;
    let options: Vec<String> = OPTIONS.iter().map(|o| (*o).to_owned()).collect();
    let picked = ask.select(&SelectQuestion {
        label: QUESTION,
        help: "Yes tells the server you will go there · Esc cancels",
        options: &options,
        start: 0,
    })?;
    Ok(match picked {
        0 => ElicitResult::consent(),
        1 => ElicitResult::decline(),
        _ => ElicitResult::cancel(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::terminal::scripted::{Scripted, Step};

    fn asked(url: &str, steps: Vec<Step>) -> (ElicitResult, Scripted) {
        let mut ask = Scripted::new(steps);
        let url = Uri::parse(url).expect("a URI");
        let result = consent(&mut ask, "Sign in", &url).expect("an answer");
        ask.assert_script_used();
        (result, ask)
    }

    #[test]
    fn the_url_and_its_host_are_shown_before_the_question() {
        let (_, ask) = asked("https://auth.example.com/login?x=1", vec![Step::Enter]);
        let lines: Vec<_> = ask.lines().collect();
        assert!(
            lines[0].contains("URL:  https://auth.example.com/login?x=1"),
            "{lines:?}"
        );
        assert!(lines[0].contains("Host: auth.example.com"));
        assert!(lines[1].starts_with("select: Will you open this page?"));
    }

    #[test]
    fn consent_is_accept_without_content() {
        let (result, _) = asked(
            "https://example.com",
            vec![Step::Choose("Yes, I will open it")],
        );
        assert_eq!(result, ElicitResult::consent());
    }

    #[test]
    fn no_is_decline() {
        let (result, _) = asked("https://example.com", vec![Step::Choose("No (decline)")]);
        assert_eq!(result, ElicitResult::decline());
    }

    #[test]
    fn esc_is_cancel() {
        let (result, _) = asked("https://example.com", vec![Step::Esc]);
        assert_eq!(result, ElicitResult::cancel());
    }

    #[test]
    fn a_page_not_on_https_is_pointed_out() {
        let (_, ask) = asked("http://example.com", vec![Step::Enter]);
        assert!(ask.saw("not served over https"));
    }
}
