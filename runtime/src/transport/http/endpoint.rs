//! `/t/{tenant}/mcp`, behind the Host/Origin guard middleware (`guard.rs`, so a refused
//! request costs no body read), routed by [`route`]. A POST is checked in
//! this order: the body within its size and time limits, JSON-RPC classification, the tenant
//! and the caller; then the era: a legacy handshake or a session's message goes to
//! `legacy.rs`, a modern request through the envelope checks to the worker's pipeline, its
//! reply framed by `reply.rs`. GET and DELETE with a session id are the session's stream and
//! its end.

use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;

use actix_web::http::Method;
use actix_web::{web, HttpRequest, HttpResponse};
use futures_util::FutureExt;
use tokio::sync::mpsc::Receiver;
use tracing::Instrument;

use super::client::client_address;
use super::error::RpcError;
use super::forward;
use super::headers::Headers;
use super::inflight::InFlight;
use super::legacy;
use super::reply;
use super::{McpService, WorkerDispatcher};
use crate::budget::{figures, Account};
use crate::dispatch::envelope::{self, HttpCheck};
use crate::dispatch::{Call, Caller, Listen, Reply};
use crate::handler::Cancellation;
use crate::handler::{OutgoingMessage, Principal, Tenant};
use crate::protocol::error::ErrorCode;
use crate::protocol::jsonrpc::{Malformed, Notification};
use crate::protocol::{Era, Incoming, McpError, Request, RequestId};
use crate::tenancy::AuthError;

/// Every request no fixed route took: `/t/{tenant}/mcp` by method (POST, GET, DELETE;
/// others 405), anything else 404 with a JSON-RPC body.
///
/// The tenant is cut out of the path by hand rather than by an actix-web resource pattern
/// `/t/{tenant}/mcp`: a pattern with a segment is matched with `regex-lite`, which cost about
/// 10k instructions of an echo `tools/call`'s 80k (12%, `bench/instructions.sh`, 2026-12-03;
/// BENCHMARKS.md), where this match costs a few dozen.
///
/// The app's data is borrowed from the request rather than extracted: an extractor clones
/// each `Data` (an atomic reference count taken and given back per request).
pub(crate) async fn route(
    req: HttpRequest,
    payload: web::Payload,
) -> Result<HttpResponse, RpcError> {
    let (Some(service), Some(dispatcher)) = (
        req.app_data::<web::Data<McpService>>(),
        req.app_data::<web::Data<WorkerDispatcher>>(),
    ) else {
        tracing::error!("the MCP endpoint's app data is missing: its app was not configured");
        return Err(RpcError::refused(
            None,
            McpError::internal("Internal error"),
        ));
    };
    match remote_parent(&req, service) {
        Some(span) => {
            answer(&req, payload, service, dispatcher)
                .instrument(span)
                .await
        }
        None => answer(&req, payload, service, dispatcher).await,
    }
}

/// The span a request runs under when it names its caller's trace and traces are exported.
fn remote_parent(req: &HttpRequest, service: &McpService) -> Option<tracing::Span> {
    let make = service.http.remote_parent?;
    let (traceparent, tracestate) = Headers::of(req).trace_context()?;
    make(traceparent, tracestate)
}

/// [`route`], under whatever span it set.
async fn answer(
    req: &HttpRequest,
    payload: web::Payload,
    service: &Arc<McpService>,
    dispatcher: &WorkerDispatcher,
) -> Result<HttpResponse, RpcError> {
    let Some(slug) = tenant_of(req.path()) else {
        return Err(RpcError::not_found());
    };
    if let Some(forwarder) = &dispatcher.forwarder {
        if let Some(owner) = forward::owner_of(req, slug, service).await {
            // Authenticated here too: a request the owner would refuse costs no hop.
            let (_, principal) = resolve(Headers::of(req), slug, service, None)?;
            let began = &owner.entry.principal;
            if !began.is_empty() && began != principal.id() {
                return Err(RpcError::refused(None, McpError::unknown_session()));
            }
            let client = client_of(req, service);
            return forward::to_owner(owner, req, client, payload, service, forwarder).await;
        }
    }
    match *req.method() {
        Method::POST => post(req, slug, payload, service, dispatcher).await,
        Method::GET => get(req, slug, service).await,
        Method::DELETE => delete(req, slug, service).await,
        _ => Err(RpcError::method_not_allowed()),
    }
}

/// The `{tenant}` of `/t/{tenant}/mcp`: one non-empty segment.
fn tenant_of(path: &str) -> Option<&str> {
    path.strip_prefix("/t/")?
        .strip_suffix("/mcp")
        .filter(|t| !t.is_empty() && !t.contains('/'))
}

