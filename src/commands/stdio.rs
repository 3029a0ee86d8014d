//! `roundtrip stdio --tenant SLUG`: serve one tenant of the store over stdin/stdout, both eras,
//! until stdin ends. Logs go to stderr; stdout carries only JSON-RPC lines. The tenant's changes
//! in the store reach the session as they do a server's.
//!
//! Exit status: 0 when every request got its own answer (a JSON-RPC error from a handler is
//! an answer) and every line was written; 1 when requests were still running at the end of
//! the drain (`stdio.drain_timeout_ms`; each got its own -32603 instead of its answer) or
//! stdout closed early.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, Context as _};
use roundtrip_runtime::handler::Principal;
use roundtrip_runtime::tenancy::TenantDirectory;
use roundtrip_runtime::transport::stdio::{self, Stdio};
use roundtrip_tenants::{Status, TenantRegistry};
use tokio_util::sync::CancellationToken;

use crate::catalogs;
use crate::cli::StdioArgs;
use crate::config::Config;
use crate::wiring;

pub fn run(config: Config, args: &StdioArgs) -> anyhow::Result<()> {
    actix_rt::System::new().block_on(async move {
        let sql = wiring::open_sql_store(&config).await?;
        // The tenant store's key rings, as `serve` keeps them: a client that restarts its
        // stdio server (editors do, on a crash or a reload) still has its states in flight
        // open, and `stdio` and `serve` on one store open each other's states. Keeping them
        // in memory would save only the master key file, which `serve` makes anyway.
        let keys = wiring::key_sharing(&config, &sql).await?;
        let store: Arc<dyn roundtrip_tenants::Store> = Arc::new(sql);
        if let Some(key) = wiring::seed(store.as_ref(), &config).await? {
            eprintln!("roundtrip: demo API key (shown once): {}", key.secret);
        }
        let registry = Arc::new(TenantRegistry::new(store, Arc::new(catalogs::Compiled)));
        registry.load().await.context("reading the tenants")?;
        let tenant = registry
            .tenant(&args.tenant)
            .with_context(|| format!("no tenant '{}'", args.tenant))?;
        if registry
            .record(&args.tenant)
            .is_some_and(|r| r.status == Status::Suspended)
        {
            bail!("tenant '{}' is suspended", args.tenant);
        }
        let following = CancellationToken::new();
        registry.follow(
            Duration::from_millis(config.tenants.follow_ms),
            following.clone(),
        );
        let dispatching = wiring::dispatching(&config, &registry, keys).await?;
        tracing::info!(tenant = tenant.slug(), "serving over stdio");
        let server = Stdio {
            tenant,
            // stdio has no credentials: the local process that started us is the caller.
            principal: Principal::new("stdio"),
            runtime: Arc::new(dispatching.runtime.clone()),
            keys: Some(dispatching.keys.clone()),
            limits: config.stdio.limits(),
        };
        let served = stdio::serve(server, std::io::stdin(), tokio::io::stdout()).await;
        following.cancel();
        dispatching.stop();
        if served.timed_out > 0 {
            bail!(
                "{} request(s) still running when the drain timed out (stdio.drain_timeout_ms); \
                 each was answered with an error",
                served.timed_out
            );
        }
        if !served.output_complete {
            bail!("stdout closed before every answer was written");
        }
        Ok(())
    })
}
