//! The client against `roundtrip stdio --tenant conformance` as a child process: the era
//! found by probing, both eras' flows over one line per message (three rounds, decline,
//! cancel), the round cap, and a server that exits. The conformance catalog has no tool whose
//! rounds carry only state: the pause before such a retry is tested over HTTP (`modern.rs`).

use std::process::Stdio;

use roundtrip_client::protocol::input::{ElicitResult, FormElicitation};
use roundtrip_client::{Era, EraChoice, Error};
use serde_json::json;
use tokio::process::Command;

use super::answers::{accept, answering, named, Asked};

fn roundtrip_stdio(tenant: &str) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_roundtrip"));
    command
        .args(["stdio", "--tenant", tenant])
        .env("ROUNDTRIP_DATA_DIR", crate::support::scratch_dir())
        .env("ROUNDTRIP_LOG", "warn")
        .env_remove("RUST_LOG")
        .stderr(Stdio::null());
    command
}

#[actix_web::test]
async fn a_probe_finds_the_modern_era_and_a_form_flow_completes() {
    let asked = Asked::default();
    let client = answering(&asked, named("Ada"))
        .connect_stdio(roundtrip_stdio("conformance"))
        .await
        .expect("connects");
    assert_eq!(client.era(), Era::Modern);
    let server = client.server();
    assert_eq!(
        server.server_info.map(|s| s["name"].clone()),
        Some(json!("roundtrip-conformance"))
    );
    let result = client
        .call_tool("test_input_required_result_elicitation", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Hello, Ada!");
    assert_eq!(asked.kinds(), ["form"]);
    client.close().await;
}

#[actix_web::test]
async fn a_modern_round_of_every_kind_with_state_completes() {
    let client = answering(&Asked::default(), named("Ada"))
        .era(EraChoice::Modern)
        .connect_stdio(roundtrip_stdio("conformance"))
        .await
        .expect("connects");
    let result = client
        .call_tool("test_input_required_result_multiple_inputs", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Paris Ada, you have 1 root(s).");
    client.close().await;
}

#[actix_web::test]
async fn a_legacy_session_answers_the_servers_requests_on_stdin() {
    let asked = Asked::default();
    let client = answering(&asked, named("Ada"))
        .era(EraChoice::Legacy)
        .connect_stdio(roundtrip_stdio("conformance"))
        .await
        .expect("initializes");
    assert_eq!(client.era(), Era::Legacy);
    let result = client
        .call_tool("test_input_required_result_multiple_inputs", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Paris Ada, you have 1 root(s).");
    let mut kinds = asked.kinds();
    kinds.sort_unstable();
    assert_eq!(kinds, ["form", "roots", "sampling"]);
    let (_, context) = &asked.all()[0];
    assert_eq!(
        context.target.as_deref(),
        Some("test_input_required_result_multiple_inputs"),
        "the one pending call is named"
    );
    client.close().await;
}

#[actix_web::test]
async fn a_server_that_exits_at_once_fails_the_connection_as_closed() {
    let err = answering(&Asked::default(), named("Ada"))
        .connect_stdio(roundtrip_stdio("no-such-tenant"))
        .await
        .expect_err("the child exits");
    assert!(matches!(err, Error::Closed { .. }), "{err:?}");
}

/// Answers `test_input_required_result_multi_round`'s forms: a name, then a color.
fn name_then_color(form: &FormElicitation) -> ElicitResult {
    let field = form
        .properties()
        .next()
        .map(|(name, _)| name.clone())
        .unwrap_or_default();
    accept(if field == "color" {
        json!({"color": "blue"})
    } else {
        json!({"name": "Alice"})
    })
}

async fn multi_round_in(era: EraChoice) {
    let asked = Asked::default();
    let client = answering(&asked, name_then_color)
        .era(era)
        .connect_stdio(roundtrip_stdio("conformance"))
        .await
        .expect("connects");
    let result = client
        .call_tool("test_input_required_result_multi_round", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Alice's favorite color is blue.");
    assert_eq!(asked.kinds(), ["form", "form"]);
    client.close().await;
}

#[actix_web::test]
async fn a_modern_three_round_flow_completes() {
    multi_round_in(EraChoice::Modern).await;
}

#[actix_web::test]
async fn a_legacy_three_round_flow_completes() {
    multi_round_in(EraChoice::Legacy).await;
}

#[actix_web::test]
async fn the_round_cap_stops_a_modern_flow_with_its_last_question_and_state() {
    // The conformance catalog has no tool that asks forever: a cap of one round stops its
    // three-run flow at the second question. (A legacy session has no client-side cap: the
    // server drives the rounds there.)
    let asked = Asked::default();
    let client = answering(&asked, name_then_color)
        .era(EraChoice::Modern)
        .max_rounds(1)
        .connect_stdio(roundtrip_stdio("conformance"))
        .await
        .expect("connects");
    let err = client
        .call_tool("test_input_required_result_multi_round", json!({}))
        .await
        .expect_err("capped");
    let Error::RoundsExceeded { rounds, last, .. } = err else {
        panic!("expected RoundsExceeded, got {err:?}")
    };
    assert_eq!(rounds, 1);
    assert!(last.input_requests.contains_key("step2"), "{last:?}");
    assert!(last.request_state.is_some(), "the last state is kept");
    assert_eq!(asked.kinds(), ["form"], "the second question was not asked");
    client.close().await;
}

/// `test_elicitation`'s result when every form is answered with `answer`, in `era`.
async fn elicitation_answered(era: EraChoice, answer: fn() -> ElicitResult) -> String {
    let client = answering(&Asked::default(), move |_| answer())
        .era(era)
        .connect_stdio(roundtrip_stdio("conformance"))
        .await
        .expect("connects");
    let result = client
        .call_tool("test_elicitation", json!({"message": "Who are you?"}))
        .await
        .expect("completes");
    client.close().await;
    result.text()
}

#[actix_web::test]
async fn a_modern_decline_reaches_the_tool() {
    assert_eq!(
        elicitation_answered(EraChoice::Modern, ElicitResult::decline).await,
        "User response: action=decline, content={}"
    );
}

#[actix_web::test]
async fn a_legacy_decline_reaches_the_tool() {
    assert_eq!(
        elicitation_answered(EraChoice::Legacy, ElicitResult::decline).await,
        "User response: action=decline, content={}"
    );
}

#[actix_web::test]
async fn a_modern_cancel_reaches_the_tool() {
    assert_eq!(
        elicitation_answered(EraChoice::Modern, ElicitResult::cancel).await,
        "User response: action=cancel, content={}"
    );
}

#[actix_web::test]
async fn a_legacy_cancel_reaches_the_tool() {
    assert_eq!(
        elicitation_answered(EraChoice::Legacy, ElicitResult::cancel).await,
        "User response: action=cancel, content={}"
    );
}

#[actix_web::test]
async fn lines_that_are_not_utf8_or_too_long_are_skipped_and_the_server_still_answered() {
    // The server's stdout is preceded by a line that is not UTF-8 and one a byte past the
    // client's limit.
    let over = roundtrip_client::MAX_MESSAGE_BYTES + 1;
    let junk =
        format!("printf '\\377\\376 not utf-8\\n'; head -c {over} /dev/zero | tr '\\0' x; echo");
    let mut command = Command::new("sh");
    command
        .args([
            "-c",
            &format!("{{ {junk}; exec \"$0\" stdio --tenant conformance; }}"),
        ])
        .arg(env!("CARGO_BIN_EXE_roundtrip"))
        .env("ROUNDTRIP_DATA_DIR", crate::support::scratch_dir())
        .env("ROUNDTRIP_LOG", "warn")
        .env_remove("RUST_LOG")
        .stderr(Stdio::null());
    let client = answering(&Asked::default(), named("Ada"))
        .connect_stdio(command)
        .await
        .expect("connects past the junk");
    let result = client
        .call_tool("test_input_required_result_elicitation", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Hello, Ada!");
    client.close().await;
}
