//! The client against our server in the 2026-07-28 era over HTTP: every kind of question,
//! several at once (their handlers concurrently), prompts and resources, flows over three
//! rounds, state-only rounds, the round cap, decline, what happens without a handler, and the
//! `*_once` variants.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use roundtrip_client::handler::{
    elicit_with, sample_with, ElicitationModes, InputContext, RootsHandler,
};
use roundtrip_client::protocol::input::{
    CreateMessageResult, ElicitRequest, ElicitResult, InputRequest, InputResponse, ListRootsResult,
    Root,
};
use roundtrip_client::protocol::results::Outcome;
use roundtrip_client::{Client, Era, EraChoice, Error, HandlerError, Retry};
use serde_json::{json, Map, Value};
use tokio::sync::Barrier;

use super::answers::{accept, answering, named, Asked, ROOT, SAMPLED};
use crate::support::{Server, ALICE, DEMO, LAB};

async fn modern(server: &Server, tenant: &str, asked: &Asked) -> Client {
    answering(asked, named("Ada"))
        .era(EraChoice::Modern)
        .connect_http(&server.url(tenant))
        .await
        .expect("connects")
}

/// A server with the `conformance` tenant added (the suite's fixtures).
pub(crate) async fn with_conformance() -> Server {
    let server = Server::start().await;
    server
        .add_tenant(
            "conformance",
            roundtrip::catalogs::build(&["conformance".into()]).expect("the conformance catalog"),
        )
        .await;
    server
}

fn answers(result: &roundtrip_client::protocol::results::CallToolResult) -> Value {
    result.structured_content.clone().unwrap_or_default()["answers"].clone()
}

#[actix_web::test]
async fn a_form_elicitation_is_answered_and_the_call_retried_with_the_state() {
    let server = Server::start().await;
    let asked = Asked::default();
    let client = modern(&server, LAB, &asked).await;
    assert_eq!(client.era(), Era::Modern);
    let result = client
        .call_tool("ask_form", json!({}))
        .await
        .expect("completes");
    assert_eq!(
        answers(&result)["form"],
        json!({"action": "accept", "content": {"name": "Ada"}})
    );
    assert_eq!(
        result
            .structured_content
            .as_ref()
            .map(|s| s["state"].clone()),
        Some(json!("form-state"))
    );
    assert_eq!(asked.kinds(), ["form"]);
    let (_, context) = &asked.all()[0];
    assert_eq!(context.key.as_deref(), Some("form"));
    assert_eq!(context.method.as_deref(), Some("tools/call"));
    assert_eq!(context.target.as_deref(), Some("ask_form"));
    server.stop().await;
}

#[actix_web::test]
async fn a_url_elicitation_is_accepted_without_content() {
    let server = Server::start().await;
    let asked = Asked::default();
    let result = modern(&server, LAB, &asked)
        .await
        .call_tool("ask_url", json!({}))
        .await
        .expect("completes");
    assert_eq!(answers(&result)["login"], json!({"action": "accept"}));
    assert_eq!(asked.kinds(), ["url"]);
    server.stop().await;
}

#[actix_web::test]
async fn a_sampling_request_is_answered_by_the_sampling_handler() {
    let server = Server::start().await;
    let asked = Asked::default();
    let result = modern(&server, LAB, &asked)
        .await
        .call_tool("ask_sampling", json!({}))
        .await
        .expect("completes");
    assert_eq!(answers(&result)["llm"]["content"]["text"], SAMPLED);
    assert_eq!(asked.kinds(), ["sampling"]);
    server.stop().await;
}

#[actix_web::test]
async fn sampling_with_tools_reaches_a_handler_that_declares_tools() {
    let server = Server::start().await;
    let asked = Asked::default();
    let result = modern(&server, LAB, &asked)
        .await
        .call_tool("ask_sampling_tools", json!({}))
        .await
        .expect("completes");
    assert_eq!(answers(&result)["llm"]["model"], "test-model");
    assert_eq!(asked.kinds(), ["sampling+tools"]);
    server.stop().await;
}

#[actix_web::test]
async fn a_roots_request_is_answered_with_the_handlers_roots() {
    let server = Server::start().await;
    let asked = Asked::default();
    let result = modern(&server, LAB, &asked)
        .await
        .call_tool("ask_roots", json!({}))
        .await
        .expect("completes");
    assert_eq!(answers(&result)["roots"]["roots"][0]["uri"], ROOT);
    server.stop().await;
}

