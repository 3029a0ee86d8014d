//! [`RedisSessionDirectory`]: which worker holds each legacy session, in Redis, so every
//! worker of a fleet can forward a session's requests to its owner (`fleet::directory`),
//! and the fleet's count of sessions against its caps.
//!
//! - `{prefix}:session:{id}`: the entry as JSON (a few hundred bytes, most of them the
//!   client's capabilities), with an expiry its owner renews;
//! - `{prefix}:sessions`: every live session's id, scored by when it expires;
//! - `{prefix}:sessions:{tenant}:{caller}`: the same for one caller's sessions.
//!
//! Recording a session is one Lua script over Redis `TIME`: drop what has expired from both
//! sets, check both caps, then add. Two workers recording at once cannot both take the last
//! slot. Redis is asked only at `initialize`, at a session's end, once per renewal period
//! for all of a worker's sessions, and when a session's request lands on a worker that does
//! not hold it.

use std::time::Duration;

use async_trait::async_trait;
use redis::Script;

use super::connection::Redis;
use crate::fleet::directory::{
    DirectoryEntry, DirectoryUnavailable, FleetCaps, FleetFull, Holder, NotRegistered,
    SessionDirectory,
};

/// Records a session within the caps. KEYS: entry, fleet set, caller set. ARGV: id, entry,
/// ttl in ms, fleet cap, caller cap. Returns 0 (recorded), 1 (fleet full), 2 (caller full).
const REGISTER: &str = r"
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[4]) then return 1 end
if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[5]) then return 2 end
local expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[2], expires, ARGV[1])
redis.call('ZADD', KEYS[3], expires, ARGV[1])
redis.call('PEXPIRE', KEYS[3], ARGV[3])
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 0
";

/// Extends live sessions. KEYS: fleet set, then each session's entry and caller set. ARGV:
/// ttl in ms, then each session's id. Returns the ids whose entry is gone (left as they are).
const RENEW: &str = r"
local t = redis.call('TIME')
local expires = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV do
  if redis.call('PEXPIRE', KEYS[2 * i - 2], ARGV[1]) == 1 then
    redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[i])
    redis.call('ZADD', KEYS[2 * i - 1], 'XX', expires, ARGV[i])
    redis.call('PEXPIRE', KEYS[2 * i - 1], ARGV[1])
  else
    lost[#lost + 1] = ARGV[i]
  end
end
return lost
";

/// Sessions renewed per script run, so that one run stays short for Redis.
const RENEW_BATCH: usize = 500;

/// The session directory in Redis. Cheap to clone.
#[derive(Debug, Clone)]
pub struct RedisSessionDirectory {
    redis: Redis,
    register: Script,
    renew: Script,
}

impl RedisSessionDirectory {
    /// A directory over `redis`'s connection, under its prefix.
    pub fn new(redis: Redis) -> RedisSessionDirectory {
        RedisSessionDirectory {
            redis,
            register: Script::new(REGISTER),
            renew: Script::new(RENEW),
        }
    }

    fn entry_key(&self, id: &str) -> String {
        self.redis.key(&format!("session:{id}"))
    }

    fn fleet_key(&self) -> String {
        self.redis.key("sessions")
    }

    fn caller_key(&self, holder: &Holder) -> String {
        self.redis
            .key(&format!("sessions:{}:{}", holder.tenant, holder.caller))
    }
}

fn unavailable(e: impl std::error::Error + Send + Sync + 'static) -> DirectoryUnavailable {
    DirectoryUnavailable(Box::new(e))
}

fn millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).max(1)
}

#[async_trait]
impl SessionDirectory for RedisSessionDirectory {
    async fn register(
        &self,
        id: &str,
        entry: &DirectoryEntry,
        ttl: Duration,
        caps: FleetCaps,
    ) -> Result<(), NotRegistered> {
        let value = serde_json::to_string(entry).map_err(unavailable)?;
        let script = self.register.clone();
        let keys = [
            self.entry_key(id),
            self.fleet_key(),
            self.caller_key(&entry.holder),
        ];
        let id = id.to_owned();
        let outcome: i64 = self
            .redis
            .call(|mut conn| async move {
                script
                    .key(&keys[..])
                    .arg(id)
                    .arg(value)
                    .arg(millis(ttl))
                    .arg(caps.sessions)
                    .arg(caps.per_caller)
                    .invoke_async(&mut conn)
                    .await
            })
            .await
            .map_err(unavailable)?;
        match outcome {
            1 => Err(FleetFull::Fleet(caps.sessions).into()),
            2 => Err(FleetFull::Caller(caps.per_caller).into()),
            _ => Ok(()),
        }
    }

