//! `requestState` sealing, through HTTP against the binary's always-sealing server: a state
//! opens only on the retry it was issued for, unchanged and in time. Every rejection is the
//! same fixed `{"code":-32602,"message":"Invalid or expired requestState"}` with HTTP 400.

use std::time::Duration;

use std::sync::{Arc, Mutex};

use roundtrip_runtime::sealing::{
    kid_of, KeyRing, KeyShare, LocalKeyShare, MasterKey, ShareError, Stored, Version, WrappedRing,
};
use serde_json::{json, Value};

use crate::support::{
    accept, invalid_state_error, lab, retry, rpc, tool_call, Reply, Server, ALICE, BOB, DEMO, LAB,
    LAB2,
};

fn form_caps() -> Value {
    json!({"elicitation": {}})
}

fn answer() -> Value {
    json!({"form": accept(json!({"name": "Ada"}))})
}

fn assert_rejected(reply: &Reply) {
    assert_eq!(reply.status, 400, "{reply:?}");
    assert_eq!(reply.json()["error"], invalid_state_error(), "{reply:?}");
}

/// Round 1 of `ask_form` with `arguments`: the request and its sealed state.
async fn first_round(server: &Server, tenant: &str, arguments: Value) -> (Value, String) {
    let first = tool_call(1, "ask_form", arguments, form_caps());
    let state = server.send(tenant, &first).await.state();
    (first, state)
}

