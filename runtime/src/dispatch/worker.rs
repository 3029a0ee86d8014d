//! What a worker's requests run with: the [`WorkerState`], which holds the runtime config
//! and the worker's policy view (today its snapshot of every tenant's key ring), and
//! [`WorkerState::run`], which runs a call on the caller's own task.
//!
//! The worker's Dispatcher actor (`dispatcher.rs`) owns the view and keeps it current as
//! changes arrive as messages; requests only read it, so none waits on the actor's mailbox.

use std::cell::RefCell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::Poll;

use actix::Addr;
use futures_util::future::Either;
use tracing::Instrument as _;

use super::call::Call;
use super::config::RuntimeConfig;
use super::pipeline::dispatch;
use super::protection::{KeyRequests, Protection};
use super::reply::Reply;
use crate::protocol::McpError;
use crate::sealing::{EnsureTenant, KeyManager, KeyRings, SetTenantGrace, ShareHealth};

/// What a sealing worker starts with: the KeyManager (rings of tenants created later,
/// rotation, updates) and the rings current at start-up.
#[derive(Clone)]
pub struct StateKeys {
    /// The process's KeyManager.
    pub key_manager: Addr<KeyManager>,
    /// Every tenant's ring at start-up.
    pub rings: KeyRings,
    /// How the KeyManager's share is doing, for `/metrics` and `/readyz`.
    pub share_health: ShareHealth,
}

impl std::fmt::Debug for StateKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StateKeys")
            .field("tenants", &self.rings.len())
            .finish_non_exhaustive()
    }
}

/// The config and policy view a worker's requests are dispatched with. Shared on the
/// worker's thread by its Dispatcher actor, which writes the view, and its transport, which
/// runs requests with it.
#[derive(Debug, Clone)]
pub(crate) struct WorkerState(Rc<Shared>);

#[derive(Debug)]
struct Shared {
    /// The worker's own copy of the runtime config: a request takes it with a reference count
    /// that is not atomic (an `Arc`'s count, taken and given back per request, is two atomic
    /// operations on a line every worker shares).
    config: Rc<RuntimeConfig>,
    /// `None` when this worker does not seal.
    key_manager: Option<Addr<KeyManager>>,
    /// Where a sealed request reaches the KeyManager: made once, shared by every request's
    /// protection (cloning an actix address per request cost two allocations and three
    /// atomic operations).
    rotation: Option<Rc<KeyRequests>>,
    /// The policy view: every tenant's key ring, as the KeyManager last pushed it.
    rings: RefCell<KeyRings>,
}

impl WorkerState {
    /// `keys` is required when `config.sealing` is set.
    pub(crate) fn new(config: Arc<RuntimeConfig>, keys: Option<StateKeys>) -> Self {
        let (key_manager, rings) = match keys {
            Some(k) => (Some(k.key_manager), k.rings),
            None => (None, KeyRings::default()),
        };
        let rotation = key_manager.as_ref().map(|km| {
            Rc::new(KeyRequests {
                rotate: km.clone().recipient(),
                refresh: km.clone().recipient(),
            })
        });
        Self(Rc::new(Shared {
            config: Rc::new(RuntimeConfig::clone(&config)),
            key_manager,
            rotation,
            rings: RefCell::new(rings),
        }))
    }

    /// The KeyManager, when this worker seals: the Dispatcher subscribes to it.
    pub(crate) fn key_manager(&self) -> Option<&Addr<KeyManager>> {
        self.0.key_manager.as_ref()
    }

    /// A new snapshot of the rings, from the worker's Dispatcher.
    pub(crate) fn set_rings(&self, rings: KeyRings) {
        *self.0.rings.borrow_mut() = rings;
    }

    /// The protection `call` needs, or `None` when its tenant's ring must first be fetched.
    fn protection(&self, call: &Call) -> Option<Protection> {
        // Only the methods that may carry a state need the tenant's key ring.
        if !call.request.method.may_require_input() {
            return Some(Protection::PassThrough);
        }
        let (Some(policy), Some(rotation)) = (&self.0.config.sealing, &self.0.rotation) else {
            return Some(Protection::PassThrough);
        };
        let ring = self.0.rings.borrow().get(call.tenant.slug())?.clone();
        Some(Protection::sealed(
            policy,
            call.view.settings(),
            ring,
            rotation.clone(),
        ))
    }

    /// Runs `call` on the caller's task, with this worker's view: no actor hop. For a
    /// request answered with one body, whose reply is written as soon as it is ready.
    ///
    /// Its first poll happens on the caller's task, so a handler that completes at once (most
    /// do) costs no task, mailbox or message. One that has to wait moves to a task of its own,
    /// so that it still sees its cancellation and cleans up if the caller goes away (dropping
    /// the caller would otherwise drop the handler mid-await).
    ///
    /// A reply ready at once is handed back after `after_the_ready_tasks` (one yield): the
    /// worker first reads and runs the other requests already waiting on it, and then writes
    /// their answers one after the other. Written each as soon as it was ready, every answer
    /// woke its client's reader on its own; measured under load on loopback (BENCHMARKS.md),
    /// those wake-ups cost more than the yield, and alone on a connection the yield costs
    /// nothing.
    ///
    /// A call whose tenant's ring this worker has not seen (a tenant created after start-up)
    /// first fetches it from the KeyManager, on a task of its own.
    pub(crate) fn run(&self, call: Call) -> impl Future<Output = Reply> {
        self.run_then(call, Yield::WhenReady)
    }

