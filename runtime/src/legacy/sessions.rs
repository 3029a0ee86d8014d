//! The process's live legacy sessions: who owns each id, and the cap on how many there are.
//!
//! A session is found only by its id together with the tenant and the principal that began
//! it: an id presented to another tenant, or by another caller, is unknown (404), so an id
//! alone never hands over someone else's session.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use actix::Addr;
use rand::RngCore;

use super::Session;
use crate::budget::Account;
use crate::fleet::directory::Holder;
use crate::handler::Principal;
use crate::protocol::ProtocolVersion;

/// An `Mcp-Session-Id`: 128 random bits as 32 lowercase hex digits (visible ASCII).
pub type SessionId = Arc<str>;

/// A fresh unguessable id, from the operating system's generator.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

#[derive(Debug)]
struct Entry {
    addr: Addr<Session>,
    account: Account,
    tenant: Arc<str>,
    principal: Principal,
    version: ProtocolVersion,
}

/// A live session, as the transport needs it.
#[derive(Debug, Clone)]
pub struct Found {
    /// The session's actor, to hand the request to.
    pub addr: Addr<Session>,
    /// The version `initialize` negotiated.
    pub version: ProtocolVersion,
}

/// A cap was reached: no new session until one ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Full {
    /// The process already holds this many sessions, `legacy.max_sessions`.
    #[error("the server holds its maximum of {0} legacy sessions")]
    Process(usize),
    /// This caller (tenant and principal, or client address on an anonymous tenant) already
    /// holds this many, `legacy.max_sessions_per_caller`.
    #[error("this caller holds its maximum of {0} legacy sessions on this tenant")]
    Caller(usize),
}

/// The live sessions, and how many each caller of each tenant holds.
#[derive(Default)]
struct Live {
    sessions: HashMap<SessionId, Entry>,
    /// By account: a caller whose grants changed is still the same caller.
    per_caller: HashMap<Account, usize>,
}

/// The process's sessions. Two caps: one for the process (memory), one per caller of a
/// tenant ([`Account`]: a principal, or an anonymous client's address), so that one caller
/// cannot take every slot from everyone else.
pub struct Sessions {
    live: Mutex<Live>,
    max: usize,
    max_per_caller: usize,
}

impl std::fmt::Debug for Sessions {
    /// Counts only: a session id is as good as a credential on an anonymous tenant.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("live", &self.len())
            .field("max", &self.max)
            .field("max_per_caller", &self.max_per_caller)
            .finish()
    }
}

impl Sessions {
    /// No sessions yet: at most `max` in the process, `max_per_caller` per tenant and
    /// principal.
    pub(crate) fn new(max: usize, max_per_caller: usize) -> Self {
        Self {
            live: Mutex::new(Live::default()),
            max,
            max_per_caller,
        }
    }

    fn live(&self) -> MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves a new id for `principal` of `account`'s tenant, starting the session with
    /// `start`, unless a cap is reached.
    pub fn create(
        &self,
        account: &Account,
        principal: &Principal,
        version: ProtocolVersion,
        start: impl FnOnce(SessionId) -> Addr<Session>,
    ) -> Result<(SessionId, Addr<Session>), Full> {
        let mut live = self.live();
        if live.sessions.len() >= self.max {
            return Err(Full::Process(self.max));
        }
        let caller = live.per_caller.entry(account.clone()).or_default();
        if *caller >= self.max_per_caller {
            return Err(Full::Caller(self.max_per_caller));
        }
        *caller += 1;
        let id: SessionId = random_id().into();
        let addr = start(id.clone());
        live.sessions.insert(
            id.clone(),
            Entry {
                addr: addr.clone(),
                account: account.clone(),
                tenant: account.tenant().clone(),
                principal: principal.clone(),
                version,
            },
        );
        Ok((id, addr))
    }

    /// The session `id`, if it is live and belongs to this tenant and principal.
    pub fn find(&self, id: &str, tenant: &str, principal: &Principal) -> Option<Found> {
        let live = self.live();
        let entry = live.sessions.get(id)?;
        (&*entry.tenant == tenant && entry.principal.is(principal) && entry.addr.connected()).then(
            || Found {
                addr: entry.addr.clone(),
                version: entry.version,
            },
        )
    }

    /// Removes `id`; who held it, if it was live.
    pub fn remove(&self, id: &str) -> Option<Holder> {
        let mut live = self.live();
        let entry = live.sessions.remove(id)?;
        if let Some(n) = live.per_caller.get_mut(&entry.account) {
            *n -= 1;
            if *n == 0 {
                live.per_caller.remove(&entry.account);
            }
        }
        Some(Holder::of(&entry.account))
    }

    /// The actor of session `id`, if it is live here, whoever asks.
    pub(crate) fn address(&self, id: &str) -> Option<Addr<Session>> {
        self.live().sessions.get(id).map(|entry| entry.addr.clone())
    }

    /// Whether `id` is a session of this process, whoever presents it.
    pub fn holds(&self, id: &str) -> bool {
        self.live().sessions.contains_key(id)
    }

    /// Every live session's id, with the tenant and caller it is counted against.
    pub fn held(&self) -> Vec<(String, Holder)> {
        self.live()
            .sessions
            .iter()
            .map(|(id, entry)| (id.to_string(), Holder::of(&entry.account)))
            .collect()
    }

    /// How many sessions are live (`roundtrip_legacy_sessions` on `/metrics`).
    pub fn len(&self) -> usize {
        self.live().sessions.len()
    }

    /// Whether no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_ids_are_32_hex_digits_and_differ() {
        let (a, b) = (random_id(), random_id());
        assert_eq!(a.len(), 32);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && (0x21..=0x7e).contains(&c)));
        assert_ne!(a, b);
    }
}