#[actix_web::test]
async fn every_question_of_a_round_is_answered_in_one_retry() {
    let server = Server::start().await;
    let asked = Asked::default();
    let result = modern(&server, LAB, &asked)
        .await
        .call_tool("ask_several", json!({}))
        .await
        .expect("completes");
    let answers = answers(&result);
    for key in ["form", "login", "llm", "roots"] {
        assert!(answers.get(key).is_some(), "{key} answered: {answers}");
    }
    assert_eq!(
        result
            .structured_content
            .as_ref()
            .map(|s| s["round"].clone()),
        Some(json!(1))
    );
    let mut kinds = asked.kinds();
    kinds.sort_unstable();
    assert_eq!(kinds, ["form", "roots", "sampling", "url"]);
    server.stop().await;
}

#[actix_web::test]
async fn a_resource_read_that_asks_for_roots_completes() {
    let server = Server::start().await;
    let asked = Asked::default();
    let read = modern(&server, LAB, &asked)
        .await
        .read_resource("lab://roots")
        .await
        .expect("completes");
    let text = read.contents[0].text.clone().unwrap_or_default();
    assert!(text.contains(ROOT), "{text}");
    assert_eq!(asked.all()[0].1.method.as_deref(), Some("resources/read"));
    server.stop().await;
}

#[actix_web::test]
async fn a_prompt_that_asks_a_form_completes() {
    let server = Server::start().await;
    let asked = Asked::default();
    let prompt = modern(&server, LAB, &asked)
        .await
        .get_prompt("ask_form", Map::new())
        .await
        .expect("completes");
    assert_eq!(prompt.messages[0].content["text"], "answered");
    server.stop().await;
}

