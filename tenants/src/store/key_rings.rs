//! The `key_rings` table: each tenant's wrapped requestState key ring as JSON text, with a
//! version for compare-and-swap. The store does not read the JSON; `StoreKeyShare` does.
//!
//! A write names the version it read: `UPDATE ... WHERE version = $expected` (or an insert
//! that does nothing if a ring exists), so a write based on a stale read changes no row and
//! comes back as [`RingWrite::Conflict`]. No transaction or lock is needed: the one statement
//! is the check and the write.

use sqlx::Row as _;

use super::rows::db;
use super::{SqlStore, StoreError};
use crate::model::Millis;

/// A ring as the table holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RingRow {
    /// The wrapped ring, JSON.
    pub ring: String,
    /// Its version: 1 when first written, one more at every write.
    pub version: i64,
}

/// What a [`SqlStore::put_key_ring`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingWrite {
    /// Written; the ring's new version.
    Stored(i64),
    /// The stored ring was not at the version expected (or existed, when none was): nothing
    /// was written.
    Conflict,
}

impl SqlStore {
    /// `tenant`'s key ring, if one was stored.
    pub async fn key_ring(&self, tenant: &str) -> Result<Option<RingRow>, StoreError> {
        let row = sqlx::query("SELECT ring, version FROM key_rings WHERE tenant = $1")
            .bind(tenant)
            .fetch_optional(&self.pool)
            .await
            .map_err(db)?;
        row.map(|row| {
            Ok(RingRow {
                ring: row.try_get("ring").map_err(db)?,
                version: row.try_get("version").map_err(db)?,
            })
        })
        .transpose()
    }

    /// Stores `ring` as `tenant`'s if the stored one is at version `expected` (`None`: if
    /// there is none).
    pub async fn put_key_ring(
        &self,
        tenant: &str,
        ring: &str,
        expected: Option<i64>,
    ) -> Result<RingWrite, StoreError> {
        let now = Millis::now().0;
        let (query, version) = match expected {
            None => (
                sqlx::query(
                    "INSERT INTO key_rings (tenant, ring, version, updated_at) \
                     VALUES ($1, $2, 1, $3) ON CONFLICT (tenant) DO NOTHING",
                )
                .bind(tenant)
                .bind(ring)
                .bind(now),
                1,
            ),
            Some(expected) => (
                sqlx::query(
                    "UPDATE key_rings SET ring = $2, version = version + 1, updated_at = $4 \
                     WHERE tenant = $1 AND version = $3",
                )
                .bind(tenant)
                .bind(ring)
                .bind(expected)
                .bind(now),
                expected.wrapping_add(1),
            ),
        };
        let written = query.execute(&self.pool).await.map_err(db)?.rows_affected();
        Ok(if written == 1 {
            RingWrite::Stored(version)
        } else {
            RingWrite::Conflict
        })
    }
}
