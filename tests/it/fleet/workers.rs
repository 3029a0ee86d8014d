//! The fleet the deploy's compose file describes, as processes: `roundtrip serve` workers on
//! one PostgreSQL schema and one Redis prefix, with the same master key, demo key and admin
//! token, as the compose file sets them (`ROUNDTRIP_DATABASE_URL`, `ROUNDTRIP_REDIS_URL`,
//! `ROUNDTRIP_REDIS_PREFIX`, `ROUNDTRIP_MASTER_KEY`, `ROUNDTRIP_DEMO_API_KEY`,
//! `ROUNDTRIP_ADMIN_TOKEN`).

use std::process::Command;

use roundtrip_runtime::sealing::MasterKey;
use sqlx::{AnyConnection, Connection, Executor};

use crate::support::scratch_dir;
use crate::support::serve_process::{command, Serve};

/// The PostgreSQL the fleet's schema is made in (CI starts it).
const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

pub(crate) const DEMO_KEY: &str = "fleet-demo-key";
pub(crate) const ADMIN_TOKEN: &str = "fleet-admin-token";

/// What every worker of one fleet shares.
pub(crate) struct FleetSettings {
    schema: String,
    database_url: String,
    pub(crate) redis_url: String,
    redis_prefix: String,
    master_key: String,
    /// More settings every worker gets, as environment variables.
    extra: Vec<(String, String)>,
}

impl FleetSettings {
    /// A new PostgreSQL schema and Redis prefix of the fleet's own, on `redis_url`.
    pub(crate) async fn new(redis_url: &str) -> FleetSettings {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("after 1970")
            .as_nanos();
        let id = format!("{}_{nanos}", std::process::id());
        let schema = format!("fleet_{id}");
        sqlx::any::install_default_drivers();
        let mut admin = AnyConnection::connect(POSTGRES)
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL does not answer at {POSTGRES}: {e}"));
        admin
            .execute(format!("CREATE SCHEMA {schema}").as_str())
            .await
            .expect("the fleet's schema is created");
        admin.close().await.expect("the admin connection closes");
        FleetSettings {
            schema: schema.clone(),
            database_url: format!("{POSTGRES}?options=-c%20search_path%3D{schema}"),
            redis_url: redis_url.to_owned(),
            redis_prefix: format!("fleet-{id}"),
            master_key: MasterKey::generate().to_base64().to_string(),
            extra: Vec::new(),
        }
    }

    /// Every worker started from now on gets `name=value` in its environment.
    pub(crate) fn set(&mut self, name: &str, value: &str) {
        self.extra.push((name.to_owned(), value.to_owned()));
    }

    /// `roundtrip serve` as one worker of this fleet.
    fn worker(&self) -> Command {
        let mut worker = command(&scratch_dir());
        worker
            .env("ROUNDTRIP_DATABASE_URL", &self.database_url)
            .env("ROUNDTRIP_REDIS_URL", &self.redis_url)
            .env("ROUNDTRIP_REDIS_PREFIX", &self.redis_prefix)
            .env("ROUNDTRIP_MASTER_KEY", &self.master_key)
            .env("ROUNDTRIP_DEMO_API_KEY", DEMO_KEY)
            .env("ROUNDTRIP_ADMIN_TOKEN", ADMIN_TOKEN)
            .envs(self.extra.iter().map(|(k, v)| (k, v)));
        worker
    }

    /// Starts `n` workers, one after another (the first migrates and seeds the store).
    pub(crate) fn start(&self, n: usize) -> Vec<Serve> {
        (0..n)
            .map(|_| Serve::start_command(self.worker()))
            .collect()
    }
}

impl FleetSettings {
    /// Drops the fleet's schema, once its workers are stopped.
    pub(crate) async fn remove(self) {
        let mut admin = AnyConnection::connect(POSTGRES)
            .await
            .expect("PostgreSQL answers");
        admin
            .execute(format!("DROP SCHEMA {} CASCADE", self.schema).as_str())
            .await
            .expect("the fleet's schema is dropped");
        let _ = admin.close().await;
    }
}
