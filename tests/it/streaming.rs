//! Request streams (progress and logs before the result), plain JSON when nothing precedes
//! the result, `subscriptions/listen`, and cancellation by closing the stream.

use std::sync::atomic::Ordering;

use serde_json::{json, Value};

use crate::support::{
    meta, rpc, tool_call, Events, Probe, Server, EMPTY, LAB, LOG_LEVEL, SUBSCRIPTION_ID,
};

/// `tools/call` of `tool` with extra `_meta` entries.
fn call_with_meta(id: u32, tool: &str, extra: Value) -> Value {
    let mut m = meta(json!({}));
    for (k, v) in extra.as_object().expect("object") {
        m[k] = v.clone();
    }
    rpc(
        id,
        "tools/call",
        json!({"name": tool, "arguments": {}, "_meta": m}),
    )
}

fn methods(events: &[Value]) -> Vec<String> {
    events
        .iter()
        .map(|e| e["method"].as_str().unwrap_or("<response>").to_owned())
        .collect()
}

#[actix_web::test]
async fn progress_notifications_echoing_the_token_stream_before_the_final_result() {
    let server = Server::start().await;
    for token in [json!("p-1"), json!(42)] {
        let reply = server
            .send(
                LAB,
                &call_with_meta(1, "chatty", json!({"progressToken": token})),
            )
            .await;
        assert!(reply.is_sse(), "{reply:?}");
        assert_eq!(reply.header("x-accel-buffering"), Some("no"));
        let events = reply.events();
        assert_eq!(
            methods(&events),
            [
                "notifications/progress",
                "notifications/progress",
                "notifications/progress",
                "<response>"
            ],
            "no logs without a logLevel; the repeated progress value is dropped"
        );
        let progress: Vec<f64> = events[..3]
            .iter()
            .map(|e| {
                assert_eq!(e["params"]["progressToken"], token);
                e["params"]["progress"].as_f64().expect("a number")
            })
            .collect();
        assert_eq!(progress, [1.0, 2.0, 3.0]);
        assert_eq!(events[3]["result"]["content"][0]["text"], "chatty done");
    }
    server.stop().await;
}

