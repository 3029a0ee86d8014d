//! Legacy sessions (2025-11-25 and older, begun by `initialize`), on any transport.
//!
//! - [`sessions`]: the process's registry of live sessions, with its cap, and session ids;
//! - [`session`]: the Session actor, one per session: negotiated capabilities, log level,
//!   subscriptions, its notification streams and the shim flows of its requests;
//! - [`bridge`]: the LegacyBridge actor, which matches the client's answers to the
//!   server-to-client requests the shim sent;
//! - `relay`: the shim's way to the client, one leg per input request;
//! - [`handshake`]: the `initialize` request and its result;
//!
//! In a fleet, which worker holds each session is recorded in `crate::fleet`'s directory, so
//! the others forward to it.
//!
//! A modern request never reaches this module: the transport decides the era first.

pub mod bridge;
pub mod handshake;
mod relay;
pub mod session;
pub mod sessions;

use std::sync::Arc;

use actix::{Actor, Addr};
use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub use bridge::LegacyBridge;
pub use session::Session;
pub use sessions::{Full, SessionId, Sessions};

use crate::fleet;
use crate::fleet::directory::{DirectoryEntry, FleetFull, Holder, NotRegistered};
use crate::handler::{OutgoingMessage, Principal, Tenant};
use handshake::Initialize;

use crate::budget::{figures, Account, Ledger, Refusal};
use crate::protocol::{ErrorCode, McpError};

pub use crate::dispatch::LegacyConfig;
use crate::dispatch::RuntimeConfig;

/// What every legacy session of a process shares: the registry, the bridge and the limits.
#[derive(Debug, Clone)]
pub struct Legacy {
    /// Every live session of the process, with the caps on how many.
    pub sessions: Arc<Sessions>,
    /// The process's LegacyBridge, which routes the client's answers to the shim's legs.
    pub bridge: Addr<LegacyBridge>,
    /// The runtime config sessions dispatch with; its `legacy` part holds the session limits.
    pub runtime: Arc<RuntimeConfig>,
    /// The byte budgets sessions, their streams and their flows are charged to.
    pub ledger: Arc<Ledger>,
}

impl Legacy {
    /// Records `begun`, just begun here, in the fleet's directory (if the process is in
    /// one), within the fleet's caps, so that its requests landing on other workers are
    /// forwarded here. When it cannot be, the session ends here: it would pass a fleet cap,
    /// or only this worker could find it.
    pub async fn register_in_fleet(&self, begun: &Begun) -> Result<(), Refused> {
        let (Some(fleet), Some(entry)) = (&self.runtime.sessions, &begun.entry) else {
            return Ok(());
        };
        let registered = fleet
            .directory()
            .register(&begun.id, entry, fleet::ENTRY_TTL, fleet.caps())
            .await;
        let (refused, why) = match registered {
            Ok(()) => return Ok(()),
            Err(NotRegistered::Full(full)) => {
                tracing::warn!(%full, "initialize refused");
                (
                    Refused::Fleet(full),
                    "a fleet-wide cap on sessions is reached",
                )
            }
            Err(NotRegistered::Unavailable(e)) => {
                tracing::warn!(error = %e, "legacy session refused: the session directory is unavailable");
                // A write that timed out may still land: take it back, or it would hold a
                // fleet slot until it expires.
                self.forget_in_fleet(&begun.id, entry.holder.clone());
                (
                    Refused::DirectoryUnavailable,
                    "the session directory is unavailable",
                )
            }
        };
        self.sessions.remove(&begun.id);
        begun.addr.do_send(session::End { why });
        Err(refused)
    }

    /// Removes `id`, which ended here, from the fleet's directory, without waiting; nothing
    /// outside a fleet.
    pub(crate) fn forget_in_fleet(&self, id: &str, holder: Holder) {
        if self.runtime.sessions.is_none() {
            return;
        }
        let legacy = self.clone();
        let id = id.to_owned();
        actix_rt::spawn(async move { legacy.forget_in_fleet_now(&id, &holder).await });
    }

