//! `roundtrip` driven through a pseudo-terminal: a person fills in an elicitation form that a
//! real server sent, with a string, an integer, an enum and a boolean, types one invalid value
//! and is asked again.
//!
//! The program runs in a pty (rexpect) with stdin, stdout and stderr on it, as in a terminal,
//! and the test types keys and waits for what inquire draws (ANSI codes stripped).
//!
//! Until `roundtrip call` exists, the test is the client: it calls the `lab` tenant's
//! `ask_signup`, hands the input request it gets to `roundtrip answer-input signup REQUEST`
//! (the answer sources `call` will use), and sends the printed answer back on the retry. Once
//! `call` exists, [`launch`] runs `roundtrip call URL ask_signup --json` instead, and
//! [`result_of`] reads the tool's result from the program's output rather than retrying
//! itself; the keystrokes and the screens they wait for stay as they are.

use std::process::Command;
use std::time::Duration;

use rexpect::session::{spawn_with_options, Options, PtySession};
use serde_json::{json, Value};

use crate::support::{retry, tool_call, Server, LAB};

/// Each wait for a screen; inquire draws within milliseconds, a debug build starts in less
/// than a second.
const SCREEN_TIMEOUT: Duration = Duration::from_secs(20);
/// A pty opens with no size (0 columns); inquire needs one to lay out its prompts.
const SIZE: &str = "stty cols 120 rows 40";

const ENTER: &str = "\r";
const BACKSPACE: &str = "\x7f";
const DOWN: &str = "\x1b[B";

fn caps() -> Value {
    json!({"elicitation": {"form": {}}})
}

/// Starts the program that asks the person, in a pty of [`SIZE`].
fn launch(input_request: &Value) -> PtySession {
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg(format!("{SIZE} && exec \"$@\""))
        .arg("sh")
        .arg(env!("CARGO_BIN_EXE_roundtrip"))
        .arg("answer-input")
        .arg("signup")
        .arg(input_request.to_string())
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

/// The tool's result, given the program's output: today the printed answer goes back on the
/// retry, sent by the test.
async fn result_of(server: &Server, call: &Value, first: &Value, output: &str) -> Value {
    let line = output
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .unwrap_or_else(|| panic!("no JSON answer in the output: {output:?}"));
    let answer: Value = serde_json::from_str(line.trim()).expect("the answer is JSON");
    server
        .send(
            LAB,
            &retry(
                call,
                2,
                json!({"signup": answer}),
                first["requestState"].as_str(),
            ),
        )
        .await
        .result()
}

#[actix_web::test]
async fn a_person_fills_in_a_form_in_a_terminal_and_an_invalid_value_is_asked_again() {
    let server = Server::start().await;
    let call = tool_call(1, "ask_signup", json!({}), caps());
    let first = server.send(LAB, &call).await.result();
    let input_request = first["inputRequests"]["signup"].clone();
    assert_eq!(input_request["method"], "elicitation/create", "{first}");

    // rexpect blocks: the person types on a thread of their own while the server serves.
    let output = actix_web::rt::task::spawn_blocking(move || {
        let mut pty = launch(&input_request);
        fill_in_the_signup_form(&mut pty);
        output_after_the_form(&mut pty)
    })
    .await
    .expect("the pty thread ends");

    let result = result_of(&server, &call, &first, &output).await;
    assert_eq!(
        result["structuredContent"]["answers"]["signup"],
        json!({"action": "accept",
            "content": {"name": "Ada", "age": 36, "plan": "pro", "newsletter": true}}),
        "{result}"
    );
    server.stop().await;
}

#[test]
fn without_a_terminal_an_unanswered_request_fails_at_once_naming_its_key() {
    let request = json!({"method": "elicitation/create",
        "params": {"message": "Create your lab account", "requestedSchema": crate::support::lab::signup_schema()}});
    let output = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(["answer-input", "signup", &request.to_string()])
        .stdin(std::process::Stdio::null())
        .output()
        .expect("roundtrip runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(output.stdout.is_empty());
    assert_eq!(
        String::from_utf8_lossy(&output.stderr),
        "roundtrip: input request 'signup' (elicitation/create) has no --answer, and stdin is \
         not a terminal to ask on\n"
    );
}