#[actix_web::test]
async fn a_sealed_state_opens_on_its_own_retry_and_hands_the_handler_its_state() {
    let server = Server::start().await;
    let (first, state) = first_round(&server, LAB, json!({"topic": "x"})).await;
    assert!(state.starts_with("v2."), "{state}");
    assert!(
        !state.contains("form-state"),
        "the handler's state does not travel in clear: {state}"
    );
    let result = server
        .send(LAB, &retry(&first, 2, answer(), Some(&state)))
        .await
        .result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"]["state"], "form-state");
    assert_eq!(result["structuredContent"]["round"], 1);
    assert_eq!(
        result["structuredContent"]["answers"]["form"]["content"]["name"],
        "Ada"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_state_with_one_character_changed_is_rejected() {
    let server = Server::start().await;
    let (first, state) = first_round(&server, LAB, json!({})).await;
    let mut chars: Vec<char> = state.chars().collect();
    let blob_start = state.rfind('.').expect("v2.kid.blob") + 1;
    for at in [
        blob_start + (chars.len() - blob_start) / 2,
        blob_start + 2,
        chars.len() - 3,
    ] {
        let original = chars[at];
        chars[at] = if original == 'A' { 'B' } else { 'A' };
        let tampered: String = chars.iter().collect();
        chars[at] = original;
        let reply = server
            .send(LAB, &retry(&first, 2, answer(), Some(&tampered)))
            .await;
        assert_rejected(&reply);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_truncated_state_is_rejected() {
    let server = Server::start().await;
    let (first, state) = first_round(&server, LAB, json!({})).await;
    for cut in [1, 4, 16, state.len() / 2] {
        let reply = server
            .send(
                LAB,
                &retry(&first, 2, answer(), Some(&state[..state.len() - cut])),
            )
            .await;
        assert_rejected(&reply);
    }
    let extended = format!("{state}AAAA");
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 3, answer(), Some(&extended)))
            .await,
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_state_replayed_on_another_tool_is_rejected() {
    let server = Server::start().await;
    let (_, state) = first_round(&server, LAB, json!({})).await;
    for tool in ["ask_url", "quiet"] {
        let other = tool_call(2, tool, json!({}), json!({"elicitation": {"url": {}}}));
        let reply = server
            .send(LAB, &retry(&other, 2, answer(), Some(&state)))
            .await;
        assert_rejected(&reply);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_state_replayed_with_other_arguments_is_rejected() {
    let server = Server::start().await;
    let (first, state) = first_round(&server, LAB, json!({"topic": "x", "n": 1})).await;
    for arguments in [
        json!({"topic": "y", "n": 1}),
        json!({"topic": "x", "n": 2}),
        json!({"topic": "x"}),
        json!({}),
    ] {
        let mut other = retry(&first, 2, answer(), Some(&state));
        other["params"]["arguments"] = arguments;
        assert_rejected(&server.send(LAB, &other).await);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_state_replayed_on_another_method_is_rejected() {
    let server = Server::start().await;
    // `ask_form` is both a tool and a prompt, with the same (empty) arguments.
    let (_, tool_state) = first_round(&server, LAB, json!({})).await;
    let prompt = rpc(
        2,
        "prompts/get",
        json!({"name": "ask_form", "arguments": {}, "_meta": crate::support::meta(form_caps())}),
    );
    assert_rejected(
        &server
            .send(LAB, &retry(&prompt, 3, answer(), Some(&tool_state)))
            .await,
    );

    let prompt_state = server.send(LAB, &prompt).await.state();
    let tool = tool_call(4, "ask_form", json!({}), form_caps());
    assert_rejected(
        &server
            .send(LAB, &retry(&tool, 5, answer(), Some(&prompt_state)))
            .await,
    );
    // Each opens where it was issued.
    let done = server
        .send(LAB, &retry(&prompt, 6, answer(), Some(&prompt_state)))
        .await
        .result();
    assert_eq!(done["resultType"], "complete");
    server.stop().await;
}

/// One key ring for every tenant: whatever tenant's ring is asked for, the same ring. With it,
/// a state presented to another tenant opens under the right key, and only the tenant bound
/// in its associated data can refuse it. A wrapped key opens only for the tenant it was
/// wrapped for, so this share holds the master key and wraps the one ring for each asker.
struct OneRingForAll {
    master: MasterKey,
    ring: Mutex<Option<(KeyRing, u64)>>,
}

impl OneRingForAll {
    fn new(master: &MasterKey) -> OneRingForAll {
        OneRingForAll {
            master: master.clone(),
            ring: Mutex::new(None),
        }
    }
}

#[async_trait::async_trait]
impl KeyShare for OneRingForAll {
    async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
        let held = self.ring.lock().expect("the ring").clone();
        held.map(|(ring, version)| {
            Ok(Stored {
                ring: WrappedRing::wrap(tenant, &ring, &self.master)
                    .map_err(|e| ShareError::Malformed(Box::new(e)))?,
                version: Version(version),
            })
        })
        .transpose()
    }

    async fn store(
        &self,
        tenant: &str,
        ring: &WrappedRing,
        expected: Option<Version>,
    ) -> Result<Version, ShareError> {
        let ring = ring
            .unwrap(tenant, &self.master)
            .map_err(|e| ShareError::Malformed(Box::new(e)))?;
        let mut held = self.ring.lock().expect("the ring");
        if held.as_ref().map(|(_, v)| Version(*v)) != expected {
            return Err(ShareError::Conflict);
        }
        let version = held.as_ref().map_or(1, |(_, v)| v + 1);
        *held = Some((ring, version));
        Ok(Version(version))
    }
}

#[actix_web::test]
async fn a_state_replayed_on_another_tenant_is_rejected_even_under_the_same_key() {
    let master = MasterKey::generate();
    let share = Arc::new(OneRingForAll::new(&master));
    let server = Server::start_sharing(share, master, |_| {}).await;
    let (first, state) = first_round(&server, LAB, json!({})).await;
    let reply = server
        .send(LAB2, &retry(&first, 2, answer(), Some(&state)))
        .await;
    assert_rejected(&reply);
    // The same state opens where it was issued: the key was right, the tenant was not.
    let done = server
        .send(LAB, &retry(&first, 3, answer(), Some(&state)))
        .await
        .result();
    assert_eq!(done["resultType"], "complete");
    server.stop().await;
}

#[actix_web::test]
async fn a_state_sealed_by_one_process_opens_on_another_that_shares_its_key_rings() {
    let fleet = LocalKeyShare::new();
    let master = MasterKey::generate();
    let one = Server::start_sharing(Arc::new(fleet.clone()), master.clone(), |_| {}).await;
    let other = Server::start_sharing(Arc::new(fleet), master, |_| {}).await;
    let (first, state) = first_round(&one, LAB, json!({})).await;
    let done = other
        .send(LAB, &retry(&first, 2, answer(), Some(&state)))
        .await
        .result();
    assert_eq!(done["resultType"], "complete");
    one.stop().await;
    other.stop().await;
}

#[actix_web::test]
async fn a_state_under_a_key_rotated_on_another_process_opens_before_any_refresh_there() {
    let fleet = LocalKeyShare::new();
    let master = MasterKey::generate();
    let one = Server::start_sharing(Arc::new(fleet.clone()), master.clone(), |_| {}).await;
    let other = Server::start_sharing(Arc::new(fleet), master, |_| {}).await;
    // `other` holds the ring from before the rotation: a shared store announces nothing, and
    // its periodic refresh is 30 s away.
    let rotated = one
        .admin(
            actix_web::http::Method::POST,
            "/tenants/lab/state-keys/rotate",
        )
        .send_unchecked()
        .await
        .problem_or_json()["kid"]
        .as_str()
        .expect("the new kid")
        .to_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let (first, state) = loop {
        let (first, state) = first_round(&one, LAB, json!({})).await;
        if kid_of(&state) == Some(rotated.as_str()) {
            break (first, state);
        }
        assert!(
            std::time::Instant::now() < deadline,
            "one never sealed under {rotated}"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    };
    let done = other
        .send(LAB, &retry(&first, 2, answer(), Some(&state)))
        .await
        .result();
    assert_eq!(done["resultType"], "complete");
    one.stop().await;
    other.stop().await;
}

#[actix_web::test]
async fn a_state_sealed_by_one_process_does_not_open_on_one_with_key_rings_of_its_own() {
    let one = Server::start().await;
    let other = Server::start().await;
    let (first, state) = first_round(&one, LAB, json!({})).await;
    assert_rejected(
        &other
            .send(LAB, &retry(&first, 2, answer(), Some(&state)))
            .await,
    );
    one.stop().await;
    other.stop().await;
}

#[actix_web::test]
async fn a_state_presented_by_another_principal_of_the_tenant_is_rejected() {
    let server = Server::start().await;
    let first = tool_call(1, "greet", json!({}), form_caps());
    let state = server.send_demo(&first).await.state();
    let again = retry(
        &first,
        2,
        json!({"user_name": accept(json!({"name": "Ada"}))}),
        Some(&state),
    );
    assert_rejected(&server.post(DEMO, &again).bearer(BOB).send().await);
    let done = server
        .post(DEMO, &again)
        .bearer(ALICE)
        .send()
        .await
        .result();
    assert_eq!(done["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}

#[actix_web::test]
async fn an_expired_state_is_rejected() {
    let server = Server::start_with(|c| {
        c.state.ttl_secs = 1;
        c.state.clock_skew_secs = 0;
    })
    .await;
    let (first, fresh) = first_round(&server, LAB, json!({})).await;
    let done = server
        .send(LAB, &retry(&first, 2, answer(), Some(&fresh)))
        .await
        .result();
    assert_eq!(done["resultType"], "complete", "a fresh state opens");

    let (first, state) = first_round(&server, LAB, json!({})).await;
    // Sleeping past the expiry is the point of the test, not a timing assertion.
    tokio::time::sleep(Duration::from_millis(2200)).await;
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 3, answer(), Some(&state)))
            .await,
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_state_naming_an_unknown_key_is_rejected() {
    let server = Server::start().await;
    let (first, state) = first_round(&server, LAB, json!({})).await;
    let parts: Vec<&str> = state.splitn(3, '.').collect();
    assert_eq!(parts.len(), 3, "v2.<kid>.<blob>: {state}");
    for kid in ["AAAAAAAAAAA", "unknown-kid", "x"] {
        assert_ne!(kid, parts[1]);
        let forged = format!("{}.{kid}.{}", parts[0], parts[2]);
        assert_rejected(
            &server
                .send(LAB, &retry(&first, 2, answer(), Some(&forged)))
                .await,
        );
    }
    let other_version = format!("v1.{}.{}", parts[1], parts[2]);
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 3, answer(), Some(&other_version)))
            .await,
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_state_longer_than_max_token_bytes_is_rejected() {
    let server = Server::start_with(|c| {
        c.state.max_token_bytes = 4096;
        c.state.max_state_bytes = 2048;
    })
    .await;
    let (first, state) = first_round(&server, LAB, json!({})).await;
    let oversize = format!("{state}{}", "A".repeat(4097 - state.len()));
    assert_eq!(oversize.len(), 4097);
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 2, answer(), Some(&oversize)))
            .await,
    );
    let huge = "A".repeat(200_000);
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 3, answer(), Some(&huge)))
            .await,
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_state_that_is_not_a_string_is_rejected() {
    let server = Server::start().await;
    let (first, _) = first_round(&server, LAB, json!({})).await;
    for state in [json!(7), json!({"round": 1}), json!(["v1"]), json!(true)] {
        let mut other = retry(&first, 2, answer(), None);
        other["params"]["requestState"] = state;
        assert_rejected(&server.send(LAB, &other).await);
    }
    server.stop().await;
}

#[actix_web::test]
async fn an_empty_state_is_rejected() {
    let server = Server::start().await;
    let (first, _) = first_round(&server, LAB, json!({})).await;
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 2, answer(), Some("")))
            .await,
    );
    server.stop().await;
}

#[actix_web::test]
async fn the_same_arguments_with_keys_in_another_order_open_the_state() {
    let server = Server::start().await;
    let first_args = r#"{"b":{"y":2,"x":[1,{"d":1,"c":2}]},"a":"é","n":1}"#;
    let retry_args = r#"{"n":1,"a":"\u00e9","b":{"x":[1,{"c":2,"d":1}],"y":2}}"#;
    let caps = r#"{"elicitation":{}}"#;
    let meta = format!(
        r#"{{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{caps}}}"#
    );
    let first = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"ask_form","arguments":{first_args},"_meta":{meta}}}}}"#
    );
    let state = server.raw(LAB, first.clone()).send().await.state();
    let again = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{{"_meta":{meta},"requestState":"{state}","inputResponses":{{"form":{{"action":"accept","content":{{"name":"Ada"}}}}}},"arguments":{retry_args},"name":"ask_form"}}}}"#
    );
    let result = server.raw(LAB, again).send().await.result();
    assert_eq!(result["resultType"], "complete");
    server.stop().await;
}

