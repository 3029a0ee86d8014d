//! `roundtrip`: parse the command line, run the command, map failure to an exit code.

use clap::Parser;

use roundtrip::cli::{Cli, Command};
use roundtrip::commands;
use roundtrip::config::Config;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let config = match Config::load(cli.config.as_deref()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("roundtrip: configuration error: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    init_tracing(&config.log);
    let result = match cli.command {
        Command::Serve(args) => commands::serve::run(config.with_serve_args(&args)),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roundtrip: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// Logs go to stderr (stdout belongs to the stdio transport). `RUST_LOG` wins over the
/// configured filter.
fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
