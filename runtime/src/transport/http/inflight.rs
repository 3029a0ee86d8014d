//! A request in flight: while its client waits, this guard lives in the request's future (or
//! its SSE body). actix drops both when the client goes away; the guard then cancels the
//! handler and counts the request as cancelled. A request whose reply was framed is
//! `finish`ed and the guard does nothing.
//!
//! In the request's future it borrows the service the future already holds (an `Arc` cloned
//! for it was two atomic operations per request); a stream's body, which outlives the
//! future, takes an owned guard ([`InFlight::into_owned`]).

use std::borrow::Cow;
use std::sync::Arc;

use super::McpService;
use crate::handler::Cancellation;

pub(crate) struct InFlight<'a> {
    cancel: Cancellation,
    service: Cow<'a, Arc<McpService>>,
    done: bool,
}

impl<'a> InFlight<'a> {
    pub(crate) fn new(cancel: Cancellation, service: &'a Arc<McpService>) -> Self {
        Self {
            cancel,
            service: Cow::Borrowed(service),
            done: false,
        }
    }

    /// The same guard, owning what it needs: for a stream's body. This one is spent.
    pub(crate) fn into_owned(mut self) -> InFlight<'static> {
        let owned = InFlight {
            cancel: self.cancel.clone(),
            service: Cow::Owned(Arc::clone(&self.service)),
            done: self.done,
        };
        self.done = true;
        owned
    }

    /// The reply was framed: nothing to cancel.
    pub(crate) fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.cancel.cancel();
            self.service.metrics.record_reply("cancelled");
        }
    }
}
