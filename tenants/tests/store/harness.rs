//! The two databases a test runs on, and the records tests make.
//!
//! Each test gets a database of its own, so tests run in parallel and a rerun starts clean:
//! on SQLite a new file in a temporary directory; on PostgreSQL a new schema with a random
//! name, which the store's connections use through `search_path`, dropped when the test ends.

use std::collections::BTreeMap;

use roundtrip_tenants::audit::{AuditEvent, AuditKind, AuditOutcome};
use roundtrip_tenants::{
    ApiKey, ApiKeyRecord, AuthMode, Millis, Names, RateLimit, RateLimits, Scope, Slug, SqlStore,
    Store, TenantSpec,
};
use sqlx::{AnyConnection, Connection, Executor};

/// The database the PostgreSQL half of the suite uses unless `ROUNDTRIP_TEST_DATABASE_URL`
/// names another. CI starts it.
const POSTGRES: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A fresh store on one backend, and what a test needs to reach its database directly.
pub(crate) struct Db {
    store: SqlStore,
    /// The URL the store was opened with: opening it again reaches the same data.
    pub(crate) url: String,
    backend: Backend,
}

enum Backend {
    Sqlite {
        _dir: tempfile::TempDir,
    },
    Postgres {
        admin_url: String,
        schema: String,
        dropped: bool,
    },
}

impl Db {
    /// A store on a new SQLite file, in a directory that does not exist yet.
    pub(crate) async fn sqlite() -> Db {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}/data/store.db?mode=rwc", dir.path().display());
        let store = SqlStore::open(&url)
            .await
            .expect("a fresh SQLite store opens");
        Db {
            store,
            url,
            backend: Backend::Sqlite { _dir: dir },
        }
    }

    /// A store in a new PostgreSQL schema. Panics, saying why, if PostgreSQL does not answer.
    pub(crate) async fn postgres() -> Db {
        let admin_url =
            std::env::var("ROUNDTRIP_TEST_DATABASE_URL").unwrap_or_else(|_| POSTGRES.to_owned());
        sqlx::any::install_default_drivers();
        let mut admin = AnyConnection::connect(&admin_url)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "PostgreSQL does not answer at {admin_url}: {e}\n\
                 The store suite runs on PostgreSQL too: start it (.ci/run does), or name \
                 another with ROUNDTRIP_TEST_DATABASE_URL."
                )
            });
        let schema = format!("store_test_{:016x}", rand::random::<u64>());
        admin
            .execute(format!("CREATE SCHEMA {schema}").as_str())
            .await
            .expect("the test schema is created");
        admin.close().await.expect("the admin connection closes");
        let separator = if admin_url.contains('?') { '&' } else { '?' };
        let url = format!("{admin_url}{separator}options=-c%20search_path%3D{schema}");
        let store = SqlStore::open(&url)
            .await
            .expect("a fresh PostgreSQL store opens");
        Db {
            store,
            url,
            backend: Backend::Postgres {
                admin_url,
                schema,
                dropped: false,
            },
        }
    }

    /// The store, as its users see it.
    pub(crate) fn store(&self) -> &dyn Store {
        &self.store
    }

    /// The store, with what only [`SqlStore`] has.
    pub(crate) fn sql_store(&self) -> &SqlStore {
        &self.store
    }

    /// A second store on the same data, as another process would open it.
    pub(crate) async fn reopen(&self) -> SqlStore {
        SqlStore::open(&self.url)
            .await
            .expect("the store opens again")
    }

    /// Runs one statement on the database directly, past the store (to damage a row).
    pub(crate) async fn execute(&self, sql: &str) {
        let mut conn = AnyConnection::connect(&self.url)
            .await
            .expect("a direct connection");
        conn.execute(sql).await.expect("the statement runs");
        conn.close().await.expect("the direct connection closes");
    }

    /// Closes the store and drops the test's schema.
    pub(crate) async fn finish(mut self) {
        self.store.close().await;
        if let Backend::Postgres {
            admin_url,
            schema,
            dropped,
        } = &mut self.backend
        {
            drop_schema(admin_url, schema)
                .await
                .expect("the test schema is dropped");
            *dropped = true;
        }
    }
}

