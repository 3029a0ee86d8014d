//! `roundtrip bench`: one driver run against a URL, its summary on stdout, its report as JSON
//! with `--out`. Exits 1 when any response failed its checks (the report is written first).

use std::process::ExitCode;

use crate::bench::{self, BenchConfig, ResultTypeCheck};
use crate::cli::BenchArgs;

pub fn run(args: &BenchArgs) -> ExitCode {
    let config = config(args);
    let report = actix_rt::System::new().block_on(async move { bench::run(&config).await });
    println!("{}", report.summary());
    if let Some(path) = &args.out {
        let written = serde_json::to_vec_pretty(&report)
            .map_err(std::io::Error::other)
            .and_then(|json| std::fs::write(path, json));
        if let Err(e) = written {
            eprintln!("roundtrip bench: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if report.errors > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// The driver's run as the command line describes it (its defaults are the CLI's).
pub fn config(args: &BenchArgs) -> BenchConfig {
    BenchConfig {
        url: args.url.clone(),
        mode: args.mode,
        connections: args.connections,
        duration: args.duration,
        warmup: args.warmup,
        api_key: args.key.clone(),
        text: args.text.clone(),
        result_type: if args.lenient_result_type {
            ResultTypeCheck::IfPresent
        } else {
            ResultTypeCheck::Required
        },
        server_pid: args.server_pid,
        timeout: args.timeout,
        hold: args.hold,
    }
}
