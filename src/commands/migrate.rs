//! `roundtrip migrate`: creates or upgrades the tenant store's tables, and says which store.

use crate::config::Config;
use crate::wiring;

pub async fn run(config: &Config) -> anyhow::Result<()> {
    // Opening the store applies the migrations it lacks.
    wiring::open_store(config).await?;
    println!("the tenant store is up to date");
    Ok(())
}