    /// Removes `id`, which ended here, from the fleet's directory (and its fleet-wide
    /// counts), once that is done: a client that ended a session may begin another at once.
    pub(crate) async fn forget_in_fleet_now(&self, id: &str, holder: &Holder) {
        let Some(fleet) = &self.runtime.sessions else {
            return;
        };
        if let Err(e) = fleet.directory().forget(id, holder).await {
            // It expires on its own once no longer renewed.
            tracing::warn!(error = %e, "could not remove an ended legacy session from the directory");
        }
    }

    /// Renews this process's sessions in the fleet's directory every
    /// [`fleet::RENEW_EVERY`] until `stop`, and ends those the directory no longer holds
    /// (their requests would get 404 on every other worker, so the client begins anew
    /// anyway); nothing without a fleet.
    pub fn keep_registered(&self, stop: tokio_util::sync::CancellationToken) {
        if self.runtime.sessions.is_none() {
            return;
        }
        let legacy = self.clone();
        actix_rt::spawn(async move {
            let mut every = tokio::time::interval(fleet::RENEW_EVERY);
            every.tick().await;
            loop {
                tokio::select! {
                    _ = stop.cancelled() => return,
                    _ = every.tick() => {}
                }
                legacy.renew_in_fleet().await;
            }
        });
    }

