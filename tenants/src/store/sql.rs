//! [`SqlStore`]: the [`Store`] on SQLite (the embedded default) or PostgreSQL, one
//! implementation for both.
//!
//! # One set of queries
//! The store talks to either database through sqlx's `Any` driver, so every query is written
//! once. They use `$1`-style placeholders, which both drivers bind by number: PostgreSQL's own
//! syntax, and in SQLite a parameter named `$NNN`, which sqlx's SQLite driver binds to the
//! NNN-th argument (no rewriting to `?NNN` is needed). The columns keep to the types `Any`
//! reads on both: `TEXT` and `BIGINT`. Times are [`Millis`], digests hex, and what has no
//! column of its own (most of a tenant's settings, a key's scopes and allow-list) JSON text.
//! There is no `BOOLEAN`: `Any` cannot read SQLite's. Only the migrations differ
//! (`migrations/sqlite`, `migrations/postgres`), in their DDL.
//!
//! # Writers, and the order of changes
//! A follower reads the change log by `seq` and remembers the last one it saw, so a change
//! must never become visible after a later `seq` has. Each write that appends a change runs
//! alone: on SQLite the transaction starts `BEGIN IMMEDIATE` (the write lock is taken at once,
//! waiting for it under the busy timeout, instead of failing "database is locked" when a read
//! turns into a write), on PostgreSQL it first locks the `changes` table against other
//! writers (readers are not blocked). Writes are an operator's, rare; the cost is nothing.
//! SQLite runs in WAL mode, so readers never wait for the writer, and a serving process and
//! the CLI can share one file.
//!
//! # What is trusted
//! Nothing read back: a row that does not parse (an unknown status, bad JSON, a malformed
//! digest) is [`StoreError::Corrupt`], never a panic.

use std::path::Path;

use async_trait::async_trait;
use roundtrip_runtime::tenancy::CallRecord;
use sqlx::any::AnyPoolOptions;
use sqlx::migrate::Migrator;
use sqlx::{Any, AnyPool, Transaction};

use super::audit_batches;
use super::rows::{
    self, column, db, insert_error, key_row, limit, tenant_row, to_hex, to_json, Settings,
};
use super::{Change, Store, StoreError};
use crate::api_key::ApiKeyRecord;
use crate::audit::{AuditEvent, AuditFilter};
use crate::model::{Millis, Slug, Status, TenantRecord, TenantSpec};

static SQLITE_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/sqlite");
static POSTGRES_MIGRATIONS: Migrator = sqlx::migrate!("../migrations/postgres");

/// Connections to a SQLite file: readers run side by side in WAL mode, writers take turns.
const SQLITE_CONNECTIONS: u32 = 4;
/// Connections to PostgreSQL, per process.
const POSTGRES_CONNECTIONS: u32 = 8;
/// How long a SQLite writer waits for another (of this process or another) before failing:
/// 5 s, set on each connection.
const SQLITE_BUSY_TIMEOUT: &str = "PRAGMA busy_timeout = 5000";
/// In WAL mode, a commit is durable once the WAL is synced at a checkpoint, not at every
/// commit: the database cannot be corrupted, and only the last commits can be lost to a power
/// cut (not to a crash of the process). Per connection.
const SQLITE_SYNCHRONOUS: &str = "PRAGMA synchronous = NORMAL";

/// Which SQL the database speaks, for the few things that differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    Sqlite,
    Postgres,
}

impl Dialect {
    fn of(url: &str) -> Result<Dialect, StoreError> {
        if url.starts_with("sqlite:") {
            Ok(Dialect::Sqlite)
        } else if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            Ok(Dialect::Postgres)
        } else {
            // Not the URL itself: it may hold a password.
            Err(StoreError::Database(
                "unsupported database URL: expected sqlite:… or postgres://…".into(),
            ))
        }
    }
}

/// The [`Store`] on SQLite or PostgreSQL. Cheap to clone: clones share one pool.
#[derive(Debug, Clone)]
pub struct SqlStore {
    pub(super) pool: AnyPool,
    dialect: Dialect,
}

