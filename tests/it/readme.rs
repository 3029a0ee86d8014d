//! The README's curl walkthroughs, run as a reader copies them: a section's `sh` blocks in
//! order, with `bash`, against a `roundtrip serve` started with the settings of the section's
//! first block (`NAME=value … cargo run --release -- serve`), its address in place of the
//! README's `127.0.0.1:8080`. A change that breaks a command the README shows fails here.

use std::process::Command;

use crate::support::serve_process::command;
use crate::support::{scratch_dir, Serve};

const README: &str = include_str!("../../README.md");

/// The address every README command uses.
const README_ORIGIN: &str = "http://127.0.0.1:8080";

/// The `sh` blocks of the README section headed `## {heading}`, in order.
fn shell_blocks(heading: &str) -> Vec<&'static str> {
    let start = README
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("the README has a section \"{heading}\""));
    // From its heading to the next one (or the end).
    let rest = &README[start + 1..];
    let end = rest[1..].find("\n## ").map_or(rest.len(), |at| at + 1);
    rest[..end]
        .split("```sh\n")
        .skip(1)
        .map(|block| block.split("\n```").next().expect("a closed block"))
        .collect()
}

/// `text`, which the README quotes (as code): what a reader is told to expect.
fn quoted(text: &str) -> &str {
    assert!(
        README.contains(&format!("`{text}`")),
        "the README no longer quotes {text}"
    );
    text
}

/// Starts the server as `block` does (it must be the README's start command), with its data
/// in a directory of the test's.
fn start_as(block: &str) -> Serve {
    let (settings, rest) = block
        .split_once("cargo run --release -- serve")
        .unwrap_or_else(|| panic!("not the README's start command: {block}"));
    assert!(
        rest.trim().is_empty(),
        "more than the start command: {block}"
    );
    let mut serve = command(&scratch_dir());
    for setting in settings.split_whitespace() {
        let (name, value) = setting
            .split_once('=')
            .unwrap_or_else(|| panic!("not a NAME=value setting: {setting}"));
        serve.env(name, value);
    }
    Serve::start_command(serve)
}

/// Runs `script` with `bash` against `serve` (the README's address replaced by its own): what
/// it printed. A command that fails stops it, and fails the test.
fn run(script: &str, serve: &Serve) -> String {
    let script = format!(
        "set -eo pipefail\n{}",
        script.replace(README_ORIGIN, &serve.url)
    );
    let output = Command::new("bash")
        .args(["-c", &script])
        .output()
        .expect("bash runs");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "the walkthrough failed ({}):\n{stdout}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

/// The two-round section's blocks after its start command, run against a server started by it.
fn two_round_call(more: &str) -> String {
    let blocks = shell_blocks("A two-round call with curl");
    let serve = start_as(blocks[0]);
    let script = format!("{}\n{more}", blocks[1..].join("\n"));
    run(&script, &serve)
}

#[test]
fn the_readmes_two_round_curl_call_asks_for_a_name_and_greets_ada() {
    let printed = two_round_call("");

    assert!(
        printed.contains(r#""resultType":"input_required""#) && printed.contains("requestState"),
        "round 1 is input_required with a sealed state: {printed}"
    );
    assert!(
        printed.contains("Hello, Ada!") && printed.contains(r#""resultType":"complete""#),
        "round 2 completes with the answer: {printed}"
    );
}

#[test]
fn the_readmes_changed_state_and_misfit_answer_get_the_errors_it_quotes() {
    // One character of the state changed, then the README's answer with a number for a name.
    let printed = two_round_call(
        r#"
echo
C=${STATE:20:1}; [ "$C" = A ] && C=B || C=A
call '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"greet",
  "inputResponses":{"user_name":{"action":"accept","content":{"name":"Ada"}}},
  "requestState":"'"${STATE:0:20}$C${STATE:21}"'",'"$META"'}}'
echo
call '{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"greet",
  "inputResponses":{"user_name":{"action":"accept","content":{"name":42}}},
  "requestState":"'"$STATE"'",'"$META"'}}'
"#,
    );

    let changed = quoted(r#"{"code":-32602,"message":"Invalid or expired requestState"}"#);
    assert!(printed.contains(changed), "a changed state: {printed}");
    let misfit = quoted(
        r#"{"code":-32602,"message":"inputResponses.user_name: field 'name' must be a string"}"#,
    );
    assert!(
        printed.contains(misfit),
        "an answer that does not fit its form: {printed}"
    );
}

#[test]
fn the_readmes_admin_walkthrough_creates_a_tenant_and_a_key_that_calls_echo() {
    let blocks = shell_blocks("Tenants, keys and the admin API");
    let serve = start_as(blocks[0]);

    // The next block is the walkthrough; the one after it is the CLI's, on the store directly.
    let printed = run(blocks[1], &serve);

    assert!(
        printed.contains(r#""slug":"acme""#),
        "the tenant is created: {printed}"
    );
    assert!(
        printed.contains(r#""text":"hi""#) && printed.contains(r#""resultType":"complete""#),
        "the new key's first call echoes: {printed}"
    );
}
