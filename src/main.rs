//! `roundtrip`: parse the command line, run the command, map failure to an exit code
//! (2 for a configuration error, 1 for anything else).

use clap::Parser;

use roundtrip::cli::{Cli, Command};
use roundtrip::commands;
use roundtrip::config::Config;

/// Every request allocates (parsed JSON, the result map, header values): under load glibc's
/// malloc and free took a fifth of the server's CPU, mimalloc a fraction of that. The library
/// leaves the choice to the binary that embeds it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    if let Command::Bench(args) = &cli.command {
        // A client of some server: no server configuration, no logging set-up.
        return commands::bench::run(args);
    }
    let config = match configure(&cli) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("roundtrip: configuration error: {e:#}");
            return std::process::ExitCode::from(2);
        }
    };
    init_tracing(&config.log);
    let result = match cli.command {
        Command::Serve(_) => commands::serve::run(config),
        Command::Stdio(args) => commands::stdio::run(config, &args),
        Command::Bench(_) => Ok(()),
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("roundtrip: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The file and `ROUNDTRIP_*` settings, then the command's flags over them; validated.
fn configure(cli: &Cli) -> anyhow::Result<Config> {
    let config = Config::load(cli.config.as_deref())?;
    Ok(match &cli.command {
        Command::Serve(args) => config.with_serve_args(args)?,
        Command::Stdio(_) => {
            config.validate()?;
            config
        }
        Command::Bench(_) => config,
    })
}

/// Logs go to stderr (stdout belongs to the stdio transport). `RUST_LOG` wins over the
/// configured filter; it is, with `ROUNDTRIP_CONFIG`, one of the two variables read outside
/// `config.rs` (see its module doc).
fn init_tracing(default_filter: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default_filter));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal; log files and collectors get plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .init();
}
