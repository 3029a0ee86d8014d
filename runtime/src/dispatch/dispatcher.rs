//! The Dispatcher actor: one per HTTP worker's app (and one for stdio). It owns the worker's
//! policy view, a [`WorkerState`], and keeps it current: changes arrive as messages (today
//! the KeyManager's `KeyRingsChanged`).
//!
//! It runs no request. Requests run on their own tasks and read the view
//! ([`WorkerState::run`]), because a mailbox hop per request cost about a tenth of the echo
//! throughput (BENCHMARKS.md); an actor is still the one writer of the view, so a change
//! never races a request.

use actix::prelude::*;

use super::config::RuntimeConfig;
use super::worker::{StateKeys, WorkerState};
use crate::sealing::{KeyRingsChanged, Subscribe};

/// The worker's Dispatcher: the owner of its [`WorkerState`].
#[derive(Debug)]
pub(crate) struct Dispatcher {
    worker: WorkerState,
}

impl Dispatcher {
    /// Starts a Dispatcher on the current arbiter, with a fresh view; returns its address and
    /// the view its requests read. The actor lives as long as the address does.
    pub(crate) fn start_with(
        config: std::sync::Arc<RuntimeConfig>,
        keys: Option<StateKeys>,
    ) -> (Addr<Dispatcher>, WorkerState) {
        let worker = WorkerState::new(config, keys);
        let addr = Dispatcher {
            worker: worker.clone(),
        }
        .start();
        (addr, worker)
    }
}

impl Actor for Dispatcher {
    type Context = actix::Context<Self>;

    fn started(&mut self, ctx: &mut Self::Context) {
        if let Some(key_manager) = self.worker.key_manager() {
            key_manager.do_send(Subscribe(ctx.address().downgrade().recipient()));
        }
    }
}

impl Handler<KeyRingsChanged> for Dispatcher {
    type Result = ();

    fn handle(&mut self, KeyRingsChanged(rings): KeyRingsChanged, _ctx: &mut Self::Context) {
        self.worker.set_rings(rings);
    }
}
