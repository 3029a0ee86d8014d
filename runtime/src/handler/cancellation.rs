//! A request's cancellation: set once when its client goes away (a closed stream,
//! `notifications/cancelled`, the end of stdio's input), read by the runtime and by the
//! handler through its [`Context`](super::Context). stdio closes its listen streams with one
//! too.
//!
//! One flag and one `Notify` behind an `Arc`, rather than `tokio_util`'s `CancellationToken`:
//! a request's token is cloned and dropped several times on its way (the transport, the call,
//! the handler's context), and the tree of parents and children a `CancellationToken` keeps,
//! which nothing here uses, takes a lock on every clone, drop and check (its clones and drops
//! were 1.3% of an echo request's samples in a profile, BENCHMARKS.md "2026-12-05 (day)").
//! Here a clone and a drop are a reference count and a check is a load.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// Cancelled at most once, by whoever holds a clone; every clone sees it.
#[derive(Debug, Clone, Default)]
pub struct Cancellation(Arc<Shared>);

#[derive(Debug, Default)]
struct Shared {
    cancelled: AtomicBool,
    waiters: Notify,
}

impl Cancellation {
    /// Not cancelled yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Cancels: every clone is cancelled from now on and every [`Cancellation::cancelled`]
    /// waiting returns. Cancelling again does nothing.
    pub fn cancel(&self) {
        if !self.0.cancelled.swap(true, Ordering::AcqRel) {
            self.0.waiters.notify_waiters();
        }
    }

    /// Whether it has been cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::Acquire)
    }

    /// Returns once it is cancelled (at once if it already is).
    pub async fn cancelled(&self) {
        loop {
            let notified = self.0.waiters.notified();
            let mut notified = std::pin::pin!(notified);
            // Registered before the flag is read: a cancel between the two still wakes it.
            notified.as_mut().enable();
            if self.is_cancelled() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::task::{Context, Waker};
    use std::time::Duration;

    use super::Cancellation;

    #[test]
    fn a_clone_sees_the_cancel() {
        let token = Cancellation::new();
        let clone = token.clone();
        assert!(!clone.is_cancelled());
        token.cancel();
        assert!(clone.is_cancelled());
    }

    #[test]
    fn a_waiter_waiting_before_another_clone_cancels_is_done_after() {
        let token = Cancellation::new();
        let clone = token.clone();
        let mut waiting = std::pin::pin!(clone.cancelled());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(waiting.as_mut().poll(&mut cx).is_pending(), "waiting");
        token.cancel();
        assert!(waiting.as_mut().poll(&mut cx).is_ready(), "done");
    }

    #[tokio::test]
    async fn waiting_on_a_cancelled_token_returns_at_once() {
        let token = Cancellation::new();
        token.cancel();
        token.cancel();
        tokio::time::timeout(Duration::from_secs(5), token.cancelled())
            .await
            .expect("returned");
    }
}
