//! `roundtrip bench`: one driver run against a URL, its summary on stdout, its report as JSON
//! with `--out`. Exits 1 when any response failed its checks (the report is written first).
//! `--mode soak` runs the soak driver instead (`bench::soak`), after calibrating its rate if
//! asked; it exits 1 on any unexpected answer.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use serde::Serialize;

use crate::bench::soak::{self, SoakConfig};
use crate::bench::{self, BenchConfig, Mode, ResultTypeCheck};
use crate::cli::BenchArgs;

/// The soak's calibration run: echo at full speed for this long, after a second of warm-up.
const CALIBRATION: Duration = Duration::from_secs(5);

pub fn run(args: &BenchArgs) -> ExitCode {
    if args.mode == Mode::Soak {
        return run_soak(args);
    }
    let config = config(args);
    let report = actix_rt::System::new().block_on(async move { bench::run(&config).await });
    println!("{}", report.summary());
    finish(args.out.as_deref(), &report, report.errors == 0)
}

/// Writes the report with `--out`; success when `clean` and the report was written.
fn finish(out: Option<&Path>, report: &impl Serialize, clean: bool) -> ExitCode {
    if let Some(path) = out {
        let written = serde_json::to_vec_pretty(report)
            .map_err(std::io::Error::other)
            .and_then(|json| std::fs::write(path, json));
        if let Err(e) = written {
            eprintln!("roundtrip bench: writing {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
    }
    if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_soak(args: &BenchArgs) -> ExitCode {
    if args.rate.is_none() && !args.calibrate {
        eprintln!("roundtrip bench: --mode soak needs --rate N or --calibrate");
        return ExitCode::from(2);
    }
    if args.rate.is_some_and(|r| !(r.is_finite() && r > 0.0)) || args.interval.is_zero() {
        eprintln!("roundtrip bench: --rate and --interval must be above 0");
        return ExitCode::from(2);
    }
    let report = actix_rt::System::new().block_on(async move {
        let mut config = soak_config(args);
        if args.calibrate {
            let mut calibration = self::config(args);
            calibration.mode = Mode::Call;
            calibration.warmup = Duration::from_secs(1);
            calibration.duration = CALIBRATION;
            let peak = bench::run(&calibration).await;
            println!("calibration: {}", peak.summary());
            config.calibrated_peak = Some(peak.requests_per_sec);
            config.rate = peak.requests_per_sec / 2.0;
        }
        if config.rate <= 0.0 {
            return None;
        }
        Some(soak::run(&config).await)
    });
    let Some(report) = report else {
        eprintln!("roundtrip bench: calibration measured no throughput; is the URL right?");
        return ExitCode::FAILURE;
    };
    println!("{}", report.summary());
    finish(args.out.as_deref(), &report, report.unexpected_errors == 0)
}

/// The driver's run as the command line describes it (its defaults are the CLI's).
pub fn config(args: &BenchArgs) -> BenchConfig {
    BenchConfig {
        url: args.url.clone(),
        mode: args.mode,
        connections: args.connections,
        duration: args.duration.unwrap_or(Duration::from_secs(10)),
        warmup: args.warmup.unwrap_or(Duration::from_secs(1)),
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

/// The soak as the command line describes it (the rate is 0 until calibrated).
pub fn soak_config(args: &BenchArgs) -> SoakConfig {
    SoakConfig {
        url: args.url.clone(),
        connections: args.connections,
        rate: args.rate.unwrap_or(0.0),
        calibrated_peak: None,
        duration: args.duration.unwrap_or(Duration::from_secs(600)),
        warmup: args.warmup.unwrap_or(Duration::from_secs(60)),
        interval: args.interval,
        api_key: args.key.clone(),
        text: args.text.clone(),
        server_pid: args.server_pid,
        timeout: args.timeout,
    }
}
