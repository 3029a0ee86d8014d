//! The stdio server's tables of running requests: by id, each with its cancellation and the
//! serial number of the request that holds the id now.
//!
//! An id is free again once the client cancels its request, so a new request may take it
//! while the cancelled one still winds down. The serial keeps them apart: a request's task
//! takes only its own entry out ([`Table::take`]), never the newer one's.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use crate::handler::Cancellation;
use crate::protocol::RequestId;

/// Running requests by id.
#[derive(Debug, Default)]
pub(super) struct Table {
    next: Cell<u64>,
    entries: RefCell<HashMap<RequestId, (u64, Cancellation)>>,
}

impl Table {
    /// Enters `id` with its cancellation; the serial to take it out with.
    pub(super) fn insert(&self, id: RequestId, cancel: Cancellation) -> u64 {
        let serial = self.next.get();
        self.next.set(serial + 1);
        self.entries.borrow_mut().insert(id, (serial, cancel));
        serial
    }

    pub(super) fn contains(&self, id: &RequestId) -> bool {
        self.entries.borrow().contains_key(id)
    }

    pub(super) fn len(&self) -> usize {
        self.entries.borrow().len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.entries.borrow().is_empty()
    }

    /// Takes out the entry of request `serial` under `id`: whether it was still there.
    pub(super) fn take(&self, id: &RequestId, serial: u64) -> bool {
        let mut entries = self.entries.borrow_mut();
        if entries.get(id).is_some_and(|(s, _)| *s == serial) {
            entries.remove(id);
            return true;
        }
        false
    }

    /// Takes out whatever request holds `id` and cancels it.
    pub(super) fn cancel(&self, id: &RequestId) {
        if let Some((_, token)) = self.entries.borrow_mut().remove(id) {
            token.cancel();
        }
    }

    /// Cancels every entry, leaving them in.
    pub(super) fn cancel_all(&self) {
        for (_, token) in self.entries.borrow().values() {
            token.cancel();
        }
    }

    /// Takes out every entry: the ids, each cancelled.
    pub(super) fn cancel_and_take_all(&self) -> Vec<RequestId> {
        let taken: Vec<_> = self.entries.borrow_mut().drain().collect();
        taken
            .into_iter()
            .map(|(id, (_, token))| {
                token.cancel();
                id
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_takes_out_only_its_own_entry_not_a_newer_one_under_its_id() {
        let table = Table::default();
        let id = RequestId::String("a".into());
        let old = Cancellation::new();
        let first = table.insert(id.clone(), old.clone());
        table.cancel(&id);
        assert!(old.is_cancelled());
        let second = table.insert(id.clone(), Cancellation::new());
        assert!(
            !table.take(&id, first),
            "the cancelled request's entry is gone"
        );
        assert!(table.contains(&id), "the newer request keeps its entry");
        assert!(table.take(&id, second));
        assert!(table.is_empty());
    }

    #[test]
    fn taking_all_cancels_each() {
        let table = Table::default();
        let token = Cancellation::new();
        table.insert(RequestId::String("a".into()), token.clone());
        assert_eq!(table.cancel_and_take_all(), [RequestId::String("a".into())]);
        assert!(token.is_cancelled() && table.is_empty());
    }
}