/// POST: a client message.
async fn post(
    req: &HttpRequest,
    slug: &str,
    payload: web::Payload,
    service: &Arc<McpService>,
    dispatcher: &WorkerDispatcher,
) -> Result<HttpResponse, RpcError> {
    handle(req, slug, payload, service, dispatcher)
        .await
        .inspect_err(|refusal| {
            service.metrics.record_rejection();
            tracing::info!(
                tenant = slug,
                code = refusal.code().code(),
                status = %actix_web::ResponseError::status_code(refusal),
                "request refused"
            );
        })
}

/// GET with an `Mcp-Session-Id`: the session's stream. Without one no legacy session is
/// named, so 405.
async fn get(
    req: &HttpRequest,
    slug: &str,
    service: &Arc<McpService>,
) -> Result<HttpResponse, RpcError> {
    let headers = Headers::of(req);
    let found = session_of(slug, headers, service)?;
    legacy::open_stream(headers, found, service).await
}

/// DELETE with an `Mcp-Session-Id`: the session ends. Without one, 405.
async fn delete(
    req: &HttpRequest,
    slug: &str,
    service: &McpService,
) -> Result<HttpResponse, RpcError> {
    let headers = Headers::of(req);
    let found = session_of(slug, headers, service)?;
    let sid = headers.session_id().unwrap_or_default();
    Ok(legacy::end(sid, service, found).await)
}

/// The session a GET or DELETE names, for its tenant and caller.
fn session_of(
    slug: &str,
    headers: Headers<'_>,
    service: &McpService,
) -> Result<crate::legacy::sessions::Found, RpcError> {
    let Some(sid) = headers.session_id() else {
        return Err(RpcError::method_not_allowed());
    };
    let (tenant, principal) = resolve(headers, slug, service, None)?;
    legacy::session(headers, sid, &tenant, &principal, service)
}

/// A legacy handshake's and a session request's futures are boxed where they are awaited:
/// with what this function keeps beside them, they took 943 and 1,039 bytes of its future's
/// state, against 912 for a modern call's, and every request's future is the size of the
/// largest (the transport copies it as it nests it). A legacy request pays an allocation for
/// it.
async fn handle(
    req: &HttpRequest,
    slug: &str,
    payload: web::Payload,
    service: &Arc<McpService>,
    dispatcher: &WorkerDispatcher,
) -> Result<HttpResponse, RpcError> {
    let headers = Headers::of(req);
    let body = read_body(payload, service).await?;
    let incoming = Incoming::parse(&body)
        .map_err(|Malformed { id, error }| RpcError::refused(id.as_ref(), error))?;
    let id = match &incoming {
        Incoming::Request(r) => Some(&r.id),
        _ => None,
    };
    let (tenant, principal) = resolve(headers, slug, service, id)?;
    // Who the caller is, for caps and budgets: built only by what keeps something.
    let client = client_of(req, service);
    // The era is decided here, in the order of protocol-2026-07-28 §4.5: a legacy handshake;
    // the modern envelope (never looking at sessions); a session's id; otherwise modern.
    let session_id = headers.session_id();
    match incoming {
        Incoming::Request(request) if legacy::is_handshake(headers, &request) => {
            let account = Account::of(&tenant, principal.id_arc(), client);
            Box::pin(legacy::initialize(
                request, tenant, principal, &account, service,
            ))
            .await
        }
        Incoming::Request(request) if request.is_modern() => {
            let caller = (tenant, principal, client);
            modern(headers, request, caller, service, dispatcher).await
        }
        Incoming::Request(request) => match session_id {
            Some(sid) => {
                let found = legacy::session(headers, sid, &tenant, &principal, service)
                    .map_err(|r| r.with_id(&request.id))?;
                let answered = legacy::request(headers, request, found, principal, service);
                Ok(Box::pin(answered).await)
            }
            None if legacy::names_legacy_version(headers) => Err(RpcError::refused(
                Some(&request.id),
                McpError::invalid_request(
                    "No Mcp-Session-Id: a legacy client must begin with initialize",
                ),
            )),
            None => {
                let caller = (tenant, principal, client);
                modern(headers, request, caller, service, dispatcher).await
            }
        },
        Incoming::Notification(notification) => match session_id {
            Some(sid) => {
                let found = legacy::session(headers, sid, &tenant, &principal, service)?;
                Ok(legacy::notification(found, notification, service))
            }
            None => accept_notification(headers, &notification, service),
        },
        Incoming::Response(response) => match session_id {
            Some(sid) => {
                legacy::session(headers, sid, &tenant, &principal, service)?;
                legacy::answer(sid, response, service).await
            }
            None => Err(RpcError::refused(
                None,
                McpError::invalid_request("No server-to-client request is awaiting a response"),
            )),
        },
    }
}

