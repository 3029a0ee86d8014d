//! `roundtrip serve`: run the HTTP server until SIGINT or SIGTERM, then close streams and
//! stop gracefully.

use crate::config::Config;
use crate::wiring;

pub fn run(config: Config) -> anyhow::Result<()> {
    actix_rt::System::new().block_on(async move {
        let running = wiring::start(&config).await?;
        let base = format!("http://{}", running.addr);
        println!(
            "roundtrip {} listening on {base}",
            env!("CARGO_PKG_VERSION")
        );
        println!("  demo tenant (API key):      {base}/t/demo/mcp");
        println!("  conformance tenant (open):  {base}/t/conformance/mcp");
        if let Some(key) = &running.generated_demo_key {
            println!(
                "  demo API key (shown once; set ROUNDTRIP_DEMO_API_KEY to choose it): {}",
                key.secret
            );
        }
        let admin = if config.admin_token.is_some() {
            "operator token from ROUNDTRIP_ADMIN_TOKEN"
        } else {
            "no ROUNDTRIP_ADMIN_TOKEN: tenant-admin keys only"
        };
        println!("  admin API ({admin}): {base}/admin/v1/");
        wait_for_signal().await;
        tracing::info!("shutting down");
        running.stop().await;
        Ok(())
    })
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