#[actix_web::test]
async fn a_three_round_flow_answers_each_rounds_question() {
    let server = with_conformance().await;
    let asked = Asked::default();
    let client = answering(&asked, |form| {
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
    .era(EraChoice::Modern)
    .connect_http(&server.url("conformance"))
    .await
    .expect("connects");
    let result = client
        .call_tool("test_input_required_result_multi_round", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "Alice's favorite color is blue.");
    assert_eq!(asked.kinds(), ["form", "form"]);
    server.stop().await;
}

#[actix_web::test]
async fn the_round_cap_stops_a_flow_with_its_last_questions_and_state() {
    let server = Server::start().await;
    let asked = Asked::default();
    let client = answering(&asked, named("Ada"))
        .era(EraChoice::Modern)
        .max_rounds(3)
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    let err = client
        .call_tool("ask_forever", json!({}))
        .await
        .expect_err("never completes");
    let Error::RoundsExceeded {
        method,
        rounds,
        last,
    } = err
    else {
        panic!("expected RoundsExceeded, got {err:?}")
    };
    assert_eq!((method.as_str(), rounds), ("tools/call", 3));
    assert!(matches!(
        last.input_requests.get("again"),
        Some(InputRequest::Elicitation(_))
    ));
    assert!(last.request_state.is_some(), "the last state is kept");
    assert_eq!(
        asked.kinds().len(),
        3,
        "three rounds were answered, the fourth was not"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_declined_elicitation_reaches_the_tool_as_decline() {
    let server = Server::start().await;
    let client = answering(&Asked::default(), |_| ElicitResult::decline())
        .bearer(ALICE)
        .connect_http(&server.url(DEMO))
        .await
        .expect("connects");
    let result = client
        .call_tool("greet", json!({}))
        .await
        .expect("completes");
    assert_eq!(
        result.text(),
        "No greeting: the user declined to give a name."
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_cancelled_elicitation_reaches_the_tool_as_cancel() {
    let server = Server::start().await;
    let client = answering(&Asked::default(), |_| ElicitResult::cancel())
        .era(EraChoice::Modern)
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    let result = client
        .call_tool("ask_form", json!({}))
        .await
        .expect("completes");
    assert_eq!(answers(&result)["form"], json!({"action": "cancel"}));
    server.stop().await;
}

#[actix_web::test]
async fn without_a_handler_nothing_is_declared_and_the_server_refuses_with_32021() {
    let server = Server::start().await;
    let client = Client::builder()
        .era(EraChoice::Modern)
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    let err = client
        .call_tool("ask_sampling", json!({}))
        .await
        .expect_err("refused");
    let rpc = err.rpc().expect("a JSON-RPC error");
    assert_eq!(rpc.code, -32021);
    assert_eq!(
        rpc.data.as_ref().map(|d| d["requiredCapabilities"].clone()),
        Some(json!({"sampling": {}}))
    );
    server.stop().await;
}

#[actix_web::test]
async fn one_round_at_a_time_with_the_once_variant() {
    let server = Server::start().await;
    let client = modern(&server, LAB, &Asked::default()).await;
    let first = client
        .call_tool_once("ask_form", json!({}), &Retry::default())
        .await
        .expect("a round");
    let Outcome::InputRequired(round) = first else {
        panic!("asks first")
    };
    assert!(round.input_requests.contains_key("form"));
    let reply = InputResponse::Elicitation(accept(json!({"name": "Bo"})));
    let retry = Retry::of(
        &round,
        Some([("form".to_owned(), reply)].into_iter().collect()),
    );
    let second = client
        .call_tool_once("ask_form", json!({}), &retry)
        .await
        .expect("a round");
    let Outcome::Complete(result) = second else {
        panic!("completes")
    };
    assert_eq!(answers(&result)["form"]["content"]["name"], "Bo");
    server.stop().await;
}

#[actix_web::test]
async fn lists_discovery_and_completion_are_read() {
    let server = Server::start().await;
    let client = modern(&server, LAB, &Asked::default()).await;
    let tools = client.list_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "ask_form"));
    let prompts = client.list_prompts().await.expect("prompts");
    assert!(prompts
        .iter()
        .any(|p| p.name == "summary" && p.arguments[0].required));
    let resources = client.list_resources().await.expect("resources");
    assert!(resources.iter().any(|r| r.uri == "lab://static"));
    let discovered = client.discover().await.expect("discover");
    assert_eq!(discovered.supported_versions, ["2026-07-28"]);
    let completion = client
        .complete(
            &roundtrip_client::CompletionRef::Prompt("summary".into()),
            "topic",
            "r",
        )
        .await
        .expect("completion");
    assert_eq!(completion.values, ["rust", "rest", "ruby"]);
    let read = client.read_resource("lab://static").await.expect("read");
    assert_eq!(read.contents[0].text.as_deref(), Some("static text"));
    server.stop().await;
}

#[actix_web::test]
async fn state_only_rounds_are_retried_after_50_then_100_ms_until_the_tool_completes() {
    let server = Server::start().await;
    let asked = Asked::default();
    let result = modern(&server, LAB, &asked)
        .await
        .call_tool("come_back_later", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "came back");
    let report = result.structured_content.unwrap_or_default();
    assert_eq!(report["round"], 2, "two state-only rounds, then complete");
    let gaps: Vec<u64> = serde_json::from_value(report["gapsMicros"].clone()).expect("the gaps");
    // Lower bounds only: the pause is at least this long, however busy the machine.
    assert!(gaps[0] >= 50_000, "the first pause is 50 ms: {gaps:?}");
    assert!(gaps[1] >= 100_000, "the second pause doubles: {gaps:?}");
    assert!(asked.kinds().is_empty(), "nothing was asked");
    server.stop().await;
}

/// A client whose only handler answers forms, counting what it is asked.
fn form_only(asked: &Arc<AtomicUsize>) -> roundtrip_client::ClientBuilder {
    let asked = asked.clone();
    Client::builder().elicitation(elicit_with(ElicitationModes::FORM, move |_, _| {
        asked.fetch_add(1, Ordering::SeqCst);
        async { Ok(ElicitResult::decline()) }
    }))
}

#[actix_web::test]
async fn a_url_question_to_a_form_only_client_is_refused_by_the_server_and_nothing_is_asked() {
    let server = Server::start().await;
    let asked = Arc::new(AtomicUsize::new(0));
    let client = form_only(&asked)
        .era(EraChoice::Modern)
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    let err = client
        .call_tool("ask_url", json!({}))
        .await
        .expect_err("refused");
    // The client declares exactly what its handlers answer (`elicitation.form`), and our
    // server gates every question on that: the URL question never reaches the client, so
    // its own `MissingHandler` cannot arise here (rounds.rs has it against a server that
    // asks anyway).
    let rpc = err.rpc().expect("a JSON-RPC error");
    assert_eq!(rpc.code, -32021);
    assert_eq!(
        rpc.data.as_ref().map(|d| d["requiredCapabilities"].clone()),
        Some(json!({"elicitation": {"url": {}}}))
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    server.stop().await;
}

#[actix_web::test]
async fn the_handlers_of_one_round_run_concurrently() {
    // Four questions whose handlers each wait for all four: run one after another, the
    // first would wait forever, and the timeout fails the test.
    let server = Server::start().await;
    let barrier = Arc::new(Barrier::new(4));
    let (e, s, r) = (barrier.clone(), barrier.clone(), barrier.clone());
    let client = Client::builder()
        .elicitation(elicit_with(ElicitationModes::BOTH, move |request, _| {
            let barrier = e.clone();
            async move {
                barrier.wait().await;
                Ok(match request {
                    ElicitRequest::Form(_) => accept(json!({"name": "Ada"})),
                    ElicitRequest::Url(_) => ElicitResult::accept_url(),
                })
            }
        }))
        .sampling(sample_with(false, move |_, _| {
            let barrier = s.clone();
            async move {
                barrier.wait().await;
                Ok(CreateMessageResult::text("test-model", SAMPLED))
            }
        }))
        .roots(WaitingRoots(r))
        .era(EraChoice::Modern)
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    let result = tokio::time::timeout(
        Duration::from_secs(10),
        client.call_tool("ask_several", json!({})),
    )
    .await
    .expect("the four handlers met, so they ran at once")
    .expect("completes");
    let answers = answers(&result);
    for key in ["form", "login", "llm", "roots"] {
        assert!(answers.get(key).is_some(), "{key} answered: {answers}");
    }
    server.stop().await;
}

/// Roots that wait at the barrier first.
struct WaitingRoots(Arc<Barrier>);

#[async_trait::async_trait]
impl RootsHandler for WaitingRoots {
    async fn roots(&self, _context: &InputContext) -> Result<Vec<Root>, HandlerError> {
        self.0.wait().await;
        Ok(vec![Root::new(ROOT, None)])
    }
}

#[actix_web::test]
async fn get_prompt_once_returns_each_round_for_the_caller_to_drive() {
    let server = Server::start().await;
    let client = modern(&server, LAB, &Asked::default()).await;
    let first = client
        .get_prompt_once("ask_form", Map::new(), &Retry::default())
        .await
        .expect("a round");
    let Outcome::InputRequired(round) = first else {
        panic!("asks first")
    };
    assert!(round.input_requests.contains_key("form"));
    assert!(round.request_state.is_some(), "the prompt keeps a state");
    let reply = InputResponse::Elicitation(accept(json!({"name": "Bo"})));
    let retry = Retry::of(
        &round,
        Some([("form".to_owned(), reply)].into_iter().collect()),
    );
    let second = client
        .get_prompt_once("ask_form", Map::new(), &retry)
        .await
        .expect("a round");
    let Outcome::Complete(prompt) = second else {
        panic!("completes")
    };
    assert_eq!(prompt.messages[0].content["text"], "answered");
    server.stop().await;
}

#[actix_web::test]
async fn read_resource_once_returns_each_round_for_the_caller_to_drive() {
    let server = Server::start().await;
    let client = modern(&server, LAB, &Asked::default()).await;
    let first = client
        .read_resource_once("lab://roots", &Retry::default())
        .await
        .expect("a round");
    let Outcome::InputRequired(round) = first else {
        panic!("asks first")
    };
    assert!(matches!(
        round.input_requests.get("roots"),
        Some(InputRequest::Roots)
    ));
    let reply = InputResponse::Roots(ListRootsResult {
        roots: vec![Root::new("file:///once", None)],
    });
    let retry = Retry::of(
        &round,
        Some([("roots".to_owned(), reply)].into_iter().collect()),
    );
    let second = client
        .read_resource_once("lab://roots", &retry)
        .await
        .expect("a round");
    let Outcome::Complete(read) = second else {
        panic!("completes")
    };
    let text = read.contents[0].text.clone().unwrap_or_default();
    assert!(text.contains("file:///once"), "{text}");
    server.stop().await;
}

#[actix_web::test]
async fn an_elicitation_handler_of_no_mode_declares_nothing_and_the_server_refuses_with_32021() {
    let server = Server::start().await;
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let client = Client::builder()
        .elicitation(elicit_with(
            ElicitationModes {
                form: false,
                url: false,
            },
            move |_, _| {
                a.fetch_add(1, Ordering::SeqCst);
                async { Ok(ElicitResult::decline()) }
            },
        ))
        .era(EraChoice::Modern)
        .connect_http(&server.url(LAB))
        .await
        .expect("connects");
    let err = client
        .call_tool("ask_form", json!({}))
        .await
        .expect_err("refused");
    // A bare `elicitation` would declare forms, which this handler does not answer.
    let rpc = err
        .rpc()
        .unwrap_or_else(|| panic!("a JSON-RPC error, got {err:?}"));
    assert_eq!(rpc.code, -32021);
    assert_eq!(asked.load(Ordering::SeqCst), 0);
    server.stop().await;
}
