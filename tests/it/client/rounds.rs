//! The input-required loop and the response streams, against scripted servers: state-only
//! rounds and their pause, byte-exact state, what a flow never leaks, result types, a
//! question without a handler (a round's and a legacy server's request), failing handlers,
//! pagination of every list, SSE notifications, and legacy stream resumption.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use roundtrip_client::handler::{elicit_with, ElicitationModes};
use roundtrip_client::protocol::input::ElicitResult;
use roundtrip_client::{Client, EraChoice, Error, HandlerError};
use serde_json::{json, Value};

use super::answers::{answering, named, Asked};
use super::scripted::{initialized, text_result, Reply, Scripted, Seen};

fn ask_form(key: &str) -> Value {
    json!({key: {"method": "elicitation/create", "params": {"message": "Name?",
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}})
}

fn input_required(requests: Option<Value>, state: Option<&str>) -> Value {
    let mut result = json!({"resultType": "input_required"});
    if let Some(requests) = requests {
        result["inputRequests"] = requests;
    }
    if let Some(state) = state {
        result["requestState"] = json!(state);
    }
    result
}

/// A modern server answering the `n`th tools/call (from 0) with `script(n, seen)`.
async fn calls(script: impl Fn(usize, &Seen) -> Reply + Send + Sync + 'static) -> Scripted {
    let count = AtomicUsize::new(0);
    Scripted::start(move |seen| match seen.method() {
        "tools/call" => script(count.fetch_add(1, Ordering::SeqCst), seen),
        _ => Reply::result(seen, json!({"resultType": "complete", "tools": []})),
    })
    .await
}

async fn client(server: &Scripted) -> Client {
    answering(&Asked::default(), named("Ada"))
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects")
}

#[actix_web::test]
async fn a_state_only_round_is_retried_after_50_then_100_ms_with_its_state() {
    let server = calls(|n, seen| match n {
        0 => Reply::result(seen, input_required(None, Some("wait-1"))),
        1 => Reply::result(seen, input_required(None, Some("wait-2"))),
        _ => Reply::result(seen, text_result("done")),
    })
    .await;
    let result = client(&server)
        .await
        .call_tool("t", json!({}))
        .await
        .expect("completes");
    assert_eq!(result.text(), "done");
    let calls = server.calls("tools/call");
    assert_eq!(calls.len(), 3);
    assert_eq!(calls[1].body["params"]["requestState"], "wait-1");
    assert_eq!(calls[2].body["params"]["requestState"], "wait-2");
    assert!(calls[1].body["params"].get("inputResponses").is_none());
    assert!(calls[1].at - calls[0].at >= Duration::from_millis(50));
    assert!(
        calls[2].at - calls[1].at >= Duration::from_millis(100),
        "the pause doubles"
    );
}

#[actix_web::test]
async fn the_state_is_echoed_byte_for_byte_with_a_new_id_and_left_out_when_none_was_sent() {
    const STATE: &str = "{\"nonce\": \"ü 1\", \"x\":[1 ,2]}  ";
    let server = calls(|n, seen| match n {
        0 => Reply::result(seen, input_required(Some(ask_form("a")), Some(STATE))),
        1 => Reply::result(seen, input_required(Some(ask_form("b")), None)),
        _ => Reply::result(seen, text_result("done")),
    })
    .await;
    client(&server)
        .await
        .call_tool("t", json!({"k": 1}))
        .await
        .expect("completes");
    let calls = server.calls("tools/call");
    assert_eq!(calls[1].body["params"]["requestState"], STATE);
    assert!(
        calls[2].body["params"].get("requestState").is_none(),
        "no state was sent in round 2"
    );
    assert_eq!(
        calls[2].body["params"]["inputResponses"],
        json!({"b": {"action": "accept", "content": {"name": "Ada"}}})
    );
    assert!(
        calls[2].body["params"]["inputResponses"].get("a").is_none(),
        "only the latest round's answers"
    );
    for call in &calls {
        assert_eq!(
            call.body["params"]["arguments"],
            json!({"k": 1}),
            "the original params every round"
        );
    }
    let ids: Vec<&Value> = calls.iter().map(|c| &c.body["id"]).collect();
    assert!(
        ids[0] != ids[1] && ids[1] != ids[2],
        "a new id per round: {ids:?}"
    );
}

#[actix_web::test]
async fn a_flow_leaks_nothing_into_a_concurrent_call() {
    let server = Scripted::start(|seen| {
        match (
            seen.body["params"]["name"].as_str(),
            seen.body["params"].get("inputResponses"),
        ) {
            (Some("asks"), None) => {
                Reply::result(seen, input_required(Some(ask_form("a")), Some("mine")))
            }
            _ => Reply::result(seen, text_result("ok")),
        }
    })
    .await;
    let gate = Arc::new(tokio::sync::Notify::new());
    let g = gate.clone();
    let client = Client::builder()
        .elicitation(elicit_with(ElicitationModes::FORM, move |_, _| {
            let g = g.clone();
            async move {
                g.notified().await;
                Ok(ElicitResult::accept(Default::default()))
            }
        }))
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects");
    let flow = client.call_tool("asks", json!({}));
    let other = async {
        // Runs while the flow's question is pending, then lets it go on.
        let result = client.call_tool("unrelated", json!({})).await;
        gate.notify_one();
        result
    };
    let (flow, other) = tokio::join!(flow, other);
    flow.expect("the flow completes");
    other.expect("the other call completes");
    let unrelated: Vec<Seen> = server
        .calls("tools/call")
        .into_iter()
        .filter(|s| s.body["params"]["name"] == "unrelated")
        .collect();
    assert_eq!(unrelated.len(), 1);
    let params = &unrelated[0].body["params"];
    assert!(
        params.get("requestState").is_none() && params.get("inputResponses").is_none(),
        "{params}"
    );
}

#[actix_web::test]
async fn a_missing_result_type_means_complete() {
    let server = calls(|_, seen| {
        Reply::result(
            seen,
            json!({"content": [{"type": "text", "text": "plain"}]}),
        )
    })
    .await;
    assert_eq!(
        client(&server)
            .await
            .call_tool("t", json!({}))
            .await
            .expect("completes")
            .text(),
        "plain"
    );
    assert_eq!(server.calls("tools/call").len(), 1, "not retried");
}

#[actix_web::test]
async fn an_unknown_result_type_is_a_typed_error() {
    let server =
        calls(|_, seen| Reply::result(seen, json!({"resultType": "task", "taskId": "t1"}))).await;
    let err = client(&server)
        .await
        .call_tool("t", json!({}))
        .await
        .expect_err("unknown");
    assert!(
        matches!(&err, Error::UnknownResultType { result_type, .. } if result_type == "task"),
        "{err:?}"
    );
}

#[actix_web::test]
async fn an_input_required_result_with_neither_questions_nor_state_is_an_error() {
    let server = calls(|_, seen| Reply::result(seen, input_required(None, None))).await;
    let err = client(&server)
        .await
        .call_tool("t", json!({}))
        .await
        .expect_err("empty");
    assert!(matches!(err, Error::EmptyInputRequired { .. }), "{err:?}");
}

#[actix_web::test]
async fn an_input_required_answer_to_a_list_is_an_error() {
    let server =
        Scripted::start(|seen| Reply::result(seen, input_required(Some(ask_form("a")), None)))
            .await;
    let err = client(&server)
        .await
        .list_tools()
        .await
        .expect_err("lists do not ask");
    assert!(
        matches!(err, Error::UnexpectedInputRequired { .. }),
        "{err:?}"
    );
}

#[actix_web::test]
async fn a_question_without_a_handler_is_a_typed_error_naming_its_method_and_no_handler_is_asked() {
    let server = calls(|_, seen| {
        let mut requests = ask_form("name");
        requests["llm"] =
            json!({"method": "sampling/createMessage", "params": {"messages": [], "maxTokens": 5}});
        Reply::result(seen, input_required(Some(requests), None))
    })
    .await;
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let client = Client::builder()
        .elicitation(elicit_with(ElicitationModes::FORM, move |_, _| {
            a.fetch_add(1, Ordering::SeqCst);
            async { Ok(ElicitResult::decline()) }
        }))
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects");
    let err = client
        .call_tool("t", json!({}))
        .await
        .expect_err("no sampling handler");
    let Error::MissingHandler {
        input_method, key, ..
    } = err
    else {
        panic!("expected MissingHandler, got {err:?}")
    };
    assert_eq!(
        (input_method, key.as_deref()),
        ("sampling/createMessage", Some("llm"))
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[actix_web::test]
async fn a_failing_handler_fails_the_call() {
    let server =
        calls(|_, seen| Reply::result(seen, input_required(Some(ask_form("name")), None))).await;
    let client = Client::builder()
        .elicitation(elicit_with(ElicitationModes::FORM, |_, _| async {
            Err(HandlerError::new("the terminal went away"))
        }))
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects");
    let err = client.call_tool("t", json!({})).await.expect_err("fails");
    assert!(
        matches!(
            err,
            Error::Handler {
                input_method: "elicitation/create (form mode)",
                ..
            }
        ),
        "{err:?}"
    );
}

#[actix_web::test]
async fn lists_follow_next_cursor_over_every_page() {
    let server = Scripted::start(|seen| {
        let page = |tool: &str, next: Option<&str>| {
            let mut r = json!({"resultType": "complete", "tools": [{"name": tool, "inputSchema": {"type": "object"}}]});
            if let Some(next) = next {
                r["nextCursor"] = json!(next);
            }
            r
        };
        match seen.body["params"]["cursor"].as_str() {
            None => Reply::result(seen, page("one", Some("c2"))),
            Some("c2") => Reply::result(seen, page("two", Some("c3"))),
            _ => Reply::result(seen, page("three", None)),
        }
    })
    .await;
    let tools = client(&server).await.list_tools().await.expect("tools");
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["one", "two", "three"]);
}

/// A server listing `key` over three pages (cursors `c2`, `c3`), one `item(n)` per page.
async fn three_pages(key: &'static str, item: fn(usize) -> Value) -> Scripted {
    Scripted::start(move |seen| {
        let (n, next) = match seen.body["params"]["cursor"].as_str() {
            None => (1, Some("c2")),
            Some("c2") => (2, Some("c3")),
            _ => (3, None),
        };
        let mut page = json!({"resultType": "complete", key: [item(n)]});
        if let Some(next) = next {
            page["nextCursor"] = json!(next);
        }
        Reply::result(seen, page)
    })
    .await
}

/// The cursors the `method` requests carried, in order.
fn cursors(server: &Scripted, method: &str) -> Vec<Value> {
    server
        .calls(method)
        .iter()
        .map(|s| {
            s.body["params"]
                .get("cursor")
                .cloned()
                .unwrap_or(Value::Null)
        })
        .collect()
}

#[actix_web::test]
async fn list_prompts_follows_next_cursor_over_every_page() {
    let server = three_pages("prompts", |n| json!({"name": format!("p{n}")})).await;
    let prompts = client(&server).await.list_prompts().await.expect("prompts");
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["p1", "p2", "p3"]);
    assert_eq!(
        cursors(&server, "prompts/list"),
        [Value::Null, json!("c2"), json!("c3")]
    );
}

#[actix_web::test]
async fn list_resources_follows_next_cursor_over_every_page() {
    let server = three_pages(
        "resources",
        |n| json!({"uri": format!("test://r{n}"), "name": format!("r{n}")}),
    )
    .await;
    let resources = client(&server)
        .await
        .list_resources()
        .await
        .expect("resources");
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert_eq!(uris, ["test://r1", "test://r2", "test://r3"]);
    assert_eq!(
        cursors(&server, "resources/list"),
        [Value::Null, json!("c2"), json!("c3")]
    );
}

#[actix_web::test]
async fn a_legacy_servers_request_without_a_handler_is_answered_32601_and_no_handler_is_asked() {
    let server = Scripted::start(|seen| match (seen.http.as_str(), seen.method()) {
        ("POST", "initialize") => {
            Reply::result(seen, initialized("2025-11-25")).with_header("mcp-session-id", "s1")
        }
        ("POST", "tools/call") => Reply::sse(format!(
            "data: {}\n\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "id": "srv-1", "method": "elicitation/create",
                "params": {"mode": "url", "message": "Sign in", "url": "https://example.com/a",
                    "elicitationId": "e1"}}),
            json!({"jsonrpc": "2.0", "id": seen.body["id"], "result": text_result("done")})
        )),
        ("GET", _) => Reply::empty(405),
        _ => Reply::empty(202),
    })
    .await;
    let asked = Arc::new(AtomicUsize::new(0));
    let a = asked.clone();
    let client = Client::builder()
        .elicitation(elicit_with(ElicitationModes::FORM, move |_, _| {
            a.fetch_add(1, Ordering::SeqCst);
            async { Ok(ElicitResult::decline()) }
        }))
        .era(EraChoice::Legacy)
        .connect_http(&server.url)
        .await
        .expect("initializes");
    client.call_tool("t", json!({})).await.expect("completes");
    let mut answer = None;
    for _ in 0..200 {
        answer = server.seen().into_iter().find(|s| s.body["id"] == "srv-1");
        if answer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answer = answer.expect("the server's request is answered");
    assert_eq!(answer.body["error"]["code"], -32601, "{}", answer.body);
    assert!(
        answer.body["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("url mode"),
        "names what is missing: {}",
        answer.body
    );
    assert_eq!(asked.load(Ordering::SeqCst), 0);
}

#[actix_web::test]
async fn notifications_on_a_modern_stream_reach_the_sink_before_the_result() {
    let server = calls(|_, seen| {
        let id = &seen.body["id"];
        Reply::sse(format!(
            "data: {}\n\n: keep-alive\n\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "p", "progress": 1}}),
            json!({"jsonrpc": "2.0", "id": id, "result": text_result("streamed")})
        ))
    })
    .await;
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let client = Client::builder()
        .on_notification(move |n| {
            s.lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(n.method.clone())
        })
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects");
    assert_eq!(
        client
            .call_tool("t", json!({}))
            .await
            .expect("completes")
            .text(),
        "streamed"
    );
    assert_eq!(
        *seen.lock().unwrap_or_else(|p| p.into_inner()),
        ["notifications/progress"]
    );
}

#[actix_web::test]
async fn a_modern_stream_that_ends_before_its_response_loses_the_request() {
    let server = calls(|_, _| Reply::sse(": nothing here\n\n".into())).await;
    let err = client(&server)
        .await
        .call_tool("t", json!({}))
        .await
        .expect_err("lost");
    assert!(matches!(err, Error::StreamEnded { .. }), "{err:?}");
}

#[actix_web::test]
async fn an_sse_event_past_the_clients_limit_fails_the_call_naming_the_limit() {
    let long = "x".repeat(roundtrip_client::MAX_MESSAGE_BYTES + 1);
    let server = calls(move |_, _| Reply::sse(format!("id: 1\ndata: {long}\n\n"))).await;
    let err = client(&server)
        .await
        .call_tool("t", json!({}))
        .await
        .expect_err("refused");
    assert!(
        matches!(err, Error::EventTooLong { limit, .. } if limit == roundtrip_client::MAX_MESSAGE_BYTES),
        "{err:?}"
    );
    // Nothing is resumed: the same event would come again.
    assert_eq!(server.calls("tools/call").len(), 1);
    assert!(server.seen().iter().all(|s| s.http == "POST"));
}

#[actix_web::test]
async fn a_legacy_stream_that_ends_early_is_resumed_with_last_event_id_after_its_retry() {
    let server = Scripted::start(|seen| match (seen.http.as_str(), seen.method()) {
        ("POST", "initialize") => {
            Reply::result(seen, initialized("2025-11-25")).with_header("mcp-session-id", "s1")
        }
        ("POST", "tools/call") => Reply::sse("id: ev-1\nretry: 150\ndata: \n\n".into()),
        ("GET", _) if seen.header("last-event-id").is_none() => Reply::empty(405),
        ("GET", _) => Reply::sse(format!(
            "id: ev-2\nevent: message\ndata: {}\n\n",
            json!({"jsonrpc": "2.0", "id": 2, "result": text_result("resumed")})
        )),
        _ => Reply::empty(202),
    })
    .await;
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .connect_http(&server.url)
        .await
        .expect("initializes");
    let result = client
        .call_tool("t", json!({}))
        .await
        .expect("completes after resuming");
    assert_eq!(result.text(), "resumed");
    let seen = server.seen();
    let (post, get) = (
        seen.iter().find(|s| s.method() == "tools/call"),
        seen.iter()
            .find(|s| s.http == "GET" && s.header("last-event-id").is_some()),
    );
    let (Some(post), Some(get)) = (post, get) else {
        panic!("a POST and a GET: {seen:?}")
    };
    assert_eq!(post.body["id"], 2, "the call this test's GET answers");
    assert_eq!(get.header("last-event-id"), Some("ev-1"));
    assert_eq!(get.header("mcp-session-id"), Some("s1"));
    assert!(
        get.at - post.at >= Duration::from_millis(150),
        "waited for the retry the server named"
    );
}

#[actix_web::test]
async fn a_legacy_sessions_standalone_stream_is_opened_and_its_requests_answered() {
    let server = Scripted::start(|seen| match (seen.http.as_str(), seen.method()) {
        ("POST", "initialize") => {
            Reply::result(seen, initialized("2025-11-25")).with_header("mcp-session-id", "s1")
        }
        ("GET", _) => Reply::sse(format!(
            "data: {}\n\n",
            json!({"jsonrpc": "2.0", "id": "srv-1", "method": "roots/list"})
        )),
        _ => Reply::empty(202),
    })
    .await;
    let _client = answering(&Asked::default(), named("Ada"))
        .era(EraChoice::Legacy)
        .connect_http(&server.url)
        .await
        .expect("initializes");
    let mut answer = None;
    for _ in 0..200 {
        answer = server.seen().into_iter().find(|s| s.body["id"] == "srv-1");
        if answer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let answer = answer.expect("the server's request on the GET stream is answered");
    assert_eq!(
        answer.body["result"]["roots"][0]["uri"],
        super::answers::ROOT
    );
    assert_eq!(answer.header("mcp-session-id"), Some("s1"));
}