#[actix_web::test]
async fn absent_null_and_empty_arguments_are_interchangeable() {
    let server = Server::start().await;
    let variants = [None, Some(Value::Null), Some(json!({}))];
    let mut id = 0;
    for first_args in &variants {
        for retry_args in &variants {
            id += 2;
            let mut first = tool_call(id, "ask_form", json!({}), form_caps());
            set_arguments(&mut first, first_args);
            let state = server.send(LAB, &first).await.state();
            let mut again = retry(&first, id + 1, answer(), Some(&state));
            set_arguments(&mut again, retry_args);
            let reply = server.send(LAB, &again).await;
            assert_eq!(
                reply.result()["resultType"],
                "complete",
                "{first_args:?} then {retry_args:?}"
            );
        }
    }
    server.stop().await;
}

fn set_arguments(request: &mut Value, arguments: &Option<Value>) {
    let params = request["params"].as_object_mut().expect("params");
    match arguments {
        None => {
            params.remove("arguments");
        }
        Some(a) => {
            params.insert("arguments".into(), a.clone());
        }
    }
}

#[actix_web::test]
async fn a_tenant_created_after_start_gets_its_key_ring_on_its_first_sealed_request() {
    let server = Server::start().await;
    server
        .add_tenant("late", lab::catalog(&lab::Probe::default()))
        .await;
    let (first, state) = first_round(&server, "late", json!({})).await;
    assert!(state.starts_with("v2."), "{state}");
    let result = server
        .send("late", &retry(&first, 2, answer(), Some(&state)))
        .await
        .result();
    assert_eq!(result["resultType"], "complete");
    // A ring of its own: its states do not open on another tenant.
    assert_rejected(
        &server
            .send(LAB, &retry(&first, 3, answer(), Some(&state)))
            .await,
    );
    server.stop().await;
}