    /// One renewal of [`Legacy::keep_registered`].
    async fn renew_in_fleet(&self) {
        let Some(fleet) = &self.runtime.sessions else {
            return;
        };
        let held = self.sessions.held();
        match fleet.directory().renew(&held, fleet::ENTRY_TTL).await {
            Ok(lost) => {
                for id in lost {
                    if let Some(session) = self.sessions.address(&id) {
                        tracing::info!("a legacy session left the directory: ending it");
                        session.do_send(session::End {
                            why: "no other worker could find it any more",
                        });
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, sessions = held.len(), "could not renew legacy sessions in the directory");
            }
        }
    }

    /// Starts the process's LegacyBridge on the current arbiter, with a byte ledger of its
    /// own (`runtime.budgets`).
    pub fn start(runtime: Arc<RuntimeConfig>) -> Self {
        let ledger = Ledger::bytes(runtime.budgets);
        Self::start_charging(runtime, ledger)
    }

    /// [`Legacy::start`], charging what sessions keep to `ledger` (shared with the listen
    /// streams of the same process).
    pub fn start_charging(runtime: Arc<RuntimeConfig>, ledger: Arc<Ledger>) -> Self {
        Self {
            sessions: Arc::new(Sessions::new(
                runtime.legacy.max_sessions,
                runtime.legacy.max_sessions_per_caller,
            )),
            bridge: LegacyBridge::new(ledger.clone()).start(),
            runtime,
            ledger,
        }
    }

    /// The limits of sessions and of the shim.
    pub(crate) fn config(&self) -> &LegacyConfig {
        &self.runtime.legacy
    }

    /// Begins a session on the current arbiter for what `initialize` said: its id, its
    /// actor, and the result to answer `initialize` with. The session is charged to
    /// `account`: [`figures::SESSION`] and the size of its capabilities.
    pub fn begin(
        &self,
        init: Initialize,
        tenant: &Arc<Tenant>,
        principal: &Principal,
        account: &Account,
        on: SessionOn,
    ) -> Result<Begun, Refused> {
        let size = figures::SESSION + figures::json_size(&*init.client_capabilities.to_map());
        let charge = self
            .ledger
            .charge(account, size)
            .inspect_err(|r| tracing::warn!(%r, "initialize refused"))?;
        let view = tenant.view();
        let result = handshake::result(&init, &view, &view.catalog_for(principal));
        let client = init.client_name();
        let version = init.version;
        let entry = self.entry_for(&init, account, principal);
        let (id, addr) = self
            .sessions
            .create(account, principal, version, |sid| {
                let session = Session::new(
                    sid,
                    tenant.clone(),
                    principal.clone(),
                    init,
                    self.clone(),
                    charge,
                );
                match on {
                    SessionOn::Http => session,
                    SessionOn::Stdio(output) => session.on_stdio(output),
                }
                .start()
            })
            .inspect_err(|full| tracing::warn!(%full, "initialize refused"))?;
        tracing::info!(
            tenant = tenant.slug(),
            version = version.as_str(),
            client = client.as_deref().unwrap_or("?"),
            "legacy session started"
        );
        Ok(Begun {
            id,
            addr,
            result,
            entry,
        })
    }

    /// What the fleet's directory is to hold for a session `init` begins here: `None`
    /// outside a fleet (or before this worker knows its own URL).
    fn entry_for(
        &self,
        init: &Initialize,
        account: &Account,
        principal: &Principal,
    ) -> Option<DirectoryEntry> {
        let owner = self.runtime.sessions.as_ref()?.owner()?;
        Some(DirectoryEntry {
            owner: owner.to_owned(),
            holder: Holder::of(account),
            principal: principal.id().to_owned(),
            version: init.version.as_str().to_owned(),
            capabilities: init.client_capabilities.to_map().into_owned(),
        })
    }
}

/// Why `initialize` began no session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    /// A cap on how many sessions was reached.
    #[error(transparent)]
    Full(#[from] Full),
    /// The session's bytes would pass a budget.
    #[error(transparent)]
    Budget(#[from] Refusal),
    /// A fleet-wide cap on sessions was reached.
    #[error(transparent)]
    Fleet(#[from] FleetFull),
    /// The fleet's directory could not record the session, so no other worker could find it.
    #[error("the session directory is unavailable")]
    DirectoryUnavailable,
}

impl Refused {
    /// The JSON-RPC error: -31503 for a full process or fleet, -31429/-31503 for a budget,
    /// -31503 with a retry time while the directory is unavailable.
    pub fn to_error(&self) -> McpError {
        match self {
            Refused::Full(full) => McpError::new(ErrorCode::TooManySessions, full.to_string()),
            Refused::Fleet(full) => McpError::new(ErrorCode::TooManySessions, full.to_string()),
            Refused::Budget(refusal) => refusal.to_error(),
            Refused::DirectoryUnavailable => McpError::new(
                ErrorCode::OverCapacity,
                "Legacy sessions are unavailable right now; try again shortly",
            )
            .with_data(serde_json::json!({ "retryAfterMs": 1000 })),
        }
    }
}

/// Which transport a session lives on, which decides how long it lives and where its
/// notifications go.
#[derive(Debug)]
pub enum SessionOn {
    /// Streamable HTTP: the session expires when idle; its notifications go on the GET
    /// streams the client opens.
    Http,
    /// stdio: the session lives as long as the process; its notifications go on this
    /// channel, the process's output, from the start.
    Stdio(mpsc::Sender<Box<OutgoingMessage>>),
}

/// A session `initialize` began.
pub struct Begun {
    /// The new `Mcp-Session-Id`. Keep it out of logs: on an anonymous tenant it is as good as a
    /// credential.
    pub id: SessionId,
    /// The session's actor.
    pub addr: Addr<Session>,
    /// The `InitializeResult`.
    pub result: Map<String, Value>,
    /// What the fleet's directory is to hold for it, in a fleet.
    pub entry: Option<DirectoryEntry>,
}

impl std::fmt::Debug for Begun {
    /// Without the session id: it is as good as a credential on an anonymous tenant.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Begun")
            .field("result", &self.result)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::fleet::directory::{FleetCaps, LocalSessionDirectory, SessionDirectory};
    use crate::fleet::{ForwardKey, SessionFleet};
    use crate::handler::Catalog;
    use crate::protocol::{ClientCapabilities, ProtocolVersion};

    /// A process in a fleet whose directory is `directory`, and a session begun in it, not
    /// yet registered.
    fn begun_in(directory: Arc<dyn SessionDirectory>) -> (Legacy, Begun, Holder) {
        let caps = FleetCaps {
            sessions: 10,
            per_caller: 10,
        };
        let fleet = SessionFleet::new(directory, caps, ForwardKey::new(&[1; 32]));
        fleet.set_owner("http://127.0.0.1:1".into());
        let runtime = RuntimeConfig {
            sessions: Some(fleet),
            ..RuntimeConfig::default()
        };
        let legacy = Legacy::start(Arc::new(runtime));
        let tenant = Arc::new(Tenant::new("t", Catalog::builder().build()));
        let account = Account::new("t", &Principal::anonymous(), None);
        let init = Initialize {
            version: ProtocolVersion::V2025_11_25,
            client_capabilities: ClientCapabilities::default(),
            client_info: None,
        };
        let begun = legacy
            .begin(
                init,
                &tenant,
                &Principal::anonymous(),
                &account,
                SessionOn::Http,
            )
            .expect("a session");
        (legacy, begun, Holder::of(&account))
    }

    /// [`begun_in`] `directory`, registered.
    async fn registered(directory: &LocalSessionDirectory) -> (Legacy, Begun, Holder) {
        let (legacy, begun, holder) = begun_in(Arc::new(directory.clone()));
        legacy.register_in_fleet(&begun).await.expect("registered");
        (legacy, begun, holder)
    }

    #[actix_rt::test]
    async fn a_session_the_directory_cannot_record_is_ended_and_refused_with_a_retry_time() {
        let spare = crate::redis::testing::SpareRedis::start();
        let redis = spare.connect().await;
        spare.stop();
        let (legacy, begun, _) =
            begun_in(Arc::new(crate::redis::RedisSessionDirectory::new(redis)));
        let refused = legacy.register_in_fleet(&begun).await;
        assert_eq!(refused, Err(Refused::DirectoryUnavailable));
        let error = Refused::DirectoryUnavailable.to_error();
        assert_eq!((error.code.code(), error.code.http_status()), (-31503, 503));
        assert_eq!(error.data, Some(serde_json::json!({"retryAfterMs": 1000})));
        assert!(legacy.sessions.address(&begun.id).is_none());
    }

    #[actix_rt::test]
    async fn a_session_past_a_fleet_cap_is_ended_and_refused_with_503() {
        let directory = LocalSessionDirectory::new();
        for n in 0..10 {
            let (legacy, begun, _) = begun_in(Arc::new(directory.clone()));
            legacy
                .register_in_fleet(&begun)
                .await
                .unwrap_or_else(|e| panic!("no room for session {n}: {e}"));
        }
        let (legacy, begun, _) = begun_in(Arc::new(directory.clone()));
        let refused = legacy.register_in_fleet(&begun).await;
        assert!(matches!(refused, Err(Refused::Fleet(_))), "{refused:?}");
        let error = refused.unwrap_err().to_error();
        assert_eq!((error.code.code(), error.code.http_status()), (-31503, 503));
        assert!(legacy.sessions.address(&begun.id).is_none());
    }

    #[actix_rt::test]
    async fn a_session_the_directory_lost_is_ended_at_the_next_renewal() {
        let directory = LocalSessionDirectory::new();
        let (legacy, begun, holder) = registered(&directory).await;
        directory.forget(&begun.id, &holder).await.unwrap();
        legacy.renew_in_fleet().await;
        for _ in 0..50 {
            if legacy.sessions.address(&begun.id).is_none() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        panic!("the session the directory lost still lives");
    }

    #[actix_rt::test]
    async fn a_session_the_directory_holds_lives_on_after_a_renewal() {
        let directory = LocalSessionDirectory::new();
        let (legacy, begun, _) = registered(&directory).await;
        legacy.renew_in_fleet().await;
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(legacy.sessions.address(&begun.id).is_some());
        assert!(directory.lookup(&begun.id).await.unwrap().is_some());
    }
}
