//! Legacy sessions on Streamable HTTP (2025-03-26 … 2025-11-25): `initialize` and its
//! `Mcp-Session-Id`, the session's requests, notifications and answers on POST, its GET
//! stream, and DELETE.
//!
//! Every legacy error that is the client's or the session's (no session, a stray answer) is
//! an HTTP error status with a JSON-RPC error body; a JSON-RPC error that answers a request
//! travels with HTTP 200, as the legacy wire expects (`error.rs` decides).

use std::sync::Arc;

use actix_web::http::header::HeaderValue;
use actix_web::HttpResponse;

use super::error::RpcError;
use super::headers::{Headers, SESSION_ID};
use super::inflight::InFlight;
use super::reply;
use super::response::json_result;
use super::{sse, McpService};

use crate::budget::Account;
use crate::dispatch::Reply;
use crate::handler::Cancellation;
use crate::handler::{Notifier, Principal, Tenant};
use crate::legacy::bridge::{Answer, Unanswered};
use crate::legacy::session::{deliver, End, Notify, OpenStream};
use crate::legacy::sessions::Found;
use crate::legacy::{handshake, SessionOn};
use crate::protocol::jsonrpc::Response;
use crate::protocol::meta::legacy_progress_token;
use crate::protocol::{Era, McpError, Method, Notification, Request};

/// `initialize`: a new session for this tenant and caller, charged to `account`, unless a
/// cap or a budget is reached. In a fleet the session is recorded in the directory before
/// the client gets its id: refused (-31503) at a fleet-wide cap, and 503 if the directory
/// cannot be written (no other worker could find the session).
pub(crate) async fn initialize(
    request: Request,
    tenant: Arc<Tenant>,
    principal: Principal,
    account: &Account,
    service: &Arc<McpService>,
) -> Result<HttpResponse, RpcError> {
    let id = request.id.clone();
    let init = handshake::parse(&request).map_err(|e| RpcError::refused(Some(&id), e))?;
    let begun = service
        .legacy
        .begin(init, &tenant, &principal, account, SessionOn::Http)
        .map_err(|refused| RpcError::refused(Some(&id), refused.to_error()))?;
    service
        .legacy
        .register_in_fleet(&begun)
        .await
        .map_err(|refused| RpcError::refused(Some(&id), refused.to_error()))?;
    let mut response = json_result(&id, &begun.result);
    if let Ok(value) = HeaderValue::from_str(&begun.id) {
        response.headers_mut().insert(SESSION_ID, value);
    }
    Ok(response)
}

/// The session a request names, checked against its tenant and caller (404 otherwise, as
/// for an ended session) and against the version header, when one is sent (400).
pub(crate) fn session(
    headers: Headers<'_>,
    session_id: &str,
    tenant: &Tenant,
    principal: &Principal,
    service: &McpService,
) -> Result<Found, RpcError> {
    let found = service
        .legacy
        .sessions
        .find(session_id, tenant.slug(), principal)
        .ok_or_else(|| RpcError::refused(None, McpError::unknown_session()))?;
    if let Some(v) = headers.protocol_version() {
        if v != found.version.as_str() {
            return Err(RpcError::refused(
                None,
                McpError::invalid_request(format!(
                    "MCP-Protocol-Version '{v}' is not this session's version ({})",
                    found.version.as_str()
                )),
            ));
        }
    }
    Ok(found)
}

/// A request in a session: answered as JSON, or on its own SSE stream once it has
/// notifications or server-to-client requests to send first.
pub(crate) async fn request(
    headers: Headers<'_>,
    request: Request,
    found: Found,
    principal: Principal,
    service: &Arc<McpService>,
) -> HttpResponse {
    let id = request.id.clone();
    let (notifier, rx) = if headers.accepts_sse() {
        let (n, rx) = Notifier::channel(legacy_progress_token(request.params.as_ref()), None);
        (Some(n), Some(rx))
    } else {
        (None, None)
    };
    let cancel = Cancellation::new();
    let in_flight = InFlight::new(cancel.clone(), service);
    let reply = deliver(&found.addr, request, principal, notifier, cancel);
    // A session that stopped after it was found is as gone as one never found.
    let reply = async move { reply.await.unwrap_or_else(|_| session_gone()) };
    match rx {
        None => {
            let reply = reply.await;
            in_flight.finish();
            reply::frame(service, &id, reply, Era::Legacy)
        }
        Some(rx) => {
            reply::respond(
                service.clone(),
                id,
                Era::Legacy,
                Box::pin(reply),
                rx,
                in_flight,
            )
            .await
        }
    }
}

