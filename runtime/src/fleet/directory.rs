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
//! An entry expires unless its owner renews it (every `fleet::RENEW_EVERY`), so a dead
//! owner's sessions leave the directory on their own; a worker that fails to reach an owner
//! forgets the entry at once.
//!
//! The directory is also where a fleet counts its sessions: recording one checks the
//! fleet-wide caps ([`FleetCaps`]) in the same atomic step, so a caller held to N sessions
//! holds N across the fleet, not N per worker.
//!
//! The shim's answers need no directory of their own: an answer is a POST with the
//! session's id, so it is forwarded to the owner like any other, and claimed there once by
//! the owner's `LegacyBridge` (202 for the first, an error for any other), exactly as if it
//! had landed on the owner.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What the directory holds for a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectoryEntry {
    /// The owner's base URL, as the other workers reach it (`http://10.0.0.5:8080`).
    pub owner: String,
    /// Who holds the session: its tenant (a request for another tenant is not forwarded)
    /// and caller (counted against the fleet's per-caller cap).
    #[serde(flatten)]
    pub holder: Holder,
    /// The principal that began it: a request from another is answered 404 where it lands,
    /// not forwarded. Empty in an entry an older worker wrote: then only the owner checks.
    #[serde(default)]
    pub principal: String,
    /// The version `initialize` negotiated.
    pub version: String,
    /// The client capabilities `initialize` declared, in the bounded form the owner keeps.
    #[serde(default)]
    pub capabilities: Map<String, Value>,
}

/// The tenant and caller a session is counted against.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Holder {
    /// The tenant's slug.
    pub tenant: Arc<str>,
    /// The caller within the tenant (`budget::Account::caller`): a principal id, or
    /// `anonymous@<ip>`. Empty in an entry an older worker wrote.
    #[serde(default)]
    pub caller: Arc<str>,
}

impl Holder {
    /// The holder `account` names (the account's own strings, shared).
    pub fn of(account: &crate::budget::Account) -> Holder {
        Holder {
            tenant: account.tenant().clone(),
            caller: account.caller().clone(),
        }
    }
}

/// The fleet-wide caps on sessions, checked by the directory as it records one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FleetCaps {
    /// Live sessions in the whole fleet.
    pub sessions: usize,
    /// Live sessions one caller of one tenant holds in the whole fleet.
    pub per_caller: usize,
}

/// Why the directory recorded no session.
#[derive(Debug, thiserror::Error)]
pub enum NotRegistered {
    /// A fleet-wide cap is reached.
    #[error(transparent)]
    Full(#[from] FleetFull),
    /// The directory could not be written.
    #[error(transparent)]
    Unavailable(#[from] DirectoryUnavailable),
}

/// A fleet-wide cap is reached: no new session until one ends somewhere in the fleet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FleetFull {
    /// The fleet holds `legacy.max_fleet_sessions`.
    #[error("the fleet holds its maximum of {0} legacy sessions")]
    Fleet(usize),
    /// This caller holds `legacy.max_sessions_per_caller` across the fleet.
    #[error("this caller holds its maximum of {0} legacy sessions on this tenant")]
    Caller(usize),
}

/// The directory could not be read or written.
#[derive(Debug, thiserror::Error)]
#[error("the session directory is unavailable")]
pub struct DirectoryUnavailable(#[source] pub Box<dyn std::error::Error + Send + Sync>);

/// Where every worker finds each legacy session's owner, and where the fleet's caps on
/// sessions are counted.
#[async_trait]
pub trait SessionDirectory: Send + Sync + std::fmt::Debug + 'static {
    /// Records `id` as held by `entry.owner`, for `ttl` unless renewed, unless that would
    /// pass one of `caps`; the check and the record are one atomic step.
    async fn register(
        &self,
        id: &str,
        entry: &DirectoryEntry,
        ttl: Duration,
        caps: FleetCaps,
    ) -> Result<(), NotRegistered>;

    /// The entry of `id`, if it has one that has not expired.
    async fn lookup(&self, id: &str) -> Result<Option<DirectoryEntry>, DirectoryUnavailable>;

    /// Removes `id`, held by `holder`.
    async fn forget(&self, id: &str, holder: &Holder) -> Result<(), DirectoryUnavailable>;

    /// Extends the entries of `sessions` (ids with their holders) by `ttl` from now: the
    /// owner's sessions still live. Returns the ids it no longer held (expired, forgotten by
    /// a worker that could not reach the owner, or lost with a Redis restarted empty): no
    /// other worker can find those sessions any more, so the owner ends them.
    async fn renew(
        &self,
        sessions: &[(String, Holder)],
        ttl: Duration,
    ) -> Result<Vec<String>, DirectoryUnavailable>;
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
        caps: FleetCaps,
    ) -> Result<(), NotRegistered> {
        let now = Instant::now();
        let mut entries = self.entries();
        entries.retain(|_, (_, until)| *until > now);
        if entries.len() >= caps.sessions {
            return Err(FleetFull::Fleet(caps.sessions).into());
        }
        let held = entries
            .values()
            .filter(|(e, _)| e.holder == entry.holder)
            .count();
        if held >= caps.per_caller {
            return Err(FleetFull::Caller(caps.per_caller).into());
        }
        entries.insert(id.to_owned(), (entry.clone(), now + ttl));
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

    async fn forget(&self, id: &str, _holder: &Holder) -> Result<(), DirectoryUnavailable> {
        self.entries().remove(id);
        Ok(())
    }

    async fn renew(
        &self,
        sessions: &[(String, Holder)],
        ttl: Duration,
    ) -> Result<Vec<String>, DirectoryUnavailable> {
        let now = Instant::now();
        let mut entries = self.entries();
        let mut lost = Vec::new();
        for (id, _) in sessions {
            match entries.get_mut(id) {
                Some((_, expires)) if *expires > now => *expires = now + ttl,
                _ => lost.push(id.clone()),
            }
        }
        Ok(lost)
    }
}

/// What every [`SessionDirectory`] does, as test bodies each implementation's tests run:
/// `one` and `other` are two workers' handles on the same directory.
#[cfg(test)]
pub(crate) mod contract {
    use super::*;

