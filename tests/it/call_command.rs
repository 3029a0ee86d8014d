//! `roundtrip call`, `prompt` and `read` run as a user runs them, without a terminal: answers
//! come from `--answer`, `--sampling-command` and `--root`, and the output is checked as a
//! script would read it. (The person at a terminal: `terminal.rs`.)

use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

use crate::support::{Server, ALICE, DEMO, LAB};

const ADA: &str = r#"{"action":"accept","content":{"name":"Ada"}}"#;

/// `roundtrip COMMAND URL-of-TENANT TARGET FLAGS...` against `server`, stdin closed, run off
/// the server's thread.
async fn roundtrip(
    server: &Server,
    command: &str,
    tenant: &str,
    target: &str,
    flags: &[&str],
) -> Output {
    let mut args = vec![command.to_owned(), server.url(tenant), target.to_owned()];
    args.extend(flags.iter().map(|f| (*f).to_owned()));
    actix_web::rt::task::spawn_blocking(move || run(&args))
        .await
        .expect("the command ends")
}

fn run<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("roundtrip runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// What a command that must have succeeded printed.
fn succeeded(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// The one JSON line a successful `--json` command printed.
fn json_line(output: &Output) -> Value {
    let printed = succeeded(output);
    serde_json::from_str(printed.trim())
        .unwrap_or_else(|e| panic!("stdout is not one JSON line ({e}): {printed}"))
}

/// What a command that must have failed (exit 1, nothing on stdout) wrote on stderr.
fn failed(output: &Output) -> String {
    assert_eq!(output.status.code(), Some(1), "{}", stderr(output));
    stderr(output)
}

/// What a command refused at parse time (exit 2) wrote on stderr.
fn usage_error(args: &[&str]) -> String {
    let output = run(args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    stderr(&output)
}

#[actix_web::test]
async fn call_answers_a_form_from_its_answer_flag_and_prints_the_text() {
    let server = Server::start().await;
    let answer = format!("user_name={ADA}");
    let output = roundtrip(
        &server,
        "call",
        DEMO,
        "greet",
        &["--bearer", ALICE, "--answer", &answer],
    )
    .await;
    assert_eq!(succeeded(&output), "Hello, Ada!\n");
    server.stop().await;
}

#[actix_web::test]
async fn call_with_json_prints_the_whole_stamped_result() {
    let server = Server::start().await;
    let flags = [
        "--args",
        r#"{"text":"hi"}"#,
        "--bearer",
        ALICE,
        "--era",
        "modern",
        "--json",
    ];
    let result = json_line(&roundtrip(&server, "call", DEMO, "echo", &flags).await);
    assert_eq!(result["resultType"], "complete", "{result}");
    assert_eq!(result["content"][0]["text"], "hi", "{result}");
    server.stop().await;
}

#[actix_web::test]
async fn call_on_a_legacy_session_answers_the_shims_request_under_its_method_name() {
    let server = Server::start().await;
    let answer = format!("elicitation/create={ADA}");
    let flags = [
        "--bearer", ALICE, "--era", "legacy", "--answer", &answer, "--json",
    ];
    let result = json_line(&roundtrip(&server, "call", DEMO, "greet", &flags).await);
    assert_eq!(result["content"][0]["text"], "Hello, Ada!", "{result}");
    assert!(
        result.get("resultType").is_none(),
        "legacy results carry none: {result}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_header_flag_is_sent_with_every_request() {
    let server = Server::start().await;
    let bearer = format!("Authorization: Bearer {ALICE}");
    let flags = ["--args", r#"{"text":"via header"}"#, "--header", &bearer];
    let output = roundtrip(&server, "call", DEMO, "echo", &flags).await;
    assert_eq!(succeeded(&output), "via header\n");
    server.stop().await;
}

#[actix_web::test]
async fn without_credentials_the_call_fails_naming_the_refusal() {
    let server = Server::start().await;
    let output = roundtrip(&server, "call", DEMO, "echo", &[]).await;
    let stderr = failed(&output);
    assert!(output.stdout.is_empty());
    assert!(stderr.contains("HTTP 401"), "{stderr}");
    server.stop().await;
}

#[actix_web::test]
async fn a_tool_that_reports_an_error_exits_1_after_printing_it() {
    let server = Server::start().await;
    let output = roundtrip(&server, "call", LAB, "needs_text", &[]).await;
    assert!(failed(&output).contains("the tool reported an error"));
    assert!(String::from_utf8_lossy(&output.stdout).contains("text"));
    server.stop().await;
}

#[actix_web::test]
async fn sampling_is_answered_by_the_sampling_command() {
    let server = Server::start().await;
    let reply = r#"{"role":"assistant","content":{"type":"text","text":"hi"},"model":"cmd"}"#;
    let command = format!("cat >/dev/null; echo '{reply}'");
    let flags = ["--sampling-command", &command, "--json"];
    let result = json_line(&roundtrip(&server, "call", LAB, "ask_sampling", &flags).await);
    assert_eq!(
        result["structuredContent"]["answers"]["llm"]["model"], "cmd",
        "{result}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn without_a_sampling_answerer_the_client_does_not_declare_sampling() {
    let server = Server::start().await;
    let output = roundtrip(&server, "call", LAB, "ask_sampling", &[]).await;
    let stderr = failed(&output);
    assert!(stderr.contains("-32021"), "{stderr}");
    server.stop().await;
}

#[actix_web::test]
async fn prompt_prints_each_message_with_its_role() {
    let server = Server::start().await;
    let answer = format!("form={ADA}");
    let output = roundtrip(&server, "prompt", LAB, "ask_form", &["--answer", &answer]).await;
    assert_eq!(succeeded(&output), "user: answered\n");
    server.stop().await;
}

#[actix_web::test]
async fn read_answers_roots_from_the_root_flags() {
    let server = Server::start().await;
    let flags = ["--root", "file:///work/a", "--root", "file:///work/b"];
    let output = roundtrip(&server, "read", LAB, "lab://roots", &flags).await;
    let roots: Value = serde_json::from_str(succeeded(&output).trim()).expect("roots as JSON");
    assert_eq!(
        roots,
        json!([{"uri": "file:///work/a"}, {"uri": "file:///work/b"}])
    );
    server.stop().await;
}

#[actix_web::test]
async fn read_prints_a_text_resource() {
    let server = Server::start().await;
    let output = roundtrip(&server, "read", LAB, "lab://static", &[]).await;
    assert_eq!(succeeded(&output), "static text\n");
    server.stop().await;
}

#[test]
fn arguments_that_are_not_a_json_object_are_a_usage_error() {
    let stderr = usage_error(&[
        "call",
        "http://127.0.0.1:9/t/x/mcp",
        "echo",
        "--args",
        "[1]",
    ]);
    assert!(stderr.contains("expected a JSON object"), "{stderr}");
}

#[test]
fn a_header_without_a_colon_is_a_usage_error() {
    let stderr = usage_error(&[
        "call",
        "http://127.0.0.1:9/t/x/mcp",
        "echo",
        "--header",
        "x",
    ]);
    assert!(stderr.contains("NAME:VALUE"), "{stderr}");
}
