//! The binary over its store, as an operator runs it: `serve` seeds `demo` and `conformance`
//! on first start and shows the demo key once; what is stored survives a restart; `roundtrip
//! tenant` and `roundtrip key` change the store, and a running server follows within a second.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::{scratch_dir, Serve};

/// `roundtrip ARGS... --json` on the store in `dir`: its JSON output.
fn cli(dir: &Path, args: &[&str]) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(args)
        .arg("--json")
        .env("ROUNDTRIP_DATA_DIR", dir)
        .env("ROUNDTRIP_LOG", "warn")
        .output()
        .expect("roundtrip runs");
    assert!(
        output.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e})"))
}

/// The HTTP status of an echo call on `tenant` with `key`, from a blocking client.
fn echo_status(serve: &Serve, tenant: &str, key: &str) -> u16 {
    let output = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args([
            "call",
            &format!("{}/t/{tenant}/mcp", serve.url),
            "echo",
            "--args",
            r#"{"text":"hi"}"#,
            "--era",
            "modern",
            "--bearer",
            key,
        ])
        .stdin(Stdio::null())
        .output()
        .expect("roundtrip call runs");
    if output.status.success() {
        200
    } else if String::from_utf8_lossy(&output.stderr).contains("HTTP 401") {
        401
    } else if String::from_utf8_lossy(&output.stderr).contains("HTTP 403") {
        403
    } else {
        0
    }
}

#[test]
fn the_first_start_seeds_the_tenants_and_shows_the_demo_key_once() {
    let dir = scratch_dir();
    let first = Serve::start(&dir);
    let key = first
        .demo_key()
        .expect("a generated demo key on first start");
    assert_eq!(echo_status(&first, "demo", &key), 200);
    first.stop();

    let again = Serve::start(&dir);
    assert_eq!(
        again.demo_key(),
        None,
        "the key is shown once: {:?}",
        again.banner
    );
    assert_eq!(
        echo_status(&again, "demo", &key),
        200,
        "the key survives a restart"
    );
    again.stop();
}

#[test]
fn tenants_and_keys_made_with_the_cli_survive_and_a_running_server_follows_them() {
    let dir = scratch_dir();
    let tenant = cli(
        &dir,
        &[
            "tenant",
            "create",
            "acme",
            "--catalog",
            "examples",
            "--name",
            "Acme",
        ],
    );
    assert_eq!(tenant["slug"], "acme");
    assert_eq!(tenant["auth"], "api_key");
    let key = cli(&dir, &["key", "create", "acme"]);
    let secret = key["secret"].as_str().expect("the secret, once").to_owned();
    let id = key["id"].as_str().expect("an id").to_owned();

    let serve = Serve::start(&dir);
    assert_eq!(echo_status(&serve, "acme", &secret), 200);

    let listed = cli(&dir, &["key", "list", "acme"]);
    assert!(!listed.to_string().contains(&secret), "no secret in a list");
    cli(&dir, &["key", "revoke", "acme", &id]);
    let start = Instant::now();
    while echo_status(&serve, "acme", &secret) != 401 {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "still served a second after the revocation"
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let fresh = cli(&dir, &["key", "create", "acme"]);
    let fresh = fresh["secret"].as_str().expect("a secret").to_owned();
    cli(&dir, &["tenant", "suspend", "acme"]);
    let start = Instant::now();
    while echo_status(&serve, "acme", &fresh) != 403 {
        assert!(
            start.elapsed() < Duration::from_secs(1),
            "still served a second after the suspension"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    serve.stop();
    let shown = cli(&dir, &["tenant", "show", "acme"]);
    assert_eq!(shown["status"], "suspended", "the suspension survives");
    let resumed = cli(&dir, &["tenant", "resume", "acme"]);
    assert_eq!(resumed["status"], "active");
    cli(&dir, &["tenant", "delete", "acme"]);
    let listed = cli(&dir, &["tenant", "list"]);
    assert!(
        !listed.to_string().contains("\"acme\""),
        "deleted: {listed}"
    );
}

#[test]
fn the_cli_refuses_what_the_api_refuses() {
    let dir = scratch_dir();
    let output = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(["tenant", "create", "acme", "--catalog", "nosuch"])
        .env("ROUNDTRIP_DATA_DIR", &dir)
        .output()
        .expect("roundtrip runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("unknown catalog \"nosuch\""));
    let output = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args(["tenant", "create", "Not A Slug", "--catalog", "examples"])
        .env("ROUNDTRIP_DATA_DIR", &dir)
        .output()
        .expect("roundtrip runs");
    assert_eq!(output.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&output.stderr).contains("invalid tenant slug"));
}

#[test]
fn migrate_creates_the_store() {
    let dir = scratch_dir();
    let output = Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .arg("migrate")
        .env("ROUNDTRIP_DATA_DIR", &dir)
        .output()
        .expect("roundtrip runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(dir.join("roundtrip.db").exists());
}
