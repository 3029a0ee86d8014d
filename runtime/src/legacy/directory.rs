//! Legacy sessions across worker processes: the [`SessionDirectory`], where every worker of a
//! fleet finds which worker holds a session.
//!
//! A legacy session is stateful: its actor, its streams and its shim flows live in the
//! process that answered `initialize` (its **owner**). Behind a balancer with no sticky
//! sessions, the session's next request, notification, answer, GET or DELETE may land on any
//! worker. That worker looks the id up here and forwards the HTTP request to the owner
//! (`transport::http::forward`), which answers it as if it had landed there: the body and the
//! reply (an SSE stream too) pass through as they are, and the owner authenticates and checks
//! everything as usual. A session whose owner is gone is 404, so the client initializes
//! again.
//!
//! Why forward over HTTP rather than through Redis pub/sub or streams: the reply of a legacy
//! request may be a long SSE stream with server-to-client requests in it, and the client's
//! answers must reach the flow that waits for them, in the owner. A direct connection carries
//! that as it is, with back-pressure and no serialization, at the cost of one loopback or LAN
//! hop; Redis carries only the directory (a few hundred bytes per session), and is never on
//! the path of a message. Forwarding is the rare path: only a session's own requests that a
//! balancer sends elsewhere take it.
//!
//! An entry expires unless its owner renews it (every [`RENEW_EVERY`]), so a dead
//! owner's sessions leave the directory on their own; a worker that fails to reach an owner
//! forgets the entry at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// What the directory holds for a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryEntry {
    /// The owner's base URL, as the other workers reach it (`http://10.0.0.5:8080`).
    pub owner: String,
    /// The tenant the session belongs to: a request for another tenant is not forwarded.
    pub tenant: String,
    /// The version `initialize` negotiated.
    pub version: String,
}

/// The directory could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the session directory is unavailable")]
pub struct DirectoryUnavailable(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Where every worker finds each legacy session's owner.
#[async_trait]
pub trait SessionDirectory: Send + Sync + std::fmt::Debug + 'static {
    /// Records `id` as held by `entry.owner`, for `ttl` unless renewed.
    async fn register(
        &self,
        id: &str,
        entry: &DirectoryEntry,
        ttl: Duration,
    ) -> Result<(), DirectoryUnavailable>;

    /// The entry of `id`, if it has one that has not expired.
    async fn lookup(&self, id: &str) -> Result<Option<DirectoryEntry>, DirectoryUnavailable>;

    /// Removes `id`.
    async fn forget(&self, id: &str) -> Result<(), DirectoryUnavailable>;

    /// Extends the entries of `ids` by `ttl` from now: the owner's sessions still live.
    async fn renew(&self, ids: &[String], ttl: Duration) -> Result<(), DirectoryUnavailable>;
}

/// A directory in this process's memory, for several servers in one process (tests, or an
/// embedder running workers as threads). Clones share one map.
#[derive(Debug, Clone, Default)]
pub struct LocalSessionDirectory {
    entries: Arc<Mutex<HashMap<String, (DirectoryEntry, Instant)>>>,
}

impl LocalSessionDirectory {
    /// An empty directory; clone it for each server that should share it.
    pub fn new() -> LocalSessionDirectory {
        LocalSessionDirectory::default()
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<String, (DirectoryEntry, Instant)>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl SessionDirectory for LocalSessionDirectory {
    async fn register(
        &self,
        id: &str,
        entry: &DirectoryEntry,
        ttl: Duration,
    ) -> Result<(), DirectoryUnavailable> {
        self.entries()
            .insert(id.to_owned(), (entry.clone(), Instant::now() + ttl));
        Ok(())
    }

    async fn lookup(&self, id: &str) -> Result<Option<DirectoryEntry>, DirectoryUnavailable> {
        let mut entries = self.entries();
        match entries.get(id) {
            Some((entry, until)) if *until > Instant::now() => Ok(Some(entry.clone())),
            Some(_) => {
                entries.remove(id);
                Ok(None)
            }
            None => Ok(None),
        }
    }

    async fn forget(&self, id: &str) -> Result<(), DirectoryUnavailable> {
        self.entries().remove(id);
        Ok(())
    }

    async fn renew(&self, ids: &[String], ttl: Duration) -> Result<(), DirectoryUnavailable> {
        let until = Instant::now() + ttl;
        let mut entries = self.entries();
        for id in ids {
            if let Some((_, expires)) = entries.get_mut(id) {
                *expires = until;
            }
        }
        Ok(())
    }
}

/// A process's part in a fleet's legacy sessions: the shared directory, and the URL the
/// other workers reach this one at (set once the server has bound its port).
#[derive(Debug, Clone)]
pub struct SessionFleet {
    directory: Arc<dyn SessionDirectory>,
    owner: Arc<OnceLock<String>>,
}

/// How often an owner renews its sessions' entries.
pub const RENEW_EVERY: Duration = Duration::from_secs(30);

/// How long an entry lives unrenewed: three renewals, so one missed renewal loses nothing.
pub const ENTRY_TTL: Duration = Duration::from_secs(90);

impl SessionFleet {
    /// Sessions registered in `directory`; this process's URL is set later, with
    /// [`SessionFleet::set_owner`].
    pub fn new(directory: Arc<dyn SessionDirectory>) -> SessionFleet {
        SessionFleet {
            directory,
            owner: Arc::new(OnceLock::new()),
        }
    }

    /// The base URL the other workers reach this process at; the first one set stays.
    pub fn set_owner(&self, url: String) {
        let _ = self.owner.set(url);
    }

    /// This process's URL, once set.
    pub fn owner(&self) -> Option<&str> {
        self.owner.get().map(String::as_str)
    }

    /// The directory.
    pub fn directory(&self) -> &dyn SessionDirectory {
        self.directory.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry() -> DirectoryEntry {
        DirectoryEntry {
            owner: "http://127.0.0.1:1".into(),
            tenant: "acme".into(),
            version: "2025-11-25".into(),
        }
    }

    #[tokio::test]
    async fn a_registered_session_is_found_by_every_clone_until_forgotten() {
        let one = LocalSessionDirectory::new();
        let other = one.clone();
        one.register("s1", &entry(), ENTRY_TTL).await.unwrap();
        assert_eq!(other.lookup("s1").await.unwrap(), Some(entry()));
        other.forget("s1").await.unwrap();
        assert_eq!(one.lookup("s1").await.unwrap(), None);
    }

    #[tokio::test]
    async fn an_entry_not_renewed_expires_and_a_renewed_one_lives_on() {
        let directory = LocalSessionDirectory::new();
        let short = Duration::from_millis(50);
        directory.register("gone", &entry(), short).await.unwrap();
        directory.register("kept", &entry(), short).await.unwrap();
        directory.renew(&["kept".into()], ENTRY_TTL).await.unwrap();
        tokio::time::sleep(Duration::from_millis(80)).await;
        assert_eq!(directory.lookup("gone").await.unwrap(), None);
        assert_eq!(directory.lookup("kept").await.unwrap(), Some(entry()));
    }
}
