//! The client against `roundtrip stdio --tenant conformance` as a child process: the era
//! found by probing, both eras' flows over one line per message, and a server that exits.

use std::process::Stdio;

use roundtrip_client::{Era, EraChoice, Error};
use serde_json::json;
use tokio::process::Command;

use super::answers::{answering, named, Asked};

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
