//! `roundtrip stdio --tenant SLUG`: serve one tenant over stdin/stdout, both eras, until
//! stdin ends. Logs go to stderr; stdout carries only JSON-RPC lines.

use std::sync::Arc;

use anyhow::Context as _;
use roundtrip_runtime::handler::Principal;
use roundtrip_runtime::sealing::LocalKeyShare;
use roundtrip_runtime::tenancy::TenantDirectory;
use roundtrip_runtime::transport::stdio::{self, Stdio};

use crate::cli::StdioArgs;
use crate::config::Config;
use crate::wiring;

pub fn run(config: Config, args: &StdioArgs) -> anyhow::Result<()> {
    actix_rt::System::new().block_on(async move {
        let (registry, _) = wiring::default_tenants(&config)?;
        let tenant = registry
            .tenant(&args.tenant)
            .with_context(|| format!("no tenant '{}'", args.tenant))?;
        let dispatching =
            wiring::dispatching(&config, &registry, Box::new(LocalKeyShare::new())).await?;
        tracing::info!(tenant = tenant.slug(), "serving over stdio");
        let server = Stdio {
            tenant,
            // stdio has no credentials: the local process that started us is the caller.
            principal: Principal::new("stdio"),
            runtime: Arc::new(dispatching.runtime.clone()),
            keys: Some(dispatching.keys.clone()),
        };
        stdio::serve(server, stdio::stdin_lines(), tokio::io::stdout()).await;
        dispatching.stop();
        Ok(())
    })
}