/// The body, within `max_body_bytes` (413) and `body_timeout` (408).
///
/// The timer is armed only for a body not in hand by the read's second poll. actix runs a
/// handler once before it feeds it the body that came with the head, so nearly every read
/// waits once; a timer armed then (a clock read, a place in the timer wheel, its removal)
/// cost about 2% of an echo request's instructions. A body that never starts still gets
/// its timer: the first wait wakes the task at once.
async fn read_body(payload: web::Payload, service: &McpService) -> Result<web::Bytes, RpcError> {
    let limit = service.http.max_body_bytes;
    let refused = |error| RpcError::refused(None, error);
    let mut read = std::pin::pin!(payload.to_bytes_limited(limit));
    let read = match by_second_poll(read.as_mut()).await {
        Some(read) => read,
        None => tokio::time::timeout(service.http.body_timeout, read)
            .await
            .map_err(|_| {
                refused(McpError::new(
                    ErrorCode::RequestTimeout,
                    "Request body timed out",
                ))
            })?,
    };
    match read {
        Err(_) => Err(refused(McpError::new(
            ErrorCode::PayloadTooLarge,
            format!("Request body exceeds {limit} bytes"),
        ))),
        Ok(Err(e)) => Err(refused(McpError::invalid_request(format!(
            "Could not read the request body: {e}"
        )))),
        Ok(Ok(body)) => Ok(body),
    }
}

/// `work`'s output if it is ready by its second poll, else `None` (with `work` left as it
/// is, to be awaited further). Its first wait wakes the task at once, so the second poll
/// comes as soon as the task has done what else it was doing.
async fn by_second_poll<F: Future + Unpin>(mut work: F) -> Option<F::Output> {
    let mut waited = false;
    std::future::poll_fn(|cx| match Pin::new(&mut work).poll(cx) {
        Poll::Ready(out) => Poll::Ready(Some(out)),
        Poll::Pending if waited => Poll::Ready(None),
        Poll::Pending => {
            waited = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    })
    .await
}

/// The client's address: as a fleet worker that forwarded the request vouched for it, or as
/// the network and the trusted proxies say (`client.rs`).
fn client_of(req: &HttpRequest, service: &McpService) -> Option<IpAddr> {
    forward::vouched_client(req, service).or_else(|| client_address(req, &service.http.clients))
}

/// The tenant (404 if unknown) and who is calling (401 if not authenticated).
fn resolve(
    headers: Headers<'_>,
    slug: &str,
    service: &McpService,
    id: Option<&RequestId>,
) -> Result<(Arc<Tenant>, Principal), RpcError> {
    let tenant = service.directory.tenant(slug).ok_or_else(|| {
        RpcError::refused(
            id,
            McpError::new(ErrorCode::UnknownTenant, "Unknown tenant"),
        )
    })?;
    match service
        .authenticator
        .authenticate(&tenant, headers.bearer())
    {
        Ok(principal) => Ok((tenant, principal)),
        Err(reason) => {
            tracing::info!(tenant = tenant.slug(), %reason, "authentication failed");
            let error = match reason {
                AuthError::Suspended => McpError::new(ErrorCode::Forbidden, "Tenant suspended"),
                AuthError::OutOfScope => McpError::new(
                    ErrorCode::Forbidden,
                    "This key may not call the MCP endpoint",
                ),
                _ => McpError::new(ErrorCode::Unauthorized, "Unauthorized"),
            };
            Err(RpcError::refused(id, error))
        }
    }
}

/// Client notifications are accepted (202) and need no answer. The one the core defines on
/// HTTP would be `notifications/cancelled`, which 2026-07-28 replaced with closing the stream.
fn accept_notification(
    headers: Headers<'_>,
    n: &Notification,
    service: &McpService,
) -> Result<HttpResponse, RpcError> {
    if headers.mcp_method().is_some_and(|m| m != n.method) {
        return Err(RpcError::refused(
            None,
            McpError::header_mismatch("Mcp-Method header does not match the notification's method"),
        ));
    }
    service.metrics.record_notification();
    Ok(HttpResponse::Accepted().finish())
}

/// A modern request: the envelope checks, then the pipeline on this task (no actor hop),
/// answered with one JSON body, or with SSE when it may notify and the client reads SSE.
async fn modern(
    headers: Headers<'_>,
    request: Request,
    caller: (Arc<Tenant>, Principal, Option<IpAddr>),
    service: &Arc<McpService>,
    dispatcher: &WorkerDispatcher,
) -> Result<HttpResponse, RpcError> {
    // `call` is only moved, never borrowed: borrowed, it would be kept in this future's state
    // past the await that its move into the pipeline begins.
    let Checked {
        id,
        call,
        notifications,
        in_flight,
    } = Checked::new(headers, request, caller, service)?;
    Ok(match notifications {
        None => {
            let reply = admit(dispatcher.state.run(call).await, service);
            in_flight.finish();
            reply::frame(service, &id, reply, Era::Modern)
        }
        Some(rx) => {
            let admitting = service.clone();
            reply::respond(
                service.clone(),
                id,
                Era::Modern,
                Box::pin(
                    dispatcher
                        .state
                        .run_streamed(call)
                        .map(move |reply| admit(reply, &admitting)),
                ),
                rx,
                in_flight,
            )
            .await
        }
    })
}

/// A modern request through its envelope checks, made into the call to run and what its
/// answer needs.
///
/// Made by a plain function (`Checked::new`), not in [`modern`]: what is borrowed there (the request during
/// its checks, the headers' values, the envelope) would be kept in that future's state past
/// its await, which the transport copies as it nests it, several times per request. With it,
/// and `modern` moving the call without borrowing it, each future from actix's handler down
/// was 424 bytes smaller when it was introduced (`modern`'s 1,040 bytes became 616, `route`'s
/// 1,864 became 1,440: `-Zprint-type-sizes` on nightly).
///
/// It keeps nothing of the caller beside the call: a listen stream, the one reply that needs
/// its tenant and its account, carries them (made by the pipeline, for that request only).
/// Kept here, they were two reference counts taken and given back on every request.
struct Checked<'a> {
    id: RequestId,
    call: Call,
    /// The notifications' receiver, when they travel on SSE.
    notifications: Option<Receiver<Box<OutgoingMessage>>>,
    in_flight: InFlight<'a>,
}