fn session_gone() -> Reply {
    Reply::Error(McpError::unknown_session())
}

/// A notification in a session (`notifications/initialized`, `notifications/cancelled`).
pub(crate) fn notification(found: Found, n: Notification, service: &McpService) -> HttpResponse {
    service.metrics.record_notification();
    found.addr.do_send(Notify(n));
    HttpResponse::Accepted().finish()
}

/// The client's answer to a server-to-client request: 202 once it reached the flow waiting
/// for it; 400 if none was (stray, duplicate, too late), 429/503 if keeping it would pass a
/// budget (the leg goes on waiting), and nothing changes.
pub(crate) async fn answer(
    session_id: &str,
    response: Response,
    service: &McpService,
) -> Result<HttpResponse, RpcError> {
    let delivered = service
        .legacy
        .bridge
        .send(Answer {
            session: session_id.into(),
            response,
        })
        .await
        .map_err(|_| {
            RpcError::refused(
                None,
                McpError::internal("Internal error: legacy bridge unavailable"),
            )
        })?;
    match delivered {
        Ok(()) => Ok(HttpResponse::Accepted().finish()),
        Err(Unanswered::Stray(stray)) => {
            tracing::info!(%stray, "refused an answer nobody waits for");
            Err(RpcError::refused(
                None,
                McpError::invalid_request(stray.to_string()),
            ))
        }
        Err(Unanswered::Budget(refusal)) => {
            tracing::warn!(%refusal, "refused an answer over budget");
            Err(RpcError::refused(None, refusal.to_error()))
        }
    }
}

/// GET with a session: the session's stream of notifications not tied to a request, unless
/// file descriptors are low or the stream would pass the caller's byte budget.
pub(crate) async fn open_stream(
    headers: Headers<'_>,
    found: Found,
    service: &Arc<McpService>,
) -> Result<HttpResponse, RpcError> {
    if !headers.asks_for_sse() {
        return Err(RpcError::not_acceptable(McpError::invalid_request(
            "GET needs Accept: text/event-stream",
        )));
    }
    service
        .descriptors
        .room_for_stream()
        .map_err(|e| RpcError::refused(None, e))?;
    let (rx, charge) = found
        .addr
        .send(OpenStream)
        .await
        .map_err(|_| RpcError::refused(None, McpError::unknown_session()))?
        .map_err(|e| RpcError::refused(None, e))?;
    Ok(sse::session_stream(service, rx, charge))
}

/// DELETE with a session: the session ends; its id is unknown from now on, in the fleet's
/// directory too before the client is answered.
pub(crate) async fn end(session_id: &str, service: &McpService, found: Found) -> HttpResponse {
    let held = service.legacy.sessions.remove(session_id);
    found.addr.do_send(End {
        why: "deleted by the client",
    });
    if let Some(holder) = held {
        service
            .legacy
            .forget_in_fleet_now(session_id, &holder)
            .await;
    }
    HttpResponse::Ok().finish()
}

/// Whether an `initialize` is a legacy handshake: unless it carries the modern envelope or a
/// modern version header, in which case it is a removed method for a modern client.
pub(crate) fn is_handshake(headers: Headers<'_>, request: &Request) -> bool {
    request.method == Method::Initialize
        && headers.version_era().is_none_or(|era| era == Era::Legacy)
        && !request.is_modern()
}

/// Whether a request without a session names a legacy version in its header: a legacy
/// client that skipped `initialize`.
pub(crate) fn names_legacy_version(headers: Headers<'_>) -> bool {
    headers.version_era() == Some(Era::Legacy)
}
