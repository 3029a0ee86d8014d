//! [`RedisSessionDirectory`]: which worker holds each legacy session, in Redis, so every
//! worker of a fleet can forward a session's requests to its owner (`legacy::directory`).
//!
//! One string per session, `{prefix}:session:{id}`: the entry as JSON, with an expiry its
//! owner renews. A few hundred bytes per session; Redis is asked only when a session's
//! request lands on a worker that does not hold it.

use std::time::Duration;

use async_trait::async_trait;

use super::connection::Redis;
use crate::legacy::directory::{DirectoryEntry, DirectoryUnavailable, SessionDirectory};

/// The session directory in Redis. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisSessionDirectory {
    redis: Redis,
}

impl RedisSessionDirectory {
    /// A directory over `redis`'s connection, under its prefix.
    pub fn new(redis: Redis) -> RedisSessionDirectory {
        RedisSessionDirectory { redis }
    }

    fn key(&self, id: &str) -> String {
        self.redis.key(&format!("session:{id}"))
    }
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> DirectoryUnavailable {
    DirectoryUnavailable(Box::new(e))
}

#[async_trait]
impl SessionDirectory for RedisSessionDirectory {
    async fn register(
        &self,
        id: &str,
        entry: &DirectoryEntry,
        ttl: Duration,
    ) -> Result<(), DirectoryUnavailable> {
        let key = self.key(id);
        let value = serde_json::to_string(entry).map_err(unavailable)?;
        let secs = ttl.as_secs().max(1);
        self.redis
            .call(|mut conn| async move {
                redis::cmd("SET")
                    .arg(&key)
                    .arg(value)
                    .arg("EX")
                    .arg(secs)
                    .query_async::<()>(&mut conn)
                    .await
            })
            .await
            .map_err(unavailable)
    }

    async fn lookup(&self, id: &str) -> Result<Option<DirectoryEntry>, DirectoryUnavailable> {
        let key = self.key(id);
        let value: Option<String> = self
            .redis
            .call(
                |mut conn| async move { redis::cmd("GET").arg(&key).query_async(&mut conn).await },
            )
            .await
            .map_err(unavailable)?;
        value
            .map(|v| serde_json::from_str(&v).map_err(unavailable))
            .transpose()
    }

    async fn forget(&self, id: &str) -> Result<(), DirectoryUnavailable> {
        let key = self.key(id);
        self.redis
            .call(|mut conn| async move {
                redis::cmd("DEL")
                    .arg(&key)
                    .query_async::<()>(&mut conn)
                    .await
            })
            .await
            .map_err(unavailable)
    }

    async fn renew(&self, ids: &[String], ttl: Duration) -> Result<(), DirectoryUnavailable> {
        if ids.is_empty() {
            return Ok(());
        }
        let mut pipe = redis::pipe();
        for id in ids {
            pipe.cmd("EXPIRE")
                .arg(self.key(id))
                .arg(ttl.as_secs().max(1))
                .ignore();
        }
        self.redis
            .call(|mut conn| async move { pipe.query_async::<()>(&mut conn).await })
            .await
            .map_err(unavailable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redis::testing::test_redis;

    fn entry() -> DirectoryEntry {
        DirectoryEntry {
            owner: "http://127.0.0.1:1".into(),
            tenant: "acme".into(),
            version: "2025-11-25".into(),
        }
    }

    #[tokio::test]
    async fn a_session_registered_by_one_worker_is_found_by_another_until_forgotten() {
        let redis = test_redis().await;
        let one = RedisSessionDirectory::new(redis.clone());
        let other = RedisSessionDirectory::new(redis);
        one.register("s1", &entry(), Duration::from_secs(60))
            .await
            .unwrap();
        assert_eq!(other.lookup("s1").await.unwrap(), Some(entry()));
        other.forget("s1").await.unwrap();
        assert_eq!(one.lookup("s1").await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_entry_expires_unless_renewed() {
        let redis = test_redis().await;
        let directory = RedisSessionDirectory::new(redis);
        let second = Duration::from_secs(1);
        directory.register("gone", &entry(), second).await.unwrap();
        directory.register("kept", &entry(), second).await.unwrap();
        directory
            .renew(&["kept".into()], Duration::from_secs(60))
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(2_100)).await;
        assert_eq!(directory.lookup("gone").await.unwrap(), None);
        assert_eq!(directory.lookup("kept").await.unwrap(), Some(entry()));
    }
}