impl SqlStore {
    /// Opens the database at `url` and brings its schema up to date.
    ///
    /// - `sqlite://PATH?mode=rwc`: a file, created if missing, along with its directory
    ///   (`sqlite://.roundtrip/roundtrip.db?mode=rwc` is relative to the working directory,
    ///   `sqlite:///var/lib/roundtrip.db?mode=rwc` absolute). `sqlite::memory:` is a private
    ///   database that lives as long as the store, on one connection.
    /// - `postgres://USER[:PASSWORD]@HOST[:PORT]/DATABASE`, with sqlx's usual parameters
    ///   (`?options=-c%20search_path%3Dother` for a schema other than `public`).
    pub async fn open(url: &str) -> Result<SqlStore, StoreError> {
        sqlx::any::install_default_drivers();
        let dialect = Dialect::of(url)?;
        let options = match dialect {
            Dialect::Sqlite if sqlite_in_memory(url) => {
                // Each connection to `:memory:` is a database of its own: keep exactly one.
                AnyPoolOptions::new()
                    .max_connections(1)
                    .min_connections(1)
                    .idle_timeout(None)
                    .max_lifetime(None)
            }
            Dialect::Sqlite => {
                create_parent_dir(url)?;
                // A file on this machine does not go stale as a server's connection can:
                // no test query before each use, which costs the audit writer a round trip
                // to SQLite's thread (two thread switches) for every batch it writes.
                AnyPoolOptions::new()
                    .max_connections(SQLITE_CONNECTIONS)
                    .test_before_acquire(false)
                    .after_connect(|conn, _meta| {
                        Box::pin(async move {
                            sqlx::query(SQLITE_BUSY_TIMEOUT).execute(&mut *conn).await?;
                            sqlx::query(SQLITE_SYNCHRONOUS).execute(&mut *conn).await?;
                            Ok(())
                        })
                    })
            }
            Dialect::Postgres => AnyPoolOptions::new().max_connections(POSTGRES_CONNECTIONS),
        };
        let url = creating(dialect, url);
        let pool = options.connect(&url).await.map_err(db)?;
        if dialect == Dialect::Sqlite && !sqlite_in_memory(&url) {
            // Persistent in the file: every later connection, of any process, finds it set.
            sqlx::query("PRAGMA journal_mode = WAL")
                .fetch_optional(&pool)
                .await
                .map_err(db)?;
        }
        let store = SqlStore { pool, dialect };
        store.migrate().await?;
        Ok(store)
    }

    /// Applies the migrations the database has not had yet (`roundtrip migrate`; [`open`]
    /// does it too). Fails if the database's history differs from the embedded migrations.
    ///
    /// [`open`]: SqlStore::open
    pub async fn migrate(&self) -> Result<(), StoreError> {
        let migrator = match self.dialect {
            Dialect::Sqlite => &SQLITE_MIGRATIONS,
            Dialect::Postgres => &POSTGRES_MIGRATIONS,
        };
        migrator
            .run(&self.pool)
            .await
            .map_err(|e| StoreError::Database(Box::new(e)))
    }

    /// Closes every connection, waiting for those in use to come back.
    pub async fn close(&self) {
        self.pool.close().await;
    }

    /// Inserts a key of `tenant` (with its change), as `how` says to treat one of the same id.
    async fn write_key(
        &self,
        tenant: &str,
        key: &ApiKeyRecord,
        how: KeyWrite,
    ) -> Result<(), StoreError> {
        let scopes = to_json(&key.scopes)?;
        let allow = key.allow.as_ref().map(to_json).transpose()?;
        let mut tx = self.change_tx().await?;
        if !tenant_exists(&mut tx, tenant).await? {
            return Err(StoreError::NotFound(format!("tenant {tenant:?}")));
        }
        let written = sqlx::query(how.sql())
            .bind(tenant)
            .bind(key.id.as_str())
            .bind(to_hex(key.digest()))
            .bind(scopes)
            .bind(allow)
            .bind(key.expires_at.map(|m| m.0))
            .bind(key.created_at.0)
            .bind(key.revoked_at.map(|m| m.0))
            .execute(&mut *tx)
            .await
            .map_err(|e| insert_error(e, tenant, &key.id))?;
        if written.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!(
                "key {:?} of tenant {tenant:?}",
                key.id
            )));
        }
        record_change(&mut tx, tenant, Some(&key.id), Millis::now()).await?;
        tx.commit().await.map_err(db)
    }

    /// A transaction that appends to the change log: it runs alone (see the module doc).
    async fn change_tx(&self) -> Result<Transaction<'static, Any>, StoreError> {
        match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(db),
            Dialect::Postgres => {
                let mut tx = self.pool.begin().await.map_err(db)?;
                sqlx::query("LOCK TABLE changes IN SHARE ROW EXCLUSIVE MODE")
                    .execute(&mut *tx)
                    .await
                    .map_err(db)?;
                Ok(tx)
            }
        }
    }

    /// A transaction that writes the audit log only: no order to keep.
    async fn audit_tx(&self) -> Result<Transaction<'static, Any>, StoreError> {
        match self.dialect {
            Dialect::Sqlite => self.pool.begin_with("BEGIN IMMEDIATE").await.map_err(db),
            Dialect::Postgres => self.pool.begin().await.map_err(db),
        }
    }
}