impl<'a> Checked<'a> {
    fn new(
        headers: Headers<'_>,
        mut request: Request,
        (tenant, principal, client): (Arc<Tenant>, Principal, Option<IpAddr>),
        service: &'a Arc<McpService>,
    ) -> Result<Checked<'a>, RpcError> {
        let id = request.id.clone();
        let refused = |e| RpcError::refused(Some(&id), e);
        let caller = Caller::new(tenant, principal).calling_from(client);
        let mcp_headers = headers.mcp().map_err(refused)?;
        let envelope = envelope::check_modern(
            &mut request,
            Some(HttpCheck {
                headers: &mcp_headers,
                catalog: &caller.catalog,
            }),
        )
        .map_err(refused)?;
        // Notifications travel on SSE; a client that cannot read SSE gets only the result.
        let (notifier, notifications) = envelope
            .notifier()
            .filter(|_| headers.accepts_sse())
            .unzip();
        let cancel = Cancellation::new();
        let in_flight = InFlight::new(cancel.clone(), service);
        let call = Call::modern(caller, request, envelope, notifier, cancel);
        Ok(Checked {
            id,
            call,
            notifications,
            in_flight,
        })
    }
}

/// A listen stream's admission ([`admit_listen`]); any other reply as it is.
fn admit(reply: Reply, service: &McpService) -> Reply {
    match reply {
        Reply::Listen(listen) => admit_listen(listen, service),
        reply => reply,
    }
}

/// An accepted `subscriptions/listen` becomes a stream only if there is room for it: file
/// descriptors to spare, the caller's, tenant's and process's caps on open listen streams,
/// and their byte budgets ([`figures::LISTEN_STREAM`] and [`figures::listen_uri`] of each URI).
/// Otherwise its refusal.
/// The charges go with the stream and are given back when it closes.
fn admit_listen(mut listen: Box<Listen>, service: &McpService) -> Reply {
    let account = &listen.account;
    let bytes = figures::LISTEN_STREAM
        + listen
            .uris()
            .map(|uri| figures::listen_uri(uri.len() as u64))
            .sum::<u64>();
    let admitted = service.descriptors.room_for_stream().and_then(|()| {
        let count = service.listens.charge(account, 1)?;
        let size = service.legacy.ledger.charge(account, bytes)?;
        Ok((count, size))
    });
    match admitted {
        Ok((count, size)) => {
            listen.hold(count);
            listen.hold(size);
            Reply::Listen(listen)
        }
        Err(error) => {
            tracing::warn!(tenant = &**account.tenant(), %error, "listen stream refused");
            Reply::Error(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::tenant_of;

    #[test]
    fn the_tenant_is_the_one_segment_between_t_and_mcp() {
        assert_eq!(tenant_of("/t/demo/mcp"), Some("demo"));
        for path in [
            "/t//mcp",
            "/t/a/b/mcp",
            "/t/demo/mcp/",
            "/x/demo/mcp",
            "/t/demo",
        ] {
            assert_eq!(tenant_of(path), None, "{path}");
        }
    }
}
