//! Multi round-trip requests (SEP-2322) through HTTP: state carried across rounds, answers of
//! every kind reaching handlers, asking again, the methods that may not ask, and the round cap.

use serde_json::{json, Value};

use crate::support::{accept, meta, retry, rpc, tool_call, Server, LAB, SERVER_INFO};

fn form_caps() -> Value {
    json!({"elicitation": {}})
}

async fn note_names(server: &Server, id: u32) -> Vec<String> {
    let result = server
        .send_demo(&tool_call(id, "notes_list", json!({}), json!({})))
        .await
        .result();
    serde_json::from_value(result["structuredContent"]["names"].clone()).expect("names")
}

#[actix_web::test]
async fn a_three_round_flow_carries_handler_state_forward_and_acts_only_in_the_last_round() {
    let server = Server::start().await;
    server
        .send_demo(&tool_call(
            1,
            "notes_write",
            json!({"name": "n1", "text": "hello"}),
            json!({}),
        ))
        .await
        .result();

    let delete = tool_call(2, "notes_delete", json!({"name": "n1"}), form_caps());
    let round1 = server.send_demo(&delete).await;
    let s1 = round1.state();
    assert!(
        round1.result()["inputRequests"].get("confirm").is_some(),
        "{round1:?}"
    );
    assert_eq!(note_names(&server, 3).await, ["n1"]);

    let confirm = json!({"confirm": accept(json!({"confirm": true, "reason": "old"}))});
    let round2 = server
        .send_demo(&retry(&delete, 4, confirm, Some(&s1)))
        .await;
    let s2 = round2.state();
    assert!(
        round2.result()["inputRequests"].get("retype").is_some(),
        "{round2:?}"
    );
    assert_ne!(s1, s2, "the state is re-sealed every round");
    assert_eq!(
        note_names(&server, 5).await,
        ["n1"],
        "nothing happens before the last round"
    );

    // Round 3 carries only round 3's answer: the reason comes back from the state.
    let retype = json!({"retype": accept(json!({"name": "n1"}))});
    let round3 = server
        .send_demo(&retry(&delete, 6, retype, Some(&s2)))
        .await;
    let result = round3.result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        result["content"][0]["text"],
        "Deleted note 'n1'. Reason: old"
    );
    assert!(note_names(&server, 7).await.is_empty());
    server.stop().await;
}

