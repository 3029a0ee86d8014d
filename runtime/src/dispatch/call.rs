//! One request, ready to dispatch: a [`Call`], with the [`Scope`] of what its client
//! declared.
//!
//! A call is built in two ways only, so none skips the checks its era needs: a modern one
//! from the [`Envelope`] that `envelope::check_modern` returned, a legacy one by the Session
//! actor from what `initialize` negotiated.

use std::cell::OnceCell;
use std::net::IpAddr;
use std::sync::atomic::AtomicU32;
use std::sync::Arc;
use std::time::SystemTime;

use super::envelope::Envelope;
use super::relay::Shim;
use crate::handler::Cancellation;
use crate::handler::{Catalog, Context, ContextBuilder, Notifier, Principal, Tenant, TenantView};
use crate::protocol::{ClientCapabilities, Era, Request};

/// What the request may receive and may be asked for, by era: from the `_meta` envelope on
/// a modern request, from the session on a legacy one.
#[derive(Debug, Clone)]
pub(crate) struct Scope {
    pub(crate) era: Era,
    pub(crate) client_capabilities: ClientCapabilities,
}

/// One request, ready to dispatch.
#[derive(Debug)]
pub(crate) struct Call {
    pub(crate) tenant: Arc<Tenant>,
    /// The tenant as it was when the request arrived: one view serves the whole request.
    pub(crate) view: Arc<TenantView>,
    /// What the principal sees of that view's catalog: every list and call path reads this.
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) principal: Principal,
    /// The caller's address, when the transport knows it (rate limits tell anonymous
    /// callers apart by it).
    pub(crate) client: Option<IpAddr>,
    pub(crate) request: Request,
    pub(crate) scope: Scope,
    pub(crate) notifier: Option<Notifier>,
    pub(crate) cancel: Cancellation,
    /// Legacy requests only: how the shim reaches the client.
    pub(crate) shim: Option<Shim>,
    /// The round this request is (modern), or the rounds its shim flow took (legacy), once
    /// known: for the audit record.
    pub(crate) round: AtomicU32,
    /// The request's span, once `dispatch` made it: what a round learns (its target, its
    /// round) and the reply's outcome and code are recorded on it directly, without asking
    /// the subscriber for the current span each time. Until then it is no span, and what is
    /// recorded on it is lost: every call is run through `dispatch`.
    pub(crate) span: tracing::Span,
    /// The wall-clock time of the request, read once, when first asked ([`Call::now`]).
    now: OnceCell<SystemTime>,
}

/// Who asks, of which tenant, seen how: the part of a call both eras resolve the same way.
#[derive(Debug, Clone)]
pub(crate) struct Caller {
    pub(crate) tenant: Arc<Tenant>,
    pub(crate) view: Arc<TenantView>,
    pub(crate) catalog: Arc<Catalog>,
    pub(crate) principal: Principal,
    pub(crate) client: Option<IpAddr>,
}

impl Caller {
    /// `principal` on the tenant as it is now.
    pub(crate) fn new(tenant: Arc<Tenant>, principal: Principal) -> Self {
        let view = tenant.view();
        let catalog = view.catalog_for(&principal);
        Self {
            tenant,
            view,
            catalog,
            principal,
            client: None,
        }
    }

    /// The same caller, calling from `client`.
    pub(crate) fn calling_from(mut self, client: Option<IpAddr>) -> Self {
        self.client = client;
        self
    }
}

impl Call {
    /// A modern request that passed the envelope checks: its scope is the envelope's.
    pub(crate) fn modern(
        caller: Caller,
        request: Request,
        envelope: Envelope,
        notifier: Option<Notifier>,
        cancel: Cancellation,
    ) -> Self {
        let scope = Scope {
            era: envelope.version().era(),
            client_capabilities: envelope.into_meta().client_capabilities,
        };
        Self::new(caller, request, scope, notifier, cancel, None)
    }

    /// A request of a legacy session, with the capabilities it negotiated and its shim.
    pub(crate) fn legacy(
        caller: Caller,
        request: Request,
        client_capabilities: ClientCapabilities,
        notifier: Option<Notifier>,
        cancel: Cancellation,
        shim: Shim,
    ) -> Self {
        let scope = Scope {
            era: Era::Legacy,
            client_capabilities,
        };
        Self::new(caller, request, scope, notifier, cancel, Some(shim))
    }

    fn new(
        caller: Caller,
        request: Request,
        scope: Scope,
        notifier: Option<Notifier>,
        cancel: Cancellation,
        shim: Option<Shim>,
    ) -> Self {
        let Caller {
            tenant,
            view,
            catalog,
            principal,
            client,
        } = caller;
        Self {
            tenant,
            view,
            catalog,
            principal,
            client,
            request,
            scope,
            notifier,
            cancel,
            shim,
            round: AtomicU32::new(0),
            span: tracing::Span::none(),
            now: OnceCell::new(),
        }
    }

    /// The request's wall-clock time: its audit record's time, and the time its state is
    /// opened and claimed at (was the state good when the request came?). Read from the clock
    /// once, the first time it is asked for: a read is tens of nanoseconds on a virtual
    /// machine. A state it seals is issued at the time of sealing, not at this one.
    pub(crate) fn now(&self) -> SystemTime {
        *self.now.get_or_init(SystemTime::now)
    }

    /// The handler context of this request: who, for which tenant, with what capabilities,
    /// its sinks and its cancellation. Input-capable methods add answers and state.
    pub(crate) fn context(&self) -> ContextBuilder {
        Context::builder(self.tenant.clone())
            .principal(self.principal.clone())
            .era(self.scope.era)
            .client_capabilities(self.scope.client_capabilities.clone())
            .notifier(self.notifier.clone())
            .cancel(self.cancel.clone())
    }
}