/// What writing a key does when the tenant has a key of that id.
#[derive(Debug, Clone, Copy)]
enum KeyWrite {
    /// Nothing: the write is a conflict.
    Create,
    /// Replaces it (live again).
    Put,
}

impl KeyWrite {
    fn sql(self) -> &'static str {
        match self {
            KeyWrite::Create => {
                "INSERT INTO api_keys \
                 (tenant, id, digest, scopes, allow, expires_at, created_at, revoked_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (tenant, id) DO NOTHING"
            }
            KeyWrite::Put => {
                "INSERT INTO api_keys \
                 (tenant, id, digest, scopes, allow, expires_at, created_at, revoked_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (tenant, id) DO UPDATE SET digest = excluded.digest, \
                 scopes = excluded.scopes, allow = excluded.allow, \
                 expires_at = excluded.expires_at, created_at = excluded.created_at, \
                 revoked_at = excluded.revoked_at"
            }
        }
    }
}

/// A SQLite file's URL creates the file unless it says how to open it (`mode=ro`, ...): a
/// new machine starts with no database.
fn creating(dialect: Dialect, url: &str) -> String {
    if dialect != Dialect::Sqlite || sqlite_in_memory(url) || url.contains("mode=") {
        return url.to_owned();
    }
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}mode=rwc")
}

fn sqlite_in_memory(url: &str) -> bool {
    url.contains(":memory:") || url.contains("mode=memory")
}

/// Creates the directory of a SQLite file if it is missing, so that `mode=rwc` can create
/// the file.
fn create_parent_dir(url: &str) -> Result<(), StoreError> {
    let rest = url
        .strip_prefix("sqlite://")
        .or_else(|| url.strip_prefix("sqlite:"))
        .unwrap_or(url);
    let path = rest.split(['?', '#']).next().unwrap_or(rest);
    match Path::new(path).parent() {
        Some(dir) if !dir.as_os_str().is_empty() => std::fs::create_dir_all(dir)
            .map_err(|e| StoreError::Database(format!("creating {}: {e}", dir.display()).into())),
        _ => Ok(()),
    }
}

/// Appends one change to the log, in the caller's transaction.
async fn record_change(
    tx: &mut Transaction<'static, Any>,
    tenant: &str,
    key: Option<&str>,
    at: Millis,
) -> Result<(), StoreError> {
    sqlx::query("INSERT INTO changes (tenant, key_id, at) VALUES ($1, $2, $3)")
        .bind(tenant)
        .bind(key)
        .bind(at.0)
        .execute(&mut **tx)
        .await
        .map_err(db)?;
    Ok(())
}

/// Whether the tenant exists, in the caller's transaction.
async fn tenant_exists(
    tx: &mut Transaction<'static, Any>,
    tenant: &str,
) -> Result<bool, StoreError> {
    let row = sqlx::query("SELECT 1 AS one FROM tenants WHERE slug = $1")
        .bind(tenant)
        .fetch_optional(&mut **tx)
        .await
        .map_err(db)?;
    Ok(row.is_some())
}

#[async_trait]
impl Store for SqlStore {
    async fn create_tenant(
        &self,
        slug: &Slug,
        spec: &TenantSpec,
    ) -> Result<TenantRecord, StoreError> {
        let now = Millis::now();
        let settings = to_json(&Settings::of(spec))?;
        let mut tx = self.change_tx().await?;
        let inserted = sqlx::query(
            "INSERT INTO tenants (slug, name, status, auth, settings, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $6) ON CONFLICT (slug) DO NOTHING",
        )
        .bind(slug.as_str())
        .bind(spec.name.as_str())
        .bind(Status::Active.as_str())
        .bind(spec.auth.as_str())
        .bind(settings)
        .bind(now.0)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if inserted.rows_affected() == 0 {
            return Err(StoreError::Conflict(format!("tenant {:?}", slug.as_str())));
        }
        record_change(&mut tx, slug.as_str(), None, now).await?;
        tx.commit().await.map_err(db)?;
        Ok(TenantRecord {
            slug: slug.clone(),
            spec: spec.clone(),
            status: Status::Active,
            created_at: now,
            updated_at: now,
        })
    }

