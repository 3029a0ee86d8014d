//! `roundtrip call` driven through a pseudo-terminal: a person fills in an elicitation form
//! that a real server sent, with a string, an integer, an enum and a boolean, types one
//! invalid value and is asked again; the command retries with the answers and prints the
//! tool's result.
//!
//! The program runs in a pty (rexpect) with stdin, stdout and stderr on it, as in a terminal,
//! and the test types keys and waits for what inquire draws (ANSI codes stripped).

use std::process::Command;
use std::time::Duration;

use rexpect::session::{spawn_with_options, Options, PtySession};
use serde_json::{json, Value};

use crate::support::{Server, LAB};

/// Each wait for a screen; inquire draws within milliseconds, a debug build starts in less
/// than a second.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(20);
/// A pty opens with no size (0 columns); inquire needs one to lay out its prompts.
const SIZE: &str = "stty cols 120 rows 40";

const ENTER: &str = "\r";
const BACKSPACE: &str = "\x7f";
const DOWN: &str = "\x1b[B";

/// Starts `roundtrip ARGS...` in a pty of [`SIZE`].
fn launch(args: &[&str]) -> PtySession {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{SIZE} && exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_roundtrip"))
        .args(args)
        .env("TERM", "xterm-256color");
    let options = Options::new()
        .timeout_ms(Some(SCREEN_TIMEOUT.as_millis() as u64))
        .strip_ansi_escape_codes(true);
    spawn_with_options(command, options).expect("roundtrip starts in a pty")
}

/// Waits until the screen shows `text`.
fn see(pty: &mut PtySession, text: &str) {
    if let Err(e) = pty.exp_string(text) {
        panic!("the screen never showed {text:?}: {e}");
    }
}

fn keys(pty: &mut PtySession, keys: &str) {
    pty.send(keys).expect("keys reach the pty");
    pty.flush().expect("keys reach the pty");
}

/// The person's part: every key, and every screen waited for before it.
fn fill_in_the_signup_form(pty: &mut PtySession) {
    see(pty, "The server asks: Create your lab account");
    see(pty, "Answer this form?");
    keys(pty, ENTER);

    see(pty, "Age");
    see(pty, "a whole number from 0 to 150");
    keys(pty, "abc");
    keys(pty, ENTER);
    see(pty, "enter a whole number");
    keys(pty, &BACKSPACE.repeat(3));
    keys(pty, "36");
    keys(pty, ENTER);

    see(pty, "Name");
    keys(pty, "Ada");
    keys(pty, ENTER);

    see(pty, "Newsletter (optional)");
    keys(pty, "y");
    see(pty, "Yes");
    keys(pty, ENTER);

    see(pty, "Plan");
    see(pty, "Free");
    keys(pty, DOWN);
    keys(pty, ENTER);

    see(pty, "Your answers:");
    see(pty, "Send these answers?");
    keys(pty, ENTER);
}

/// What the program printed once the form was sent, up to its exit.
fn output_after_the_form(pty: &mut PtySession) -> String {
    match pty.exp_eof() {
        Ok(rest) => rest,
        Err(e) => panic!("roundtrip did not exit after the form: {e}"),
    }
}

/// The tool's result: the last line of JSON the program printed (`--json`).
fn result_of(output: &str) -> Value {
    let line = output
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON result in the output: {output:?}"));
    serde_json::from_str(line.trim()).expect("the result is JSON")
}

#[actix_web::test]
async fn a_person_fills_in_a_form_in_a_terminal_and_an_invalid_value_is_asked_again() {
    let server = Server::start().await;
    let url = server.url(LAB);

    // rexpect blocks: the person types on a thread of their own while the server serves.
    let output = actix_web::rt::task::spawn_blocking(move || {
        let mut pty = launch(&["call", &url, "ask_signup", "--json"]);
        fill_in_the_signup_form(&mut pty);
        output_after_the_form(&mut pty)
    })
    .await
    .expect("the pty thread ends");

    let result = result_of(&output);
    assert_eq!(
        result["structuredContent"]["answers"]["signup"],
        json!({"action": "accept",
            "content": {"name": "Ada", "age": 36, "plan": "pro", "newsletter": true}}),
        "{result}"
    );
    assert_eq!(result["resultType"], "complete", "{result}");
    server.stop().await;
}

#[actix_web::test]
async fn without_a_terminal_an_unanswered_request_fails_at_once_naming_its_key() {
    let server = Server::start().await;
    let url = server.url(LAB);
    let output = actix_web::rt::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_roundtrip"))
            .args(["call", &url, "ask_signup"])
            .stdin(std::process::Stdio::null())
            .output()
            .expect("roundtrip runs")
    })
    .await
    .expect("the command ends");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains(
            "input request 'signup' (elicitation/create) has no --answer, and stdin is not a \
             terminal to ask on"
        ),
        "{stderr}"
    );
    server.stop().await;
}
