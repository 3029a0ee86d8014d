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
use crate::handler::Principal;
use crate::protocol::ProtocolVersion;

/// An `Mcp-Session-Id`: 128 random bits as 32 lowercase hex digits (visible ASCII).
pub type SessionId = Arc<str>;

/// A fresh unguessable id, from the operating system's generator.
pub fn random_id() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[derive(Debug)]
struct Entry {
    addr: Addr<Session>,
    tenant: Arc<str>,
    principal: Principal,
    version: ProtocolVersion,
}

/// A live session, as the transport needs it.
#[derive(Debug, Clone)]
pub struct Found {
    pub addr: Addr<Session>,
    /// The version `initialize` negotiated.
    pub version: ProtocolVersion,
}

/// The cap was reached: no new session until one ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the server holds its maximum of {0} legacy sessions")]
pub struct Full(pub usize);

#[derive(Debug)]
pub struct Sessions {
    live: Mutex<HashMap<SessionId, Entry>>,
    max: usize,
}

impl Sessions {
    pub fn new(max: usize) -> Self {
        Self {
            live: Mutex::new(HashMap::new()),
            max,
        }
    }

    fn live(&self) -> MutexGuard<'_, HashMap<SessionId, Entry>> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reserves a new id for `tenant` and `principal`, starting the session with `start`,
    /// unless the cap is reached.
    pub fn create(
        &self,
        tenant: &str,
        principal: &Principal,
        version: ProtocolVersion,
        start: impl FnOnce(SessionId) -> Addr<Session>,
    ) -> Result<SessionId, Full> {
        let mut live = self.live();
        if live.len() >= self.max {
            return Err(Full(self.max));
        }
        let id: SessionId = random_id().into();
        let addr = start(id.clone());
        live.insert(
            id.clone(),
            Entry {
                addr,
                tenant: tenant.into(),
                principal: principal.clone(),
                version,
            },
        );
        Ok(id)
    }

    /// The session `id`, if it is live and belongs to this tenant and principal.
    pub fn find(&self, id: &str, tenant: &str, principal: &Principal) -> Option<Found> {
        let live = self.live();
        let entry = live.get(id)?;
        (&*entry.tenant == tenant && entry.principal == *principal && entry.addr.connected()).then(
            || Found {
                addr: entry.addr.clone(),
                version: entry.version,
            },
        )
    }

    /// Removes `id`; the session's address if it was live.
    pub fn remove(&self, id: &str) -> Option<Addr<Session>> {
        self.live().remove(id).map(|e| e.addr)
    }

    pub fn len(&self) -> usize {
        self.live().len()
    }

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
