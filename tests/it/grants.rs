//! A grant-limited principal (the `demo` tenant's key [`CAROL`], allowed only `echo`) sees only
//! what it may call, and cannot call the rest: the same rule for the list and for the call, on
//! the modern wire, on a legacy session and on stdio.

use roundtrip_runtime::tenancy::{Allow, Grants, Principal};
use serde_json::{json, Value};

use crate::support::legacy_client::{all_caps, legacy_call, legacy_rpc, LEGACY_VERSION};
use crate::support::stdio_in_process::StdioInProcess;
use crate::support::{meta, rpc, tool_call, Server, ALICE, CAROL, DEMO};

fn tool_names(list: &Value) -> Vec<String> {
    list["tools"]
        .as_array()
        .expect("a tools list")
        .iter()
        .map(|t| t["name"].as_str().expect("a name").to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Modern HTTP

#[actix_web::test]
async fn a_limited_key_lists_only_the_tools_it_may_call() {
    let server = Server::start().await;
    let list = rpc(1, "tools/list", json!({}));
    let limited = server.post(DEMO, &list).bearer(CAROL).send().await;
    assert_eq!(tool_names(&limited.result()), ["echo"]);
    let everyone = server.post(DEMO, &list).bearer(ALICE).send().await;
    assert!(
        tool_names(&everyone.result()).len() > 1,
        "{:?}",
        everyone.result()
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_limited_key_cannot_call_a_tool_outside_its_grants() {
    let server = Server::start().await;
    let greet = tool_call(1, "greet", json!({}), json!({"elicitation": {}}));
    let refused = server.post(DEMO, &greet).bearer(CAROL).send().await;
    let error = refused.error(-32602, 400);
    assert_eq!(error["message"], "Unknown tool: greet");

    let echo = tool_call(2, "echo", json!({"text": "hi"}), json!({}));
    let answered = server.post(DEMO, &echo).bearer(CAROL).send().await;
    assert_eq!(answered.result()["content"][0]["text"], "hi");
    server.stop().await;
}

#[actix_web::test]
async fn a_limited_key_is_not_offered_the_resources_it_may_not_read() {
    let server = Server::start().await;
    let discover = rpc(1, "server/discover", json!({}));
    let limited = server.post(DEMO, &discover).bearer(CAROL).send().await;
    let caps = &limited.result()["capabilities"];
    assert!(caps.get("tools").is_some(), "{caps}");
    assert!(caps.get("resources").is_none(), "{caps}");

    let read = rpc(
        2,
        "resources/read",
        json!({"uri": "workspace://roots", "_meta": meta(json!({"roots": {}}))}),
    );
    server
        .post(DEMO, &read)
        .bearer(CAROL)
        .send()
        .await
        .error(-32601, 404);
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// A legacy session

#[actix_web::test]
async fn a_limited_key_s_legacy_session_lists_only_its_tools_and_cannot_call_others() {
    let server = Server::start().await;
    let session = server
        .legacy_session_as(DEMO, Some(CAROL), LEGACY_VERSION, all_caps())
        .await;
    assert!(
        session.init["capabilities"].get("resources").is_none(),
        "{}",
        session.init
    );
    let list = session
        .result(&legacy_rpc(1, "tools/list", json!({})))
        .await;
    assert_eq!(tool_names(&list), ["echo"]);

    let refused = session
        .send(&legacy_call(2, "greet", json!({})))
        .await
        .response();
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["message"], "Unknown tool: greet");
    let echo = session
        .result(&legacy_call(3, "echo", json!({"text": "hi"})))
        .await;
    assert_eq!(echo["content"][0]["text"], "hi");
    server.stop().await;
}

// ---------------------------------------------------------------------------------------------
// stdio

fn only_echo() -> Principal {
    Principal::with_grants("local", Grants::only(Allow::default().tools(["echo"])))
}

#[actix_web::test]
async fn a_limited_principal_on_stdio_lists_only_its_tools_and_cannot_call_others() {
    let server = Server::start().await;
    let mut stdio = StdioInProcess::start(server.tenant(DEMO), only_echo());
    let list = stdio.request(&rpc(1, "tools/list", json!({}))).await;
    assert_eq!(tool_names(&list["result"]), ["echo"]);
    let refused = stdio
        .request(&tool_call(
            2,
            "greet",
            json!({}),
            json!({"elicitation": {}}),
        ))
        .await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");
    assert_eq!(refused["error"]["message"], "Unknown tool: greet");
    stdio.close();
    server.stop().await;
}

#[actix_web::test]
async fn a_limited_principal_s_legacy_session_on_stdio_lists_only_its_tools() {
    let server = Server::start().await;
    let mut stdio = StdioInProcess::start(server.tenant(DEMO), only_echo());
    let init = stdio
        .request(&crate::support::legacy_client::initialize_request(
            LEGACY_VERSION,
            all_caps(),
        ))
        .await;
    assert!(
        init["result"]["capabilities"].get("resources").is_none(),
        "{init}"
    );
    let list = stdio.request(&legacy_rpc(1, "tools/list", json!({}))).await;
    assert_eq!(tool_names(&list["result"]), ["echo"]);
    let refused = stdio.request(&legacy_call(2, "greet", json!({}))).await;
    assert_eq!(refused["error"]["message"], "Unknown tool: greet");
    stdio.close();
    server.stop().await;
}