    const TTL: Duration = Duration::from_secs(90);

    /// A session of `caller` on tenant `acme`.
    pub(crate) fn entry_of(caller: &str) -> DirectoryEntry {
        let mut capabilities = Map::new();
        capabilities.insert("elicitation".into(), serde_json::json!({}));
        DirectoryEntry {
            owner: "http://127.0.0.1:1".into(),
            holder: Holder {
                tenant: "acme".into(),
                caller: caller.into(),
            },
            principal: caller.into(),
            version: "2025-11-25".into(),
            capabilities,
        }
    }

    fn held(id: &str, caller: &str) -> (String, Holder) {
        (id.to_owned(), entry_of(caller).holder)
    }

    /// Caps that never bind.
    const ROOMY: FleetCaps = FleetCaps {
        sessions: 1_000,
        per_caller: 1_000,
    };

    pub(crate) async fn a_session_registered_by_one_worker_is_found_by_another_until_forgotten(
        one: &dyn SessionDirectory,
        other: &dyn SessionDirectory,
    ) {
        let entry = entry_of("k1");
        one.register("s1", &entry, TTL, ROOMY).await.unwrap();
        assert_eq!(other.lookup("s1").await.unwrap(), Some(entry.clone()));
        other.forget("s1", &entry.holder).await.unwrap();
        assert_eq!(one.lookup("s1").await.unwrap(), None);
    }

    /// Entries registered for `short` and looked up after `wait`.
    pub(crate) async fn an_entry_expires_unless_renewed(
        directory: &dyn SessionDirectory,
        short: Duration,
        wait: Duration,
    ) {
        let entry = entry_of("k1");
        directory
            .register("gone", &entry, short, ROOMY)
            .await
            .unwrap();
        directory
            .register("kept", &entry, short, ROOMY)
            .await
            .unwrap();
        directory.renew(&[held("kept", "k1")], TTL).await.unwrap();
        tokio::time::sleep(wait).await;
        assert_eq!(directory.lookup("gone").await.unwrap(), None);
        assert_eq!(directory.lookup("kept").await.unwrap(), Some(entry));
    }

    pub(crate) async fn renewing_names_the_sessions_the_directory_no_longer_holds(
        directory: &dyn SessionDirectory,
    ) {
        let entry = entry_of("k1");
        directory
            .register("kept", &entry, TTL, ROOMY)
            .await
            .unwrap();
        directory
            .register("forgotten", &entry, TTL, ROOMY)
            .await
            .unwrap();
        directory.forget("forgotten", &entry.holder).await.unwrap();
        let held = [held("kept", "k1"), held("forgotten", "k1")];
        assert_eq!(directory.renew(&held, TTL).await.unwrap(), ["forgotten"]);
    }

