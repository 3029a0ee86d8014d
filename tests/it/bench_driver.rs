//! The load driver's smoke run (CI): about a second per mode against the in-process server,
//! correctness only. Every response the driver checks (status, id, resultType, content text,
//! the sealed state of round 1, the greeting of round 2) must pass; no timing is asserted.

use std::time::Duration;

use clap::Parser;
use roundtrip::bench::{self, soak, BenchConfig, Mode};
use roundtrip::cli::{BenchArgs, Cli, Command};

use crate::support::{Server, ALICE, DEMO};

/// The bench command's arguments for `url` and `extra`.
fn args(url: &str, extra: &[&str]) -> BenchArgs {
    let head = ["roundtrip", "bench", "--url", url];
    let cli = Cli::try_parse_from(head.iter().chain(extra)).expect("valid bench arguments");
    let Command::Bench(args) = cli.command else {
        panic!("not the bench command")
    };
    args
}

/// A run of `mode` against `url` with the command line's defaults.
fn config(url: &str, mode: Mode) -> BenchConfig {
    roundtrip::commands::bench::config(&args(url, &["--mode", mode.as_str()]))
}

/// A short soak of `url` at 200 requests/s: 2 s of warm-up, 6 s measured, 2 s intervals.
fn soak_args(url: &str) -> BenchArgs {
    let soak = [
        "--mode",
        "soak",
        "--duration",
        "6s",
        "--warmup",
        "2s",
        "--interval",
        "2s",
        "--rate",
        "200",
    ];
    args(url, &soak)
}

async fn smoke(mode: Mode) -> bench::Report {
    let server = Server::start().await;
    let mut config = config(&server.url(DEMO), mode);
    config.connections = 4;
    config.warmup = Duration::from_millis(100);
    config.duration = Duration::from_millis(900);
    config.api_key = Some(ALICE.to_owned());
    config.server_pid = Some(std::process::id());
    let report = bench::run(&config).await;
    server.stop().await;
    assert_eq!(report.errors, 0, "{}", report.summary());
    assert!(report.requests > 0, "{}", report.summary());
    assert!(report.latency.is_some(), "{}", report.summary());
    report
}

#[actix_rt::test]
async fn call_mode_runs_clean_tools_calls() {
    let report = smoke(Mode::Call).await;
    assert!(report.calls > 0, "{}", report.summary());
    assert_eq!(report.flows, 0);
}

#[actix_rt::test]
async fn mrtr_mode_completes_sealed_two_round_flows() {
    let report = smoke(Mode::Mrtr).await;
    assert!(report.flows > 0, "{}", report.summary());
    assert_eq!(report.calls, 0);
    assert!(report.flow_latency.is_some());
}

#[actix_rt::test]
async fn mix_mode_does_both() {
    let report = smoke(Mode::Mix).await;
    assert!(report.calls > 0 && report.flows > 0, "{}", report.summary());
    let memory = report.server_memory.expect("the server's memory");
    assert!(memory.rss_after_kb.is_some_and(|kb| kb > 0));
}

#[actix_rt::test]
async fn a_wrong_key_is_counted_as_errors_not_a_panic() {
    let server = Server::start().await;
    let mut config = config(&server.url(DEMO), Mode::Call);
    config.connections = 2;
    config.warmup = Duration::ZERO;
    config.duration = Duration::from_millis(200);
    config.api_key = Some("not-a-key".to_owned());
    let report = bench::run(&config).await;
    server.stop().await;
    assert_eq!(report.requests, 0);
    assert!(report.errors > 0);
    assert!(report.errors_by_kind.contains_key("status"), "{report:?}");
}

#[actix_rt::test]
async fn legacy_mode_completes_shim_flows_on_sessions() {
    let report = smoke(Mode::Legacy).await;
    assert!(report.flows > 0, "{}", report.summary());
    assert!(report.flow_latency.is_some());
    assert_eq!(report.calls, 0);
}

#[actix_rt::test]
async fn a_short_soak_sends_every_kind_of_traffic_and_reports_no_unexpected_answer() {
    let server = Server::start().await;
    let args = soak_args(&server.url(DEMO));
    let mut config = roundtrip::commands::bench::soak_config(&args);
    config.api_key = Some(ALICE.to_owned());
    config.server_pid = Some(std::process::id());
    let report = soak::run(&config).await;
    server.stop().await;
    let summary = report.summary();
    assert_eq!(report.unexpected_errors, 0, "{summary}");
    assert!(report.total_requests > 500, "{summary}");
    assert!(report.expected_errors > 0, "{summary}");
    for kind in [
        "echo",
        "flow",
        "legacy",
        "listen",
        "hostile_malformed_json",
        "hostile_tampered_state",
        "hostile_unknown_tenant",
        "hostile_oversized_body",
    ] {
        assert!(
            report.traffic.get(kind).is_some_and(|n| *n > 0),
            "no {kind}: {summary}"
        );
    }
    let json = serde_json::to_value(&report).expect("the report serialises");
    assert_eq!(json["mode"], "soak");
    assert_eq!(
        json["intervals"].as_array().map(Vec::len),
        Some(4),
        "{json}"
    );
    assert_eq!(json["intervals"][0]["warmup"], true);
    assert_eq!(json["intervals"][1]["warmup"], false);
    assert_eq!(json["p99_over_time"].as_array().map(Vec::len), Some(4));
    assert_eq!(json["rss_over_time"].as_array().map(Vec::len), Some(4));
    assert!(json["p99_ms"].as_f64().is_some_and(|ms| ms > 0.0), "{json}");
    let rss = &json["rss_after_warmup"];
    assert!(rss["first_kb"].as_u64().is_some_and(|kb| kb > 0), "{json}");
    assert!(rss["within_10pct"].is_boolean(), "{json}");
}

#[actix_rt::test]
async fn a_soak_counts_answers_that_fail_their_checks_as_unexpected() {
    let server = Server::start().await;
    let mut config = roundtrip::commands::bench::soak_config(&soak_args(&server.url(DEMO)));
    config.api_key = Some("not-a-key".to_owned());
    config.duration = Duration::from_millis(500);
    config.warmup = Duration::ZERO;
    let report = soak::run(&config).await;
    server.stop().await;
    assert!(report.unexpected_errors > 0, "{}", report.summary());
    assert!(report.unexpected_by_kind.contains_key("echo"), "{report:?}");
    assert!(report.first_unexpected.is_some());
}

#[actix_rt::test]
async fn the_soak_command_writes_its_report_and_exits_1_on_unexpected_answers() {
    let server = Server::start().await;
    let out = crate::support::scratch_dir().join("soak.json");
    let status = tokio::process::Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args([
            "bench",
            "--mode",
            "soak",
            "--rate",
            "50",
            "--duration",
            "1s",
        ])
        .args(["--warmup", "0s", "--interval", "1s", "--key", "not-a-key"])
        .arg("--url")
        .arg(server.url(DEMO))
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::null())
        .status()
        .await
        .expect("the command runs");
    server.stop().await;
    assert_eq!(status.code(), Some(1));
    let report: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&out).expect("the report is written")).expect("JSON");
    assert!(
        report["unexpected_errors"].as_u64().is_some_and(|n| n > 0),
        "{report}"
    );
}

#[test]
fn a_soak_without_a_rate_or_calibration_is_refused() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_roundtrip"))
        .args([
            "bench",
            "--mode",
            "soak",
            "--url",
            "http://127.0.0.1:1/t/demo/mcp",
        ])
        .output()
        .expect("the command runs");
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("--rate N or --calibrate"), "{stderr}");
}
