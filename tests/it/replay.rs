//! Replay of sealed state: a tool that opts in to single-use states (`notes_delete`) refuses
//! a state that already completed a call; other tools' states open as often as they are
//! presented until they expire; the record of used states is bounded.

use roundtrip_runtime::sealing::REPLAY_ENTRY_BYTES;
use serde_json::{json, Value};

use crate::support::{accept, retry, tool_call, Reply, Server};

fn form_caps() -> Value {
    json!({"elicitation": {}})
}

async fn write_note(server: &Server, name: &str) {
    let write = tool_call(
        0,
        "notes_write",
        json!({"name": name, "text": "t"}),
        json!({}),
    );
    server.send_demo(&write).await.result();
}

async fn note_names(server: &Server) -> Vec<String> {
    let list = tool_call(0, "notes_list", json!({}), json!({}));
    let result = server.send_demo(&list).await.result();
    serde_json::from_value(result["structuredContent"]["names"].clone()).expect("names")
}

/// `notes_delete` of `name` taken to its last round: the request, and the state its last
/// round is sent with.
async fn to_last_round(server: &Server, name: &str) -> (Value, String) {
    let delete = tool_call(1, "notes_delete", json!({"name": name}), form_caps());
    let s1 = server.send_demo(&delete).await.state();
    let confirm = json!({"confirm": accept(json!({"confirm": true, "reason": "old"}))});
    let s2 = server
        .send_demo(&retry(&delete, 2, confirm, Some(&s1)))
        .await
        .state();
    (delete, s2)
}

/// The last round of `delete`: retype `name` under state `s2`.
async fn last_round(server: &Server, delete: &Value, name: &str, s2: &str) -> Reply {
    let retype = json!({"retype": accept(json!({"name": name}))});
    server.send_demo(&retry(delete, 3, retype, Some(s2))).await
}

#[actix_web::test]
async fn replaying_notes_deletes_last_round_is_refused_and_spares_a_re_created_note() {
    let server = Server::start().await;
    write_note(&server, "n1").await;
    let (delete, s2) = to_last_round(&server, "n1").await;
    let done = last_round(&server, &delete, "n1", &s2).await.result();
    assert_eq!(done["content"][0]["text"], "Deleted note 'n1'. Reason: old");

    write_note(&server, "n1").await;
    let replay = last_round(&server, &delete, "n1", &s2).await;
    let error = replay.error(-32602, 400);
    assert!(
        error["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("requestState already used")),
        "{error}"
    );
    assert_eq!(note_names(&server).await, ["n1"], "the new note is kept");
    server.stop().await;
}

#[actix_web::test]
async fn a_single_use_round_that_asks_again_does_not_use_up_its_state() {
    let server = Server::start().await;
    write_note(&server, "n1").await;
    let delete = tool_call(1, "notes_delete", json!({"name": "n1"}), form_caps());
    let s1 = server.send_demo(&delete).await.state();
    let confirm = json!({"confirm": accept(json!({"confirm": true}))});
    for id in [2, 3] {
        let again = server
            .send_demo(&retry(&delete, id, confirm.clone(), Some(&s1)))
            .await;
        assert!(
            again.result()["inputRequests"].get("retype").is_some(),
            "{again:?}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_completed_round_of_a_tool_without_single_use_state_may_be_replayed() {
    let server = Server::start().await;
    let greet = tool_call(1, "greet", json!({}), form_caps());
    let state = server.send_demo(&greet).await.state();
    let answer = json!({"user_name": accept(json!({"name": "Ada"}))});
    let retried = retry(&greet, 2, answer, Some(&state));
    let first = server.send_demo(&retried).await.result();
    let again = server.send_demo(&retried).await.result();
    assert_eq!(first["resultType"], "complete", "{first}");
    assert_eq!(first["content"], again["content"]);
    server.stop().await;
}

#[actix_web::test]
async fn a_full_replay_record_refuses_single_use_rounds_with_429_until_an_entry_expires() {
    let server = Server::start_with(|c| c.replay.max_bytes = REPLAY_ENTRY_BYTES).await;
    for name in ["n1", "n2"] {
        write_note(&server, name).await;
    }
    let (delete1, s1) = to_last_round(&server, "n1").await;
    last_round(&server, &delete1, "n1", &s1).await.result();

    // The record holds n1's used state: a round that would claim another is refused before
    // its handler runs, rather than n1's entry being forgotten early.
    let delete2 = tool_call(1, "notes_delete", json!({"name": "n2"}), form_caps());
    let s2 = server.send_demo(&delete2).await.state();
    let confirm = json!({"confirm": accept(json!({"confirm": true}))});
    let full = server
        .send_demo(&retry(&delete2, 2, confirm, Some(&s2)))
        .await;
    full.error(-31429, 429);
    assert!(full.header("retry-after").is_some(), "{full:?}");
    let replay = last_round(&server, &delete1, "n1", &s1).await;
    replay.error(-32602, 400);
    assert_eq!(note_names(&server).await, ["n2"]);
    server.stop().await;
}