    pub(crate) async fn a_caller_at_its_cap_on_one_worker_is_refused_on_another(
        one: &dyn SessionDirectory,
        other: &dyn SessionDirectory,
    ) {
        let caps = FleetCaps {
            sessions: 100,
            per_caller: 2,
        };
        one.register("a", &entry_of("k1"), TTL, caps).await.unwrap();
        other
            .register("b", &entry_of("k1"), TTL, caps)
            .await
            .unwrap();
        let refused = other.register("c", &entry_of("k1"), TTL, caps).await;
        assert!(matches!(
            refused,
            Err(NotRegistered::Full(FleetFull::Caller(2)))
        ));
        other
            .register("d", &entry_of("k2"), TTL, caps)
            .await
            .unwrap();
        assert_eq!(one.lookup("c").await.unwrap(), None);
    }

    pub(crate) async fn a_forgotten_session_frees_its_slot_in_the_fleet(
        directory: &dyn SessionDirectory,
    ) {
        let caps = FleetCaps {
            sessions: 2,
            per_caller: 100,
        };
        directory
            .register("a", &entry_of("k1"), TTL, caps)
            .await
            .unwrap();
        directory
            .register("b", &entry_of("k2"), TTL, caps)
            .await
            .unwrap();
        let refused = directory.register("c", &entry_of("k3"), TTL, caps).await;
        assert!(matches!(
            refused,
            Err(NotRegistered::Full(FleetFull::Fleet(2)))
        ));
        directory.forget("a", &entry_of("k1").holder).await.unwrap();
        directory
            .register("c", &entry_of("k3"), TTL, caps)
            .await
            .unwrap();
    }

    /// Entries registered for `short`, the fleet counted after `wait`.
    pub(crate) async fn an_expired_session_frees_its_slot_and_a_renewed_one_keeps_it(
        directory: &dyn SessionDirectory,
        short: Duration,
        wait: Duration,
    ) {
        let caps = FleetCaps {
            sessions: 2,
            per_caller: 100,
        };
        directory
            .register("gone", &entry_of("k1"), short, caps)
            .await
            .unwrap();
        directory
            .register("kept", &entry_of("k2"), short, caps)
            .await
            .unwrap();
        directory.renew(&[held("kept", "k2")], TTL).await.unwrap();
        tokio::time::sleep(wait).await;
        directory
            .register("new", &entry_of("k3"), TTL, caps)
            .await
            .unwrap();
        let refused = directory.register("more", &entry_of("k4"), TTL, caps).await;
        assert!(matches!(
            refused,
            Err(NotRegistered::Full(FleetFull::Fleet(2)))
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::contract;
    use super::*;

    #[tokio::test]
    async fn a_session_registered_by_one_worker_is_found_by_another_until_forgotten() {
        let one = LocalSessionDirectory::new();
        contract::a_session_registered_by_one_worker_is_found_by_another_until_forgotten(
            &one,
            &one.clone(),
        )
        .await;
    }

    #[tokio::test]
    async fn an_entry_expires_unless_renewed() {
        let (short, wait) = (Duration::from_millis(50), Duration::from_millis(200));
        contract::an_entry_expires_unless_renewed(&LocalSessionDirectory::new(), short, wait).await;
    }

    #[tokio::test]
    async fn renewing_names_the_sessions_the_directory_no_longer_holds() {
        contract::renewing_names_the_sessions_the_directory_no_longer_holds(
            &LocalSessionDirectory::new(),
        )
        .await;
    }

    #[tokio::test]
    async fn a_caller_at_its_cap_on_one_worker_is_refused_on_another() {
        let one = LocalSessionDirectory::new();
        contract::a_caller_at_its_cap_on_one_worker_is_refused_on_another(&one, &one.clone()).await;
    }

    #[tokio::test]
    async fn a_forgotten_session_frees_its_slot_in_the_fleet() {
        contract::a_forgotten_session_frees_its_slot_in_the_fleet(&LocalSessionDirectory::new())
            .await;
    }

    #[tokio::test]
    async fn an_expired_session_frees_its_slot_and_a_renewed_one_keeps_it() {
        let (short, wait) = (Duration::from_millis(50), Duration::from_millis(200));
        contract::an_expired_session_frees_its_slot_and_a_renewed_one_keeps_it(
            &LocalSessionDirectory::new(),
            short,
            wait,
        )
        .await;
    }

    #[test]
    fn an_entry_written_without_caller_principal_or_capabilities_still_reads() {
        let older = r#"{"owner":"http://10.0.0.5:8080","tenant":"acme","version":"2025-11-25"}"#;
        let entry: DirectoryEntry = serde_json::from_str(older).unwrap();
        assert_eq!(&*entry.holder.tenant, "acme");
        assert!(entry.principal.is_empty() && entry.capabilities.is_empty());
    }
}