    async fn tenant(&self, slug: &str) -> Result<Option<TenantRecord>, StoreError> {
        sqlx::query(
            "SELECT slug, name, status, auth, settings, created_at, updated_at \
             FROM tenants WHERE slug = $1",
        )
        .bind(slug)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?
        .as_ref()
        .map(tenant_row)
        .transpose()
    }

    async fn tenants(
        &self,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<TenantRecord>, StoreError> {
        sqlx::query(
            "SELECT slug, name, status, auth, settings, created_at, updated_at \
             FROM tenants WHERE slug > $1 ORDER BY slug LIMIT $2",
        )
        // Every slug sorts after the empty string.
        .bind(after.unwrap_or(""))
        .bind(self::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db)?
        .iter()
        .map(tenant_row)
        .collect()
    }

    async fn update_tenant(
        &self,
        slug: &str,
        spec: &TenantSpec,
        status: Status,
    ) -> Result<Option<TenantRecord>, StoreError> {
        let now = Millis::now();
        let settings = to_json(&Settings::of(spec))?;
        let mut tx = self.change_tx().await?;
        let row = sqlx::query(
            "UPDATE tenants SET name = $2, status = $3, auth = $4, settings = $5, updated_at = $6 \
             WHERE slug = $1 RETURNING slug, created_at",
        )
        .bind(slug)
        .bind(spec.name.as_str())
        .bind(status.as_str())
        .bind(spec.auth.as_str())
        .bind(settings)
        .bind(now.0)
        .fetch_optional(&mut *tx)
        .await
        .map_err(db)?;
        let Some(row) = row else {
            return Ok(None);
        };
        let record = TenantRecord {
            slug: rows::slug(&column::<String>(&row, "slug")?)?,
            spec: spec.clone(),
            status,
            created_at: Millis(column(&row, "created_at")?),
            updated_at: now,
        };
        record_change(&mut tx, slug, None, now).await?;
        tx.commit().await.map_err(db)?;
        Ok(Some(record))
    }

    async fn delete_tenant(&self, slug: &str) -> Result<bool, StoreError> {
        let mut tx = self.change_tx().await?;
        sqlx::query("DELETE FROM api_keys WHERE tenant = $1")
            .bind(slug)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        let deleted = sqlx::query("DELETE FROM tenants WHERE slug = $1")
            .bind(slug)
            .execute(&mut *tx)
            .await
            .map_err(db)?;
        if deleted.rows_affected() == 0 {
            return Ok(false);
        }
        record_change(&mut tx, slug, None, Millis::now()).await?;
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    async fn create_key(&self, tenant: &str, key: &ApiKeyRecord) -> Result<(), StoreError> {
        self.write_key(tenant, key, KeyWrite::Create).await
    }

    async fn put_key(&self, tenant: &str, key: &ApiKeyRecord) -> Result<(), StoreError> {
        self.write_key(tenant, key, KeyWrite::Put).await
    }

    async fn key(&self, tenant: &str, id: &str) -> Result<Option<ApiKeyRecord>, StoreError> {
        sqlx::query(
            "SELECT id, digest, scopes, allow, expires_at, created_at, revoked_at \
             FROM api_keys WHERE tenant = $1 AND id = $2",
        )
        .bind(tenant)
        .bind(id)
        .fetch_optional(&self.pool)
        .await
        .map_err(db)?
        .as_ref()
        .map(key_row)
        .transpose()
    }

    async fn keys(
        &self,
        tenant: &str,
        after: Option<&str>,
        limit: u32,
    ) -> Result<Vec<ApiKeyRecord>, StoreError> {
        sqlx::query(
            "SELECT id, digest, scopes, allow, expires_at, created_at, revoked_at \
             FROM api_keys WHERE tenant = $1 AND id > $2 ORDER BY id LIMIT $3",
        )
        .bind(tenant)
        .bind(after.unwrap_or(""))
        .bind(self::limit(limit))
        .fetch_all(&self.pool)
        .await
        .map_err(db)?
        .iter()
        .map(key_row)
        .collect()
    }

    async fn revoke_key(&self, tenant: &str, id: &str, at: Millis) -> Result<bool, StoreError> {
        let mut tx = self.change_tx().await?;
        let revoked = sqlx::query(
            "UPDATE api_keys SET revoked_at = $3 \
             WHERE tenant = $1 AND id = $2 AND revoked_at IS NULL",
        )
        .bind(tenant)
        .bind(id)
        .bind(at.0)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        if revoked.rows_affected() == 0 {
            return Ok(false);
        }
        record_change(&mut tx, tenant, Some(id), Millis::now()).await?;
        tx.commit().await.map_err(db)?;
        Ok(true)
    }

    async fn last_change(&self) -> Result<i64, StoreError> {
        let row = sqlx::query("SELECT COALESCE(MAX(seq), 0) AS seq FROM changes")
            .fetch_one(&self.pool)
            .await
            .map_err(db)?;
        column(&row, "seq")
    }

    async fn changes_since(&self, seq: i64, limit: u32) -> Result<Vec<Change>, StoreError> {
        sqlx::query("SELECT seq, tenant, key_id FROM changes WHERE seq > $1 ORDER BY seq LIMIT $2")
            .bind(seq)
            .bind(self::limit(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(db)?
            .iter()
            .map(|row| {
                Ok(Change {
                    seq: column(row, "seq")?,
                    tenant: column(row, "tenant")?,
                    key: column(row, "key_id")?,
                })
            })
            .collect()
    }

    async fn prune_changes(&self, before: Millis) -> Result<u64, StoreError> {
        let mut tx = self.change_tx().await?;
        let pruned = sqlx::query(
            "DELETE FROM changes WHERE at < $1 AND seq < (SELECT MAX(seq) FROM changes)",
        )
        .bind(before.0)
        .execute(&mut *tx)
        .await
        .map_err(db)?;
        tx.commit().await.map_err(db)?;
        Ok(pruned.rows_affected())
    }

    async fn append_audit(&self, events: &[AuditEvent]) -> Result<(), StoreError> {
        if events.is_empty() {
            return Ok(());
        }
        let mut tx = self.audit_tx().await?;
        audit_batches::append_events(&mut tx, events).await?;
        tx.commit().await.map_err(db)
    }

    async fn append_calls(&self, records: &[CallRecord]) -> Result<(), StoreError> {
        if records.is_empty() {
            return Ok(());
        }
        let mut tx = self.audit_tx().await?;
        audit_batches::append_calls(&mut tx, records).await?;
        tx.commit().await.map_err(db)
    }

    async fn audit(
        &self,
        tenant: &str,
        filter: &AuditFilter,
    ) -> Result<Vec<AuditEvent>, StoreError> {
        audit_batches::read(&self.pool, tenant, filter).await
    }

    async fn purge_audit(&self, before: Millis) -> Result<u64, StoreError> {
        let mut tx = self.audit_tx().await?;
        let purged = audit_batches::purge(&mut tx, before).await?;
        tx.commit().await.map_err(db)?;
        Ok(purged)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_follows_the_url_scheme() {
        assert_eq!(Dialect::of("sqlite://x.db").ok(), Some(Dialect::Sqlite));
        assert_eq!(Dialect::of("sqlite::memory:").ok(), Some(Dialect::Sqlite));
        assert_eq!(
            Dialect::of("postgres://u@h/d").ok(),
            Some(Dialect::Postgres)
        );
        assert_eq!(
            Dialect::of("postgresql://u@h/d").ok(),
            Some(Dialect::Postgres)
        );
        assert!(Dialect::of("mysql://u@h/d").is_err());
    }

    #[test]
    fn a_sqlite_file_is_created_unless_the_url_says_how_to_open_it() {
        assert_eq!(
            creating(Dialect::Sqlite, "sqlite://a.db"),
            "sqlite://a.db?mode=rwc"
        );
        assert_eq!(
            creating(Dialect::Sqlite, "sqlite://a.db?x=1"),
            "sqlite://a.db?x=1&mode=rwc"
        );
        assert_eq!(
            creating(Dialect::Sqlite, "sqlite://a.db?mode=ro"),
            "sqlite://a.db?mode=ro"
        );
        assert_eq!(
            creating(Dialect::Sqlite, "sqlite::memory:"),
            "sqlite::memory:"
        );
        assert_eq!(
            creating(Dialect::Postgres, "postgres://h/d"),
            "postgres://h/d"
        );
    }

    #[test]
    fn a_sqlite_url_names_its_directory() {
        let dir = std::env::temp_dir().join(format!("rt-store-{}", rand::random::<u64>()));
        let url = format!("sqlite://{}/a/b.db?mode=rwc", dir.display());
        create_parent_dir(&url).unwrap();
        assert!(dir.join("a").is_dir());
        std::fs::remove_dir_all(dir).unwrap();
    }
}
