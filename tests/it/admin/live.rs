//! Changes made through the admin API take effect on the MCP endpoint without a restart: a
//! disabled tool leaves the lists and cannot be called, new instructions show at once, and
//! open `subscriptions/listen` streams and legacy sessions hear list_changed and go on.

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::legacy_client::{all_caps, legacy_call};
use crate::support::{rpc, tool_call, Server, LAB};

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["name"].as_str().map(str::to_owned))
        .collect()
}

async fn patch(server: &Server, body: Value) {
    let reply = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[actix_web::test]
async fn a_disabled_tool_leaves_the_list_and_cannot_be_called_then_comes_back() {
    let server = Server::start().await;
    let list = rpc(1, "tools/list", json!({}));
    assert!(tool_names(&server.send(LAB, &list).await.result()).contains(&"quiet".to_owned()));

    patch(&server, json!({"disabled": {"tools": ["quiet"]}})).await;
    assert!(!tool_names(&server.send(LAB, &list).await.result()).contains(&"quiet".to_owned()));
    let call = tool_call(2, "quiet", json!({}), json!({}));
    server.send(LAB, &call).await.error(-32602, 400);

    patch(&server, json!({"disabled": {}})).await;
    server.send(LAB, &call).await.result();
    server.stop().await;
}

#[actix_web::test]
async fn new_instructions_show_in_the_next_discover() {
    let server = Server::start().await;
    patch(&server, json!({"instructions": "Changed through the API."})).await;
    let discover = server
        .send(LAB, &rpc(1, "server/discover", json!({})))
        .await
        .result();
    assert_eq!(discover["instructions"], "Changed through the API.");
    server.stop().await;
}

#[actix_web::test]
async fn open_listen_streams_and_legacy_sessions_hear_list_changed_and_go_on() {
    let server = Server::start().await;
    let listen = rpc(
        "sub",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut listener = server.post(LAB, &listen).open().await;
    let ack = listener.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut session_stream = session.listen().await;

    patch(
        &server,
        json!({"disabled": {"tools": ["boom"]}, "name": "Renamed lab"}),
    )
    .await;

    let changed = listener
        .next()
        .await
        .expect("list_changed on the listen stream");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let changed = session_stream
        .next()
        .await
        .expect("list_changed on the session's stream");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    // The session goes on, with the change: the disabled tool is gone, the others work.
    let quiet = session.result(&legacy_call(1, "quiet", json!({}))).await;
    assert!(quiet["content"].is_array(), "{quiet}");
    let boom = session.send(&legacy_call(2, "boom", json!({}))).await;
    assert!(boom.response()["error"].is_object(), "{boom:?}");
    server.stop().await;
}

#[actix_web::test]
async fn a_settings_change_keeps_the_catalogs_state() {
    // The examples' notes live in the tenant's catalog instance: a change that is not to the
    // catalogs must not build a new one.
    let server = Server::start().await;
    let bearer = crate::support::ALICE;
    let write = tool_call(
        1,
        "notes_write",
        json!({"name": "kept", "text": "across"}),
        json!({}),
    );
    server
        .post("demo", &write)
        .bearer(bearer)
        .send()
        .await
        .result();
    let reply = server
        .admin(Method::PATCH, "/tenants/demo")
        .json(&json!({"instructions": "New."}))
        .send_unchecked()
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
    let list = tool_call(2, "notes_list", json!({}), json!({}));
    let notes = server
        .post("demo", &list)
        .bearer(bearer)
        .send()
        .await
        .result();
    assert!(notes.to_string().contains("kept"), "{notes}");
    server.stop().await;
}

#[actix_web::test]
async fn a_catalog_added_by_the_operator_serves_its_tools_at_once() {
    let server = Server::start().await;
    let echo = tool_call(1, "echo", json!({"text": "now"}), json!({}));
    server.send(LAB, &echo).await.error(-32602, 400);
    patch(&server, json!({"catalogs": ["lab", "examples"]})).await;
    let result = server.send(LAB, &echo).await.result();
    assert_eq!(result["content"][0]["text"], "now");
    // The lab's own tools are still there: its catalog comes first.
    server
        .send(LAB, &tool_call(2, "quiet", json!({}), json!({})))
        .await
        .result();
    server.stop().await;
}
