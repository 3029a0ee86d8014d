//! Where key rings live beyond one `KeyManager`: the [`KeyShare`] trait, its in-process
//! default [`LocalKeyShare`], and [`MemoryKeyShare`], one store several KeyManagers share.
//!
//! Modern requests are stateless, so any worker process may get the retry of a request
//! another process sealed: every process must hold the same keys. The `KeyManager` reads
//! rings through this trait before creating one, and writes every change back. The embedded
//! default keeps rings in memory, which is right for a single process; a shared backend
//! (Redis, with keys wrapped under a master key at rest) implements the same trait.
//!
//! The trait is synchronous for now. It is only ever called from the `KeyManager`, which runs
//! on its own Arbiter, off the request path; a networked backend will either block there or
//! the trait grows async methods then.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::keyring::KeyRing;

/// Storage for tenants' key rings, shared by every process that must open each other's
/// tokens.
pub trait KeyShare: Send + 'static {
    /// The stored ring of `tenant`, if any.
    fn load(&mut self, tenant: &str) -> Option<KeyRing>;
    /// Stores `ring` as `tenant`'s ring, replacing any previous one.
    fn store(&mut self, tenant: &str, ring: &KeyRing);
}

/// Key rings kept in this process only: the default when nothing is shared. Rings do not
/// survive a restart, and other processes cannot open this one's tokens.
#[derive(Debug, Default)]
pub struct LocalKeyShare {
    rings: HashMap<String, KeyRing>,
}

impl LocalKeyShare {
    /// An empty share.
    pub fn new() -> LocalKeyShare {
        LocalKeyShare::default()
    }
}

impl KeyShare for LocalKeyShare {
    fn load(&mut self, tenant: &str) -> Option<KeyRing> {
        self.rings.get(tenant).cloned()
    }

    fn store(&mut self, tenant: &str, ring: &KeyRing) {
        self.rings.insert(tenant.to_owned(), ring.clone());
    }
}

/// Key rings in memory, shared by every KeyManager that holds a clone of this handle: what
/// worker processes sharing one store see of each other, within one process (several servers
/// in one process, and the tests that model a fleet). A ring one KeyManager creates or rotates
/// is the ring the others load.
#[derive(Debug, Clone, Default)]
pub struct MemoryKeyShare {
    rings: Arc<Mutex<HashMap<String, KeyRing>>>,
}

impl MemoryKeyShare {
    /// An empty store; clone it for each KeyManager that shares it.
    pub fn new() -> MemoryKeyShare {
        MemoryKeyShare::default()
    }

    fn rings(&self) -> std::sync::MutexGuard<'_, HashMap<String, KeyRing>> {
        self.rings.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl KeyShare for MemoryKeyShare {
    fn load(&mut self, tenant: &str) -> Option<KeyRing> {
        self.rings().get(tenant).cloned()
    }

    fn store(&mut self, tenant: &str, ring: &KeyRing) {
        self.rings().insert(tenant.to_owned(), ring.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sealing::codec::StateKey;

    #[test]
    fn a_stored_ring_loads_back_for_its_tenant_only() {
        let mut share = LocalKeyShare::new();
        assert!(share.load("acme").is_none());
        let ring = KeyRing::new(StateKey::generate());
        share.store("acme", &ring);
        let loaded = share.load("acme").unwrap();
        assert_eq!(loaded.active().kid(), ring.active().kid());
        assert!(share.load("other").is_none());
    }

    #[test]
    fn a_ring_stored_through_one_memory_share_loads_through_its_clone() {
        let mut one = MemoryKeyShare::new();
        let mut other = one.clone();
        let ring = KeyRing::new(StateKey::generate());
        one.store("acme", &ring);
        assert_eq!(
            other.load("acme").unwrap().active().kid(),
            ring.active().kid()
        );
        assert!(
            LocalKeyShare::new().load("acme").is_none(),
            "a local share is its own"
        );
    }

    #[test]
    fn storing_again_replaces_the_ring() {
        let mut share = LocalKeyShare::new();
        let ring = KeyRing::new(StateKey::generate());
        share.store("acme", &ring);
        let rotated = ring.rotated(StateKey::generate(), 10);
        share.store("acme", &rotated);
        assert_eq!(
            share.load("acme").unwrap().active().kid(),
            rotated.active().kid()
        );
    }
}
