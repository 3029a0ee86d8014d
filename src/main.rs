//! `roundtrip`: parse the command line, run the command, map failure to an exit code
//! (2 for a configuration error, 1 for anything else).

use clap::Parser;

use roundtrip::cli::{Cli, Command};
use roundtrip::commands;
use roundtrip::config::Config;
use roundtrip::telemetry::{Telemetry, TelemetrySettings};

/// Every request allocates (parsed JSON, the result map, header values): under load glibc's
/// malloc and free took a fifth of the server's CPU, mimalloc a fraction of that (called as
/// `roundtrip-allocator` explains). The library leaves the choice to the binary that embeds it.
#[global_allocator]
static ALLOCATOR: roundtrip_allocator::Mimalloc = roundtrip_allocator::Mimalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let outcome = match &cli.command {
        // A client of some server: no server configuration, no logging set-up.
        Command::Bench(args) => return commands::bench::run(args),
        Command::Call(args) => return commands::call::call(args),
        Command::Prompt(args) => return commands::call::prompt(args),
        Command::Read(args) => return commands::call::read(args),
        Command::ConformanceClient(args) => return commands::conformance_client::run(args),
        Command::Serve(args) => run(&cli, |c| Ok(c.with_serve_args(args)?), commands::serve::run),
        Command::Migrate => run(&cli, untraced, |c| block_on(commands::migrate::run(&c))),
        Command::Tenant(args) => run(&cli, untraced, |c| {
            block_on(commands::tenant::tenant(&c, args))
        }),
        Command::Key(args) => run(&cli, untraced, |c| {
            block_on(commands::tenant::key(&c, args))
        }),
        Command::Stdio(args) => run(&cli, validated, |c| commands::stdio::run(c, args)),
    };
    match outcome {
        Err(e) => {
            eprintln!("roundtrip: configuration error: {e:#}");
            std::process::ExitCode::from(2)
        }
        Ok(Err(e)) => {
            eprintln!("roundtrip: {e:#}");
            std::process::ExitCode::FAILURE
        }
        Ok(Ok(())) => std::process::ExitCode::SUCCESS,
    }
}

fn validated(config: Config) -> anyhow::Result<Config> {
    config.validate()?;
    Ok(config)
}

/// [`validated`], for a store command: it serves no request, so it exports no traces (no
/// exporter thread, and no wait at exit for a collector that may be unreachable).
fn untraced(config: Config) -> anyhow::Result<Config> {
    let mut config = validated(config)?;
    config.otlp_endpoint = None;
    Ok(config)
}

/// Runs a store command on a runtime of its own.
fn block_on(work: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(work)
}

/// The file and `ROUNDTRIP_*` settings, then the command's flags over them (`finish`, which
/// validates); logging (and, if configured, trace export) is set up from the result, then
/// `command` runs, then the last spans are sent. `Err`: the configuration was refused.
fn run(
    cli: &Cli,
    finish: impl FnOnce(Config) -> anyhow::Result<Config>,
    command: impl FnOnce(Config) -> anyhow::Result<()>,
) -> anyhow::Result<anyhow::Result<()>> {
    let config = finish(Config::load(cli.config.as_deref())?)?;
    let telemetry = Telemetry::install(&TelemetrySettings::from_config(&config))?;
    let outcome = command(config);
    telemetry.shutdown();
    Ok(outcome)
}