#[actix_web::test]
async fn logs_are_sent_only_when_asked_for_and_only_at_or_above_the_level() {
    let server = Server::start().await;
    for (level, expected) in [
        ("warning", vec!["warning", "error"]),
        ("debug", vec!["debug", "info", "warning", "error"]),
        ("error", vec!["error"]),
        ("emergency", vec![]),
    ] {
        let reply = server
            .send(LAB, &call_with_meta(1, "chatty", json!({LOG_LEVEL: level})))
            .await;
        let messages: Vec<Value> = if reply.is_sse() {
            reply.events()
        } else {
            vec![reply.json()]
        };
        assert!(
            messages
                .iter()
                .all(|m| m["method"] != "notifications/progress"),
            "no progress without a token"
        );
        let levels: Vec<&str> = messages
            .iter()
            .filter(|m| m["method"] == "notifications/message")
            .map(|m| m["params"]["level"].as_str().expect("a level"))
            .collect();
        assert_eq!(levels, expected, "logLevel {level}: {reply:?}");
        assert_eq!(
            reply.response()["result"]["content"][0]["text"],
            "chatty done"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_request_without_progress_token_or_log_level_gets_plain_json() {
    let server = Server::start().await;
    let reply = server
        .send(LAB, &call_with_meta(1, "chatty", json!({})))
        .await;
    assert!(
        reply.content_type().starts_with("application/json"),
        "{reply:?}"
    );
    assert_eq!(reply.result()["content"][0]["text"], "chatty done");
    server.stop().await;
}

#[actix_web::test]
async fn a_json_request_whose_handler_waits_is_answered_once_it_finishes() {
    let server = Server::start().await;
    let (first, second) = futures_util::future::join(
        server.send(LAB, &tool_call(1, "nap", json!({}), json!({}))),
        server.send(LAB, &tool_call(2, "nap", json!({}), json!({}))),
    )
    .await;
    for (reply, id) in [(first, 1), (second, 2)] {
        assert!(
            reply.content_type().starts_with("application/json"),
            "{reply:?}"
        );
        assert_eq!(reply.response()["id"], id);
        assert_eq!(reply.result()["content"][0]["text"], "rested");
        assert_eq!(reply.result()["resultType"], "complete");
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_progress_token_whose_handler_reports_nothing_gets_plain_json() {
    let server = Server::start().await;
    let reply = server
        .send(
            LAB,
            &call_with_meta(
                1,
                "quiet",
                json!({"progressToken": "p", LOG_LEVEL: "debug"}),
            ),
        )
        .await;
    assert!(
        reply.content_type().starts_with("application/json"),
        "{reply:?}"
    );
    reply.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_client_that_accepts_only_json_gets_the_result_without_notifications() {
    let server = Server::start().await;
    let reply = server
        .post(
            LAB,
            &call_with_meta(
                1,
                "chatty",
                json!({"progressToken": "p", LOG_LEVEL: "debug"}),
            ),
        )
        .header("accept", "application/json")
        .send()
        .await;
    assert!(
        reply.content_type().starts_with("application/json"),
        "{reply:?}"
    );
    assert_eq!(reply.result()["content"][0]["text"], "chatty done");
    server.stop().await;
}

fn listen(id: &str, filter: Value) -> Value {
    rpc(id, "subscriptions/listen", json!({"notifications": filter}))
}

async fn open_listener(server: &Server, tenant: &str, id: &str, filter: Value) -> (Events, Value) {
    let mut events = server.post(tenant, &listen(id, filter)).open().await;
    assert_eq!(events.status, 200);
    assert!(events.content_type().starts_with("text/event-stream"));
    let ack = events.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    (events, ack)
}

#[actix_web::test]
async fn listen_is_acknowledged_first_with_its_subscription_id_and_what_is_honoured() {
    let server = Server::start().await;
    let filter = json!({
        "toolsListChanged": true,
        "promptsListChanged": true,
        "resourcesListChanged": false,
        "resourceSubscriptions": ["lab://static"]
    });
    let (_events, ack) = open_listener(&server, LAB, "sub-1", filter).await;
    assert_eq!(ack["params"]["_meta"][SUBSCRIPTION_ID], "sub-1");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true, "promptsListChanged": true, "resourceSubscriptions": ["lab://static"]})
    );

    // A tenant with nothing that could change offers no subscriptions at all.
    server
        .send(EMPTY, &listen("sub-2", json!({"toolsListChanged": true})))
        .await
        .error(-32601, 404);
    server.stop().await;
}

async fn publish(server: &Server, list: &str) {
    server
        .send(
            LAB,
            &tool_call(100, "publish", json!({"list": list}), json!({})),
        )
        .await
        .result();
}

#[actix_web::test]
async fn a_published_tools_change_reaches_tools_listeners_and_no_one_else() {
    let server = Server::start().await;
    let (mut tools, _) =
        open_listener(&server, LAB, "tools-sub", json!({"toolsListChanged": true})).await;
    let (mut prompts, _) = open_listener(
        &server,
        LAB,
        "prompts-sub",
        json!({"promptsListChanged": true}),
    )
    .await;

    publish(&server, "tools").await;
    let event = tools.next().await.expect("a tools change");
    assert_eq!(event["method"], "notifications/tools/list_changed");
    assert_eq!(event["params"]["_meta"][SUBSCRIPTION_ID], "tools-sub");

    // Changes are delivered in order: had the prompts listener been sent the tools change, it
    // would come before this one.
    publish(&server, "prompts").await;
    let event = prompts.next().await.expect("a prompts change");
    assert_eq!(event["method"], "notifications/prompts/list_changed");
    assert_eq!(event["params"]["_meta"][SUBSCRIPTION_ID], "prompts-sub");

    // Likewise the tools listener never saw the prompts change.
    publish(&server, "tools").await;
    let event = tools.next().await.expect("a second tools change");
    assert_eq!(event["method"], "notifications/tools/list_changed");
    server.stop().await;
}

#[actix_web::test]
async fn a_resource_update_reaches_only_the_listeners_of_that_uri() {
    let server = Server::start().await;
    let (mut events, _) = open_listener(
        &server,
        LAB,
        "res-sub",
        json!({"resourceSubscriptions": ["lab://static"]}),
    )
    .await;
    publish(&server, "lab://elsewhere").await;
    publish(&server, "resources").await;
    publish(&server, "lab://static").await;
    let event = events.next().await.expect("an update");
    assert_eq!(event["method"], "notifications/resources/updated");
    assert_eq!(event["params"]["uri"], "lab://static");
    assert_eq!(event["params"]["_meta"][SUBSCRIPTION_ID], "res-sub");
    server.stop().await;
}

#[actix_web::test]
async fn a_listen_stream_closes_with_a_complete_result_when_the_server_shuts_down() {
    let server = Server::start().await;
    let (mut events, _) =
        open_listener(&server, LAB, "bye", json!({"toolsListChanged": true})).await;
    server.begin_shutdown();
    let closing = events.next().await.expect("the closing result");
    assert_eq!(closing["id"], "bye");
    assert_eq!(closing["result"]["resultType"], "complete");
    assert_eq!(closing["result"]["_meta"][SUBSCRIPTION_ID], "bye");
    assert!(
        events.next().await.is_none(),
        "the stream ends after its result"
    );
    server.stop().await;
}

#[actix_web::test]
async fn closing_a_request_stream_cancels_its_handler() {
    let server = Server::start().await;
    let probe = server.lab_probe.clone();
    let mut events = server
        .post(
            LAB,
            &call_with_meta(1, "wait_cancel", json!({"progressToken": "c"})),
        )
        .open()
        .await;
    let first = events
        .next()
        .await
        .expect("the progress that opens the stream");
    assert_eq!(first["method"], "notifications/progress");
    assert!(probe.started.load(Ordering::SeqCst));
    assert!(!probe.cancelled.load(Ordering::SeqCst));
    drop(events);
    assert!(
        Probe::wait_for(&probe.cancelled).await,
        "the handler saw its context cancelled"
    );
    assert!(
        Probe::wait_for(&probe.cleaned_up).await,
        "the handler's clean-up after ctx.cancelled() ran within the grace"
    );
    server.stop().await;
}

#[actix_web::test]
async fn closing_the_connection_cancels_a_handler_that_streams_nothing() {
    let server = Server::start().await;
    let probe = server.lab_probe.clone();
    let pending = actix_rt::spawn(
        server
            .post(LAB, &tool_call(1, "wait_cancel", json!({}), json!({})))
            .detach(),
    );
    assert!(Probe::wait_for(&probe.started).await, "the handler runs");
    pending.abort();
    assert!(
        Probe::wait_for(&probe.cancelled).await,
        "the handler saw its context cancelled"
    );
    assert!(
        Probe::wait_for(&probe.cleaned_up).await,
        "the handler's clean-up after ctx.cancelled() ran within the grace"
    );
    // The worker still serves.
    server
        .send(LAB, &tool_call(2, "quiet", json!({}), json!({})))
        .await
        .result();
    server.stop().await;
}