    async fn lookup(&self, id: &str) -> Result<Option<DirectoryEntry>, DirectoryUnavailable> {
        let key = self.entry_key(id);
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

    async fn forget(&self, id: &str, holder: &Holder) -> Result<(), DirectoryUnavailable> {
        let mut pipe = redis::pipe();
        pipe.atomic()
            .cmd("DEL")
            .arg(self.entry_key(id))
            .ignore()
            .cmd("ZREM")
            .arg(self.fleet_key())
            .arg(id)
            .ignore()
            .cmd("ZREM")
            .arg(self.caller_key(holder))
            .arg(id)
            .ignore();
        self.redis
            .call(|mut conn| async move { pipe.query_async::<()>(&mut conn).await })
            .await
            .map_err(unavailable)
    }

    async fn renew(
        &self,
        sessions: &[(String, Holder)],
        ttl: Duration,
    ) -> Result<Vec<String>, DirectoryUnavailable> {
        let mut lost = Vec::new();
        let mut failed = None;
        for batch in sessions.chunks(RENEW_BATCH) {
            let mut keys = Vec::with_capacity(1 + 2 * batch.len());
            let mut args = Vec::with_capacity(1 + batch.len());
            keys.push(self.fleet_key());
            args.push(millis(ttl).to_string());
            for (id, holder) in batch {
                keys.push(self.entry_key(id));
                keys.push(self.caller_key(holder));
                args.push(id.clone());
            }
            let script = self.renew.clone();
            let renewed = self
                .redis
                .call(|mut conn| async move {
                    script
                        .key(keys)
                        .arg(args)
                        .invoke_async::<Vec<String>>(&mut conn)
                        .await
                })
                .await;
            // One failed batch does not keep the others from being renewed.
            match renewed {
                Ok(gone) => lost.extend(gone),
                Err(e) => failed = Some(e),
            }
        }
        match failed {
            Some(e) => Err(unavailable(e)),
            None => Ok(lost),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fleet::directory::contract;
    use crate::redis::testing::test_redis;

    /// Two workers' directories on one Redis prefix.
    async fn two_workers() -> (RedisSessionDirectory, RedisSessionDirectory) {
        let redis = test_redis().await;
        (
            RedisSessionDirectory::new(redis.clone()),
            RedisSessionDirectory::new(redis),
        )
    }

    #[tokio::test]
    async fn a_session_registered_by_one_worker_is_found_by_another_until_forgotten() {
        let (one, other) = two_workers().await;
        contract::a_session_registered_by_one_worker_is_found_by_another_until_forgotten(
            &one, &other,
        )
        .await;
    }

    #[tokio::test]
    async fn an_entry_expires_unless_renewed() {
        let (one, _) = two_workers().await;
        let (short, wait) = (Duration::from_millis(300), Duration::from_millis(1_000));
        contract::an_entry_expires_unless_renewed(&one, short, wait).await;
    }

    #[tokio::test]
    async fn renewing_names_the_sessions_the_directory_no_longer_holds() {
        let (one, _) = two_workers().await;
        contract::renewing_names_the_sessions_the_directory_no_longer_holds(&one).await;
    }

    #[tokio::test]
    async fn a_caller_at_its_cap_on_one_worker_is_refused_on_another() {
        let (one, other) = two_workers().await;
        contract::a_caller_at_its_cap_on_one_worker_is_refused_on_another(&one, &other).await;
    }

    #[tokio::test]
    async fn a_forgotten_session_frees_its_slot_in_the_fleet() {
        let (one, _) = two_workers().await;
        contract::a_forgotten_session_frees_its_slot_in_the_fleet(&one).await;
    }

    #[tokio::test]
    async fn an_expired_session_frees_its_slot_and_a_renewed_one_keeps_it() {
        let (one, _) = two_workers().await;
        let (short, wait) = (Duration::from_millis(300), Duration::from_millis(1_000));
        contract::an_expired_session_frees_its_slot_and_a_renewed_one_keeps_it(&one, short, wait)
            .await;
    }
}
