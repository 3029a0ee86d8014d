//! The load driver's smoke run (CI): about a second per mode against the in-process server,
//! correctness only. Every response the driver checks (status, id, resultType, content text,
//! the sealed state of round 1, the greeting of round 2) must pass; no timing is asserted.

use std::time::Duration;

use clap::Parser;
use roundtrip::bench::{self, BenchConfig, Mode};
use roundtrip::cli::{Cli, Command};

use crate::support::{Server, ALICE, DEMO};

/// A run of `mode` against `url` with the command line's defaults.
fn config(url: &str, mode: Mode) -> BenchConfig {
    let cli = Cli::try_parse_from(["roundtrip", "bench", "--url", url, "--mode", mode.as_str()])
        .expect("valid bench arguments");
    let Command::Bench(args) = cli.command else {
        panic!("not the bench command")
    };
    roundtrip::commands::bench::config(&args)
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
