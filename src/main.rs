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
    let outcome = match &cli.command {
        // A client of some server: no server configuration, no logging set-up.
        Command::Bench(args) => return commands::bench::run(args),
        Command::Call(args) => return commands::call::call(args),
        Command::Prompt(args) => return commands::call::prompt(args),
        Command::Read(args) => return commands::call::read(args),
        Command::ConformanceClient(args) => return commands::conformance_client::run(args),
        Command::Serve(args) => {
            configure(&cli, |c| Ok(c.with_serve_args(args)?)).map(commands::serve::run)
        }
        Command::Migrate => {
            configure(&cli, validated).map(|c| block_on(commands::migrate::run(&c)))
        }
        Command::Tenant(args) => {
            configure(&cli, validated).map(|c| block_on(commands::tenant::tenant(&c, args)))
        }
        Command::Key(args) => {
            configure(&cli, validated).map(|c| block_on(commands::tenant::key(&c, args)))
        }
        Command::Stdio(args) => configure(&cli, validated).map(|c| commands::stdio::run(c, args)),
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

/// Runs a store command on a runtime of its own.
fn block_on(work: impl std::future::Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?
        .block_on(work)
}

/// The file and `ROUNDTRIP_*` settings, then the command's flags over them (`finish`, which
/// validates); logging is set up from the result.
fn configure(
    cli: &Cli,
    finish: impl FnOnce(Config) -> anyhow::Result<Config>,
) -> anyhow::Result<Config> {
    let config = finish(Config::load(cli.config.as_deref())?)?;
    init_tracing(&config.log);
    Ok(config)
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