    /// [`WorkerState::run`] for a request that may stream: its transport races the reply
    /// against the request's first notification, so a reply ready at once must be ready at
    /// the first poll (no yield), or a notification sent before it would turn a plain
    /// answer into a stream.
    pub(crate) fn run_streamed(&self, call: Call) -> impl Future<Output = Reply> {
        self.run_then(call, Yield::Never)
    }

    fn run_then(&self, call: Call, yielding: Yield) -> impl Future<Output = Reply> {
        let config = self.0.config.clone();
        match self.protection(&call) {
            // Boxed here, where it is made: a future this size moved by value into
            // `first_poll_here` and then into a box would be copied twice per request.
            Some(protection) => Either::Left(first_poll_here(
                Box::pin(dispatch(call, protection, config)),
                yielding,
            )),
            // Boxed too, though rare: unboxed, the whole pipeline inside it would make the
            // returned future that size on the usual path as well, and the transport moves
            // it twice per request (about 2.3 KB a move, measured with a uprobe on memmove).
            None => {
                let key_manager = self.0.key_manager.clone();
                let rotation = self.0.rotation.clone();
                // On a task of its own, under the span current here: the request's span,
                // made inside, stays the child of the one the transport runs it under.
                Either::Right(Box::pin(on_its_own_task(
                    async move {
                        match fetch_ring(key_manager.zip(rotation), &call, &config).await {
                            Some(protection) => dispatch(call, protection, config).await,
                            None if call.cancel.is_cancelled() => Reply::Cancelled,
                            None => Reply::Error(McpError::internal(
                                "Internal error: no key ring for tenant",
                            )),
                        }
                    }
                    .in_current_span(),
                )))
            }
        }
    }
}

/// Whether a reply ready at the first poll is handed back after one yield.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Yield {
    WhenReady,
    Never,
}

/// Polls `work` once on the caller's task; if it is not done, it goes on on a task of its
/// own (see [`WorkerState::run`]).
async fn first_poll_here<F>(mut work: Pin<Box<F>>, yielding: Yield) -> Reply
where
    F: Future<Output = Reply> + 'static,
{
    let first = std::future::poll_fn(|cx| Poll::Ready(work.as_mut().poll(cx))).await;
    match first {
        Poll::Ready(reply) => {
            if yielding == Yield::WhenReady {
                after_the_ready_tasks().await;
            }
            reply
        }
        Poll::Pending => on_its_own_task(work).await,
    }
}

/// Runs `work` on a task of its own: the caller going away does not drop it.
async fn on_its_own_task(work: impl Future<Output = Reply> + 'static) -> Reply {
    actix_rt::spawn(work)
        .await
        .unwrap_or_else(|_| Reply::unavailable())
}

/// Returns once the worker has polled the tasks that were ready before this one: the task wakes
/// itself and goes to the back of the worker's queue. Unlike tokio's `yield_now`, which waits
/// for the next poll of the I/O driver (a syscall even when nothing else is waiting), it
/// returns at once on an idle worker, so a lone connection pays nothing for it.
async fn after_the_ready_tasks() {
    let mut yielded = false;
    std::future::poll_fn(|cx| {
        if yielded {
            return Poll::Ready(());
        }
        yielded = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    })
    .await;
}

/// The ring of a tenant this worker has not seen yet (created after start-up): the one time
/// a request waits on the KeyManager, bounded by the request timeout and by the client
/// staying. The tenant's own state lifetime becomes its rotation grace first. The
/// KeyManager pushes the new ring to every worker's Dispatcher as well.
async fn fetch_ring(
    keys: Option<(Addr<KeyManager>, Rc<KeyRequests>)>,
    call: &Call,
    config: &RuntimeConfig,
) -> Option<Protection> {
    let policy = config.sealing.as_ref()?;
    let (key_manager, rotation) = keys?;
    let slug = call.tenant.slug();
    let settings = call.view.settings();
    if let Some(ttl) = settings.state_ttl {
        key_manager.do_send(SetTenantGrace {
            tenant: slug.to_owned(),
            grace: ttl + policy.clock_skew,
        });
    }
    let ensure = tokio::time::timeout(
        config.request_timeout,
        key_manager.send(EnsureTenant {
            tenant: slug.to_owned(),
        }),
    );
    let ring = tokio::select! {
        _ = call.cancel.cancelled() => return None,
        // Timed out, the KeyManager gone, or the share failed (the KeyManager logged why).
        ring = ensure => ring.ok()?.ok()?.ok()?,
    };
    Some(Protection::sealed(policy, settings, ring, rotation))
}
