//! A request in flight: while its client waits, this guard lives in the request's future (or
//! its SSE body). actix drops both when the client goes away; the guard then cancels the
//! handler and counts the request as cancelled. A request whose reply was framed is
//! `finish`ed and the guard does nothing.

use std::sync::Arc;

use super::McpService;
use crate::handler::Cancellation;

pub(crate) struct InFlight {
    cancel: Cancellation,
    service: Arc<McpService>,
    done: bool,
}

impl InFlight {
    pub(crate) fn new(cancel: Cancellation, service: Arc<McpService>) -> Self {
        Self {
            cancel,
            service,
            done: false,
        }
    }

    /// The reply was framed: nothing to cancel.
    pub(crate) fn finish(mut self) {
        self.done = true;
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.done {
            self.cancel.cancel();
            self.service.metrics.record_reply("cancelled");
        }
    }
}
