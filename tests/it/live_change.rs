//! A tenant changed while it serves (`Tenant::update`, what the admin API will call): its
//! settings and its catalog take effect for the next request on the modern wire, in a legacy
//! session that was open before the change and on stdio; open `subscriptions/listen`
//! streams and legacy sessions keep working across the change and are told the lists changed.

use std::sync::Arc;
use std::time::Duration;

use roundtrip_runtime::handler::{fn_tool, Tool, ToolDescriptor};
use roundtrip_runtime::protocol::result::CallToolResult;
use roundtrip_runtime::tenancy::{Principal, Tenant};
use serde_json::{json, Value};

use crate::support::legacy_client::{
    all_caps, initialize_request, legacy_call, legacy_rpc, LEGACY_VERSION,
};
use crate::support::stdio_in_process::StdioInProcess;
use crate::support::{rpc, tool_call, Events, Server, LAB};

/// A tool the `lab` catalog does not have until a test adds it.
fn added() -> Arc<dyn Tool> {
    fn_tool(
        ToolDescriptor::no_args("added", "Added while the tenant serves."),
        |_ctx, _args| async { CallToolResult::text("added and called").into() },
    )
}

fn add_a_tool(tenant: &Tenant) {
    tenant.update(|c| c.catalog = Arc::new(c.catalog.to_builder().tool(added()).build()));
}

fn new_instructions(tenant: &Tenant) {
    tenant.update(|c| {
        c.instructions = Some("Changed while serving.".into());
        c.settings.list_ttl = Duration::from_secs(7);
    });
}

fn has_tool(list: &Value, name: &str) -> bool {
    list["tools"]
        .as_array()
        .is_some_and(|tools| tools.iter().any(|t| t["name"] == name))
}

async fn open_tools_listener(server: &Server) -> Events {
    let listen = rpc(
        "sub",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut events = server.post(LAB, &listen).open().await;
    let ack = events.next().await.expect("an acknowledgement");
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    events
}

// ---------------------------------------------------------------------------------------------
// Modern HTTP

#[actix_web::test]
async fn a_settings_change_shows_in_the_next_modern_request() {
    let server = Server::start().await;
    new_instructions(&server.tenant(LAB));
    let discover = server
        .send(LAB, &rpc(1, "server/discover", json!({})))
        .await;
    assert_eq!(discover.result()["instructions"], "Changed while serving.");
    let list = server.send(LAB, &rpc(2, "tools/list", json!({}))).await;
    assert_eq!(list.result()["ttlMs"], 7000);
    server.stop().await;
}

#[actix_web::test]
async fn a_catalog_change_shows_in_the_next_modern_list_and_its_tool_can_be_called() {
    let server = Server::start().await;
    let list = rpc(1, "tools/list", json!({}));
    assert!(!has_tool(&server.send(LAB, &list).await.result(), "added"));
    add_a_tool(&server.tenant(LAB));
    assert!(has_tool(&server.send(LAB, &list).await.result(), "added"));
    let called = server
        .send(LAB, &tool_call(2, "added", json!({}), json!({})))
        .await;
    assert_eq!(called.result()["content"][0]["text"], "added and called");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// A legacy session open across the change

#[actix_web::test]
async fn a_settings_change_reaches_a_legacy_session_begun_before_it() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    server
        .tenant(LAB)
        .update(|c| c.settings.legacy_shim = false);
    let refused = session
        .send(&legacy_call(1, "ask_form", json!({})))
        .await
        .response();
    assert_eq!(
        refused["error"]["data"]["reason"], "shim_disabled",
        "{refused}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_catalog_change_reaches_a_legacy_session_begun_before_it() {
    let server = Server::start().await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut stream = session.listen().await;
    add_a_tool(&server.tenant(LAB));
    let changed = stream.next().await.expect("a notification");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    let list = session
        .result(&legacy_rpc(1, "tools/list", json!({})))
        .await;
    assert!(has_tool(&list, "added"), "{list}");
    let called = session.result(&legacy_call(2, "added", json!({}))).await;
    assert_eq!(called["content"][0]["text"], "added and called");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// Both open at once: a listen stream and a legacy session

#[actix_web::test]
async fn a_listen_stream_and_a_legacy_session_keep_working_across_a_settings_and_catalog_change() {
    let server = Server::start().await;
    let mut listener = open_tools_listener(&server).await;
    let session = server.legacy_session(LAB, all_caps()).await;
    let mut session_stream = session.listen().await;

    let tenant = server.tenant(LAB);
    new_instructions(&tenant);
    add_a_tool(&tenant);

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

    // Both go on working: the session calls the new tool, the listener hears the next change.
    assert!(session.ping().await.status == 200);
    let called = session.result(&legacy_call(1, "added", json!({}))).await;
    assert_eq!(called["content"][0]["text"], "added and called");
    tenant.replace_catalog(
        tenant
            .config()
            .catalog
            .to_builder()
            .without_tool("added")
            .build(),
    );
    let changed = listener.next().await.expect("a second list_changed");
    assert_eq!(changed["method"], "notifications/tools/list_changed");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// stdio

#[actix_web::test]
async fn a_settings_and_catalog_change_show_in_the_next_modern_request_on_stdio() {
    let server = Server::start().await;
    let tenant = server.tenant(LAB);
    let mut stdio = StdioInProcess::start(tenant.clone(), Principal::new("local"));
    new_instructions(&tenant);
    add_a_tool(&tenant);
    let discover = stdio.request(&rpc(1, "server/discover", json!({}))).await;
    assert_eq!(discover["result"]["instructions"], "Changed while serving.");
    let list = stdio.request(&rpc(2, "tools/list", json!({}))).await;
    assert!(has_tool(&list["result"], "added"), "{list}");
    stdio.close();
    server.stop().await;
}

#[actix_web::test]
async fn a_legacy_session_on_stdio_is_told_of_a_catalog_change_and_sees_it() {
    let server = Server::start().await;
    let tenant = server.tenant(LAB);
    let mut stdio = StdioInProcess::start(tenant.clone(), Principal::new("local"));
    stdio
        .request(&initialize_request(LEGACY_VERSION, all_caps()))
        .await;
    add_a_tool(&tenant);
    let changed = stdio.next().await;
    assert_eq!(
        changed["method"], "notifications/tools/list_changed",
        "{changed}"
    );
    let list = stdio.request(&legacy_rpc(1, "tools/list", json!({}))).await;
    assert!(has_tool(&list["result"], "added"), "{list}");
    stdio.close();
    server.stop().await;
}

#[actix_web::test]
async fn a_settings_change_reaches_a_legacy_session_on_stdio() {
    let server = Server::start().await;
    let tenant = server.tenant(LAB);
    let mut stdio = StdioInProcess::start(tenant.clone(), Principal::new("local"));
    stdio
        .request(&initialize_request(LEGACY_VERSION, all_caps()))
        .await;
    tenant.update(|c| c.settings.legacy_shim = false);
    let refused = stdio.request(&legacy_call(1, "ask_form", json!({}))).await;
    assert_eq!(
        refused["error"]["data"]["reason"], "shim_disabled",
        "{refused}"
    );
    stdio.close();
    server.stop().await;
}
