//! requestState keys kept by `roundtrip serve` in its tenant store, wrapped under the master
//! key: a restart keeps states in flight openable, and a master key that does not open the
//! stored keys, or is not a master key, stops `serve` at start-up with a message naming
//! `ROUNDTRIP_MASTER_KEY` and no secret.

use std::path::Path;

use roundtrip_runtime::sealing::MasterKey;
use serde_json::{json, Value};

use crate::support::serve_process::command;
use crate::support::{accept, retry, scratch_dir, tool_call, Serve};

/// The first round of `greet`: the call and the sealed state it was answered with.
async fn greet_first_round(serve: &Serve, key: &str) -> (Value, String) {
    let first = tool_call(1, "greet", json!({}), json!({"elicitation": {}}));
    let reply = serve.call_demo(key, &first).await;
    assert_eq!(reply["result"]["resultType"], "input_required", "{reply}");
    let state = reply["result"]["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();
    (first, state)
}

/// `serve` on `dir` run to its end with `master_key`: its exit code and what it printed on
/// stderr.
fn failed_start(dir: &Path, master_key: &str) -> (Option<i32>, String) {
    let output = command(dir)
        .env("ROUNDTRIP_MASTER_KEY", master_key)
        .output()
        .expect("roundtrip serve runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[actix_web::test]
async fn a_state_sealed_before_a_restart_opens_after_it() {
    let dir = scratch_dir();
    let serve = Serve::start(&dir);
    let key = serve
        .demo_key()
        .expect("the first start shows the demo key");
    let (first, state) = greet_first_round(&serve, &key).await;
    serve.stop();

    let serve = Serve::start(&dir);
    let answers = json!({"user_name": accept(json!({"name": "Ada"}))});
    let done = serve
        .call_demo(&key, &retry(&first, 2, answers, Some(&state)))
        .await;
    assert_eq!(done["result"]["resultType"], "complete", "{done}");
    assert_eq!(done["result"]["content"][0]["text"], "Hello, Ada!");
    serve.stop();
}

#[test]
fn without_a_master_key_serve_keeps_one_in_the_data_dir_readable_by_its_owner_only() {
    let dir = scratch_dir();
    Serve::start(&dir).stop();
    let text = std::fs::read_to_string(dir.join("master.key")).expect("the master key file");
    MasterKey::from_base64(&text).expect("a master key");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.join("master.key"))
            .expect("the master key file")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

#[test]
fn serve_refuses_to_start_under_a_master_key_that_does_not_open_the_stored_keys() {
    let dir = scratch_dir();
    Serve::start(&dir).stop();
    let wrong = MasterKey::generate().to_base64();
    let (code, stderr) = failed_start(&dir, &wrong);
    assert_eq!(code, Some(1), "{stderr}");
    assert!(stderr.contains("ROUNDTRIP_MASTER_KEY"), "{stderr}");
    assert!(!stderr.contains(wrong.trim_end_matches('=')), "{stderr}");
    let stored = std::fs::read_to_string(dir.join("master.key")).expect("the key file");
    assert!(
        !stderr.contains(stored.trim().trim_end_matches('=')),
        "{stderr}"
    );
}

#[test]
fn serve_refuses_a_master_key_that_is_not_32_bytes_of_base64() {
    let dir = scratch_dir();
    for bad in ["not-base64-at-all!", "c2hvcnQ="] {
        let (code, stderr) = failed_start(&dir, bad);
        assert_eq!(code, Some(2), "{stderr}");
        assert!(stderr.contains("ROUNDTRIP_MASTER_KEY"), "{stderr}");
        assert!(!stderr.contains(bad), "{stderr}");
    }
}