impl Drop for Db {
    /// After a failed test, which never reached [`Db::finish`]: drops the schema all the same,
    /// on a thread of its own (a destructor cannot wait on the test's runtime).
    fn drop(&mut self) {
        let Backend::Postgres {
            admin_url,
            schema,
            dropped: false,
        } = &self.backend
        else {
            return;
        };
        let (admin_url, schema) = (admin_url.clone(), schema.clone());
        let outcome = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| e.to_string())?;
            runtime
                .block_on(drop_schema(&admin_url, &schema))
                .map_err(|e| e.to_string())
        })
        .join();
        if !matches!(outcome, Ok(Ok(()))) {
            eprintln!("could not drop the test schema after a failure: {outcome:?}");
        }
    }
}

async fn drop_schema(admin_url: &str, schema: &str) -> Result<(), sqlx::Error> {
    let mut admin = AnyConnection::connect(admin_url).await?;
    // A connection left in a transaction by a failed test would hold its locks for ever.
    admin.execute("SET lock_timeout = '10s'").await?;
    admin
        .execute(format!("DROP SCHEMA IF EXISTS {schema} CASCADE").as_str())
        .await?;
    admin.close().await
}

/// `s` as a slug.
pub(crate) fn slug(s: &str) -> Slug {
    Slug::parse(s).expect("a valid slug")
}

/// A spec with the defaults.
pub(crate) fn spec(name: &str) -> TenantSpec {
    TenantSpec::new(name, vec!["examples".into()], AuthMode::ApiKey)
}

/// A spec with every field away from its default.
pub(crate) fn full_spec() -> TenantSpec {
    let mut disabled = Names::default();
    disabled.tools.insert("dangerous".into());
    disabled.prompts.insert("greeting".into());
    disabled.resources.insert("file:///{path}".into());
    TenantSpec {
        name: "Acme, Inc. — «test»".into(),
        instructions: Some("Be brief.\nUse the \"echo\" tool.".into()),
        catalogs: vec!["examples".into(), "conformance".into()],
        disabled,
        state_ttl_secs: Some(600),
        legacy_shim: false,
        memory_budget_bytes: Some(64 << 20),
        rate_limits: RateLimits {
            tenant: Some(RateLimit {
                per_second: 100.0,
                burst: 200,
            }),
            key: Some(RateLimit {
                per_second: 1.0 / 3.0,
                burst: 1,
            }),
            tools: BTreeMap::from([(
                "echo".into(),
                RateLimit {
                    per_second: 0.1,
                    burst: 3,
                },
            )]),
        },
        auth: AuthMode::Anonymous,
    }
}

/// A key with the defaults (an `mcp` key with access to everything), with a fixed creation
/// time: the database keeps milliseconds, so a record compares equal after a round trip.
pub(crate) fn key(id: &str) -> ApiKeyRecord {
    let mut key = ApiKey::generate(id).record();
    key.created_at = Millis(1_700_000_000_000);
    key
}

/// A key with every field away from its default.
pub(crate) fn full_key(id: &str) -> (ApiKey, ApiKeyRecord) {
    let secret = ApiKey::generate(id);
    let mut allow = Names::default();
    allow.tools.insert("echo".into());
    allow.resources.insert("demo://readme".into());
    let mut record = secret
        .record()
        .with_scopes([Scope::Mcp, Scope::TenantAdmin])
        .with_allow(allow)
        .expiring(Millis(1_900_000_000_000));
    record.created_at = Millis(1_700_000_000_123);
    (secret, record)
}

/// A call's audit event.
pub(crate) fn event(tenant: &str, at: i64, target: &str, outcome: AuditOutcome) -> AuditEvent {
    AuditEvent {
        id: 0,
        tenant: slug(tenant),
        at: Millis(at),
        actor: "key:k1".into(),
        kind: AuditKind::Call,
        action: "tools/call".into(),
        target: Some(target.into()),
        outcome,
        error_code: (outcome == AuditOutcome::Error).then_some(-32602),
        round: Some(1),
        latency_us: Some(250),
    }
}