#[actix_web::test]
async fn input_required_from_a_custom_method_is_an_internal_error_and_nothing_else() {
    let server = Server::start().await;
    for method in ["lab/ask", "lab/fake_input_required"] {
        let mut body = rpc("x", method, json!({}));
        body["params"]["_meta"] = meta(json!({"elicitation": {}, "sampling": {}, "roots": {}}));
        let reply = server.send(LAB, &body).await;
        reply.error(-32603, 200);
        let response = reply.json();
        let keys: Vec<&String> = response.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["error", "id", "jsonrpc"], "{reply:?}");
        assert!(
            !reply.body.windows(13).any(|w| w == b"inputRequests"),
            "no input request leaks out: {reply:?}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_declined_elicitation_reaches_the_handler_which_completes_without_asking_again() {
    let server = Server::start().await;
    for action in ["decline", "cancel"] {
        let first = tool_call(1, "greet", json!({}), form_caps());
        let state = server.send_demo(&first).await.state();
        let reply = server
            .send_demo(&retry(
                &first,
                2,
                json!({"user_name": {"action": action}}),
                Some(&state),
            ))
            .await;
        let result = reply.result();
        assert_eq!(result["resultType"], "complete", "{action}: {reply:?}");
        assert_eq!(
            result["content"][0]["text"],
            "No greeting: the user declined to give a name."
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_missing_answer_is_asked_again_rather_than_an_error() {
    let server = Server::start().await;
    let first = tool_call(1, "greet", json!({}), form_caps());
    let state = server.send_demo(&first).await.state();
    for (id, answers) in [
        (2, Value::Null),
        (3, json!({})),
        (4, json!({"other": {"action": "accept"}})),
    ] {
        let reply = server
            .send_demo(&retry(&first, id, answers, Some(&state)))
            .await;
        let result = reply.result();
        assert_eq!(result["resultType"], "input_required", "{reply:?}");
        assert!(
            result["inputRequests"].get("user_name").is_some(),
            "{reply:?}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn unknown_extra_input_response_keys_are_ignored() {
    let server = Server::start().await;
    let first = tool_call(1, "greet", json!({}), form_caps());
    let state = server.send_demo(&first).await.state();
    let answers = json!({
        "user_name": {"action": "accept", "content": {"name": "Ada", "unexpected": true}, "extra": 1},
        "not_asked": {"action": "accept", "content": {"x": 1}},
        "roots": {"roots": []}
    });
    let result = server
        .send_demo(&retry(&first, 2, answers, Some(&state)))
        .await
        .result();
    assert_eq!(result["content"][0]["text"], "Hello, Ada!");
    server.stop().await;
}

#[actix_web::test]
async fn an_input_response_that_is_not_an_object_is_invalid_params() {
    let server = Server::start().await;
    let first = tool_call(1, "greet", json!({}), form_caps());
    let state = server.send_demo(&first).await.state();
    for answers in [
        json!({"user_name": 12345}),
        json!({"user_name": "accept"}),
        json!({"user_name": null}),
        json!({"user_name": [{"action": "accept"}]}),
        json!(null),
        json!([]),
    ] {
        let mut again = retry(&first, 2, Value::Null, Some(&state));
        again["params"]["inputResponses"] = answers;
        server.send_demo(&again).await.error(-32602, 400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn the_round_cap_ends_a_flow_that_never_completes_with_an_internal_error() {
    let server = Server::start_with(|c| c.mcp.max_rounds = 3).await;
    let first = tool_call(1, "ask_forever", json!({}), form_caps());
    let mut state: Option<String> = None;
    for round in 0..3 {
        let reply = server
            .send(
                LAB,
                &retry(
                    &first,
                    round + 10,
                    json!({"again": accept(json!({"name": "x"}))}),
                    state.as_deref(),
                ),
            )
            .await;
        let result = reply.result();
        assert_eq!(
            result["inputRequests"]["again"]["params"]["message"],
            format!("Round {round}: once more?"),
            "{reply:?}"
        );
        state = Some(reply.state());
    }
    let reply = server
        .send(
            LAB,
            &retry(
                &first,
                20,
                json!({"again": accept(json!({"name": "x"}))}),
                state.as_deref(),
            ),
        )
        .await;
    let error = reply.error(-32603, 200);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.contains("limit")),
        "the error names the limit: {reply:?}"
    );
    assert_eq!(error["data"]["maxRounds"], 3, "{reply:?}");
    server.stop().await;
}

#[actix_web::test]
async fn input_required_results_carry_no_caching_hints_on_any_method() {
    let server = Server::start().await;
    let caps = json!({"elicitation": {}, "roots": {}});
    for body in [
        tool_call(1, "ask_form", json!({}), caps.clone()),
        rpc(
            2,
            "prompts/get",
            json!({"name": "ask_form", "_meta": meta(caps.clone())}),
        ),
        rpc(
            3,
            "resources/read",
            json!({"uri": "lab://roots", "_meta": meta(caps.clone())}),
        ),
    ] {
        let result = server.send(LAB, &body).await.result();
        assert_eq!(result["resultType"], "input_required");
        assert!(result.get("ttlMs").is_none() && result.get("cacheScope").is_none());
    }
    server.stop().await;
}

#[actix_web::test]
async fn an_input_required_result_names_the_tenants_server_in_meta() {
    let server = Server::start().await;
    let body = tool_call(1, "ask_form", json!({}), json!({"elicitation": {}}));
    let result = server.send(LAB, &body).await.result();
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(
        result["_meta"][SERVER_INFO],
        json!({"name": "roundtrip-lab", "title": "lab", "version": env!("CARGO_PKG_VERSION")})
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_roots_answer_completes_a_resource_read_with_caching_hints() {
    let server = Server::start().await;
    let first = rpc(
        1,
        "resources/read",
        json!({"uri": "lab://roots", "_meta": meta(json!({"roots": {}}))}),
    );
    let reply = server.send(LAB, &first).await;
    let state = reply.state();
    assert_eq!(
        reply.result()["inputRequests"]["roots"]["method"],
        "roots/list"
    );
    let roots = json!({"roots": {"roots": [{"uri": "file:///work", "name": "work"}]}});
    let result = server
        .send(LAB, &retry(&first, 2, roots, Some(&state)))
        .await
        .result();
    assert_eq!(result["resultType"], "complete");
    assert!(result["contents"][0]["text"]
        .as_str()
        .is_some_and(|t| t.contains("file:///work")));
    assert!(
        result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
        "{result}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_sampling_answer_reaches_the_handler() {
    let server = Server::start().await;
    server
        .send_demo(&tool_call(
            1,
            "notes_write",
            json!({"name": "n", "text": "A long note."}),
            json!({}),
        ))
        .await
        .result();
    let first = tool_call(
        2,
        "notes_summarize",
        json!({"name": "n"}),
        json!({"sampling": {}}),
    );
    let reply = server.send_demo(&first).await;
    let state = reply.state();
    assert_eq!(
        reply.result()["inputRequests"]["summary"]["method"],
        "sampling/createMessage"
    );
    let sampled = json!({"summary": {"role": "assistant", "content": {"type": "text", "text": "Short."}, "model": "m"}});
    let result = server
        .send_demo(&retry(&first, 3, sampled, Some(&state)))
        .await
        .result();
    assert_eq!(result["content"][0]["text"], "Summary of 'n': Short.");
    server.stop().await;
}

#[actix_web::test]
async fn every_input_kind_is_embedded_as_a_bare_method_and_params() {
    let server = Server::start().await;
    let caps = json!({"elicitation": {"form": {}, "url": {}}, "sampling": {}, "roots": {}});
    let first = tool_call(1, "ask_several", json!({}), caps);
    let reply = server.send(LAB, &first).await;
    let requests = reply.result()["inputRequests"].clone();
    assert_eq!(requests["form"]["method"], "elicitation/create");
    assert_eq!(requests["login"]["params"]["mode"], "url");
    assert!(requests["login"]["params"].get("elicitationId").is_none());
    assert_eq!(requests["llm"]["method"], "sampling/createMessage");
    assert_eq!(requests["roots"]["method"], "roots/list");

    let answers = json!({
        "form": accept(json!({"name": "Ada"})),
        "login": {"action": "accept"},
        "llm": {"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"},
        "roots": {"roots": []}
    });
    let result = server
        .send(LAB, &retry(&first, 2, answers, Some(&reply.state())))
        .await
        .result();
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["structuredContent"]["round"], 1);
    server.stop().await;
}
