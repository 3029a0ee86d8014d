//! The client against our server on a 2025-11-25 session over HTTP: the runtime's shim sends
//! each question as a real request on the call's SSE stream, and the same handlers answer it
//! with a POST. The session's id and version ride on every request.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use roundtrip_client::handler::{elicit_with, ElicitationModes};
use roundtrip_client::protocol::input::ElicitResult;
use roundtrip_client::{Client, Era, EraChoice, ProtocolVersion};
use serde_json::{json, Map, Value};

use super::answers::{accept, answering, named, Asked, ROOT, SAMPLED};
use super::modern::with_conformance;
use crate::support::{Server, LAB};

async fn legacy(server: &Server, tenant: &str, asked: &Asked) -> Client {
    answering(asked, named("Ada"))
        .era(EraChoice::Legacy)
        .connect_http(&server.url(tenant))
        .await
        .expect("initializes")
}

async fn answers_of(tool: &str, asked: &Asked) -> Value {
    let server = Server::start().await;
    let client = legacy(&server, LAB, asked).await;
    assert_eq!(client.era(), Era::Legacy);
    let result = client.call_tool(tool, json!({})).await.expect("completes");
    client.close().await;
    // The connection pool goes with the client: a pooled connection would hold the
    // server's graceful stop for its whole timeout.
    drop(client);
    server.stop().await;
    result.structured_content.unwrap_or_default()["answers"].clone()
}

#[actix_web::test]
async fn initialize_negotiates_2025_11_25_and_names_the_server() {
    let server = Server::start().await;
    let client = legacy(&server, LAB, &Asked::default()).await;
    let info = client.server();
    assert_eq!(info.protocol_version, ProtocolVersion::V2025_11_25);
    assert_eq!(
        info.server_info.map(|s| s["name"].clone()),
        Some(json!("roundtrip-lab"))
    );
    assert!(client
        .list_tools()
        .await
        .expect("tools")
        .iter()
        .any(|t| t.name == "ask_form"));
    server.stop().await;
}

#[actix_web::test]
async fn a_form_elicitation_request_on_the_stream_is_answered_with_a_post() {
    let asked = Asked::default();
    let answers = answers_of("ask_form", &asked).await;
    assert_eq!(
        answers["form"],
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    let (_, context) = &asked.all()[0];
    assert_eq!(
        (context.method.as_deref(), context.target.as_deref()),
        (Some("tools/call"), Some("ask_form"))
    );
    assert_eq!(context.key, None, "a legacy request has no key");
}

#[actix_web::test]
async fn a_url_elicitation_request_is_accepted() {
    let answers = answers_of("ask_url", &Asked::default()).await;
    assert_eq!(answers["login"], json!({"action": "accept"}));
}

#[actix_web::test]
async fn a_sampling_request_is_answered() {
    let answers = answers_of("ask_sampling", &Asked::default()).await;
    assert_eq!(answers["llm"]["content"]["text"], SAMPLED);
}

#[actix_web::test]
async fn a_sampling_request_with_tools_is_answered() {
    let asked = Asked::default();
    answers_of("ask_sampling_tools", &asked).await;
    assert_eq!(asked.kinds(), ["sampling+tools"]);
}

#[actix_web::test]
async fn a_roots_request_is_answered() {
    let answers = answers_of("ask_roots", &Asked::default()).await;
    assert_eq!(answers["roots"]["roots"][0]["uri"], ROOT);
}

#[actix_web::test]
async fn the_concurrent_requests_of_one_round_are_all_answered() {
    let asked = Asked::default();
    let answers = answers_of("ask_several", &asked).await;
    for key in ["form", "login", "llm", "roots"] {
        assert!(answers.get(key).is_some(), "{key} answered: {answers}");
    }
    assert_eq!(asked.kinds().len(), 4);
}

#[actix_web::test]
async fn a_three_round_flow_is_relayed_round_by_round() {
    let server = with_conformance().await;
    let client = answering(&Asked::default(), |form| {
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
    })
    .era(EraChoice::Legacy)
    .connect_http(&server.url("conformance"))
    .await
    .expect("initializes");
    let result = client
        .call_tool("test_input_required_result_multi_round", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Alice's favorite color is blue.");
    server.stop().await;
}

#[actix_web::test]
async fn a_declined_request_is_answered_as_decline() {
    let server = Server::start().await;
    let client = answering(&Asked::default(), |_| ElicitResult::decline())
        .era(EraChoice::Legacy)
        .connect_http(&server.url(LAB))
        .await
        .expect("initializes");
    let result = client
        .call_tool("ask_form", json!({}))
        .await
        .expect("completes");
    let answers = result.structured_content.unwrap_or_default()["answers"].clone();
    assert_eq!(answers["form"], json!({"action": "decline"}));
    server.stop().await;
}

#[actix_web::test]
async fn a_prompt_and_a_resource_that_ask_complete() {
    let server = Server::start().await;
    let client = legacy(&server, LAB, &Asked::default()).await;
    let prompt = client
        .get_prompt("ask_form", Map::new())
        .await
        .expect("prompt");
    assert_eq!(prompt.messages[0].content["text"], "answered");
    let read = client.read_resource("lab://roots").await.expect("read");
    assert!(read.contents[0]
        .text
        .as_deref()
        .unwrap_or_default()
        .contains(ROOT));
    server.stop().await;
}

#[actix_web::test]
async fn a_cancelled_request_is_answered_as_cancel() {
    let server = Server::start().await;
    let client = answering(&Asked::default(), |_| ElicitResult::cancel())
        .era(EraChoice::Legacy)
        .connect_http(&server.url(LAB))
        .await
        .expect("initializes");
    let result = client
        .call_tool("ask_form", json!({}))
        .await
        .expect("completes");
    let answers = result.structured_content.unwrap_or_default()["answers"].clone();
    assert_eq!(answers["form"], json!({"action": "cancel"}));
    server.stop().await;
}

#[actix_web::test]
async fn a_url_question_to_a_form_only_session_is_refused_by_the_server_and_nothing_is_asked() {
    let server = Server::start().await;
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let client = Client::builder()
        .elicitation(elicit_with(ElicitationModes::FORM, move |_, _| {
            a.fetch_add(1, Ordering::SeqCst);
            async { Ok(ElicitResult::decline()) }
        }))
        .era(EraChoice::Legacy)
        .connect_http(&server.url(LAB))
        .await
        .expect("initializes");
    let err = client
        .call_tool("ask_url", json!({}))
        .await
        .expect_err("refused");
    // The shim gates on what `initialize` declared (`elicitation.form`): the question is
    // never sent, so no handler of ours is missing on the wire.
    let rpc = err.rpc().expect("a JSON-RPC error");
    assert_eq!(rpc.code, -32021);
    assert_eq!(
        rpc.data.as_ref().map(|d| d["requiredCapabilities"].clone()),
        Some(json!({"elicitation": {"url": {}}}))
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    server.stop().await;
}
