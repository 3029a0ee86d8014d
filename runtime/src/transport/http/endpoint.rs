//! `POST /t/{tenant}/mcp`, in the order a request is checked: the Host/Origin guard (before
//! the body is read), the body within its size and time limits, JSON-RPC classification, the
//! tenant and the caller; then the era: a legacy handshake or a session's message goes to
//! `legacy.rs`, a modern request through the envelope checks to the worker's Dispatcher. The
//! reply is framed as JSON, or as SSE when messages come before the result. GET and DELETE
//! with a session id are the session's stream and its end.

use std::sync::Arc;

use actix_web::http::{header, Method, StatusCode};
use actix_web::{web, HttpRequest, HttpResponse};
use tokio_util::sync::CancellationToken;

use super::inflight::InFlight;
use super::legacy;
use super::response::{json_error, json_result};
use super::sse;
use super::{McpService, WorkerDispatcher};
use crate::dispatch::envelope::{self, HttpCheck, HttpHeaders};
use crate::dispatch::{Call, Dispatch, Reply, Scope};
use crate::handler::{Principal, Tenant};
use crate::protocol::error::ErrorCode;
use crate::protocol::jsonrpc::{Malformed, Notification};
use crate::protocol::meta::has_modern_envelope;
use crate::protocol::{Era, Incoming, McpError, Request, RequestId};

/// A request refused before dispatch, with the id to answer it under.
pub(crate) struct Rejection {
    id: Option<RequestId>,
    error: McpError,
}

impl Rejection {
    pub(crate) fn new(id: Option<&RequestId>, error: McpError) -> Self {
        Self {
            id: id.cloned(),
            error,
        }
    }

    fn with_id(mut self, id: &RequestId) -> Self {
        self.id = Some(id.clone());
        self
    }
}

/// Every path that no fixed route took: `/t/{tenant}/mcp` by method, anything else 404.
///
/// The tenant is cut out of the path by hand: a route pattern with a segment would run
/// actix-router's regex on every request (about 2.5% of a `tools/call`, BENCHMARKS.md).
pub(crate) async fn route(
    req: HttpRequest,
    payload: web::Payload,
    service: web::Data<McpService>,
    dispatcher: web::Data<WorkerDispatcher>,
) -> HttpResponse {
    let Some(tenant) = tenant_of(req.path()) else {
        return not_found().await;
    };
    let tenant = tenant.to_owned();
    match *req.method() {
        Method::POST => post(req, &tenant, payload, service, dispatcher).await,
        Method::GET | Method::DELETE => session_get_or_delete(req, &tenant, service).await,
        _ => method_not_allowed().await,
    }
}

/// The `{tenant}` of `/t/{tenant}/mcp`: one non-empty segment.
fn tenant_of(path: &str) -> Option<&str> {
    path.strip_prefix("/t/")?
        .strip_suffix("/mcp")
        .filter(|t| !t.is_empty() && !t.contains('/'))
}

async fn post(
    req: HttpRequest,
    tenant: &str,
    payload: web::Payload,
    service: web::Data<McpService>,
    dispatcher: web::Data<WorkerDispatcher>,
) -> HttpResponse {
    let service = service.into_inner();
    match handle(&req, tenant, payload, &service, &dispatcher).await {
        Ok(response) => response,
        Err(Rejection { id, error }) => {
            service.metrics.record_rejection();
            tracing::info!(
                tenant,
                code = error.code.code(),
                status = error.http_status(),
                "request refused"
            );
            let mut response = json_error(id.as_ref(), &error);
            if error.code == ErrorCode::Unauthorized {
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer"),
                );
            }
            response
        }
    }
}

async fn handle(
    req: &HttpRequest,
    slug: &str,
    payload: web::Payload,
    service: &Arc<McpService>,
    dispatcher: &WorkerDispatcher,
) -> Result<HttpResponse, Rejection> {
    if let Err(why) = service.http.guard.check(req) {
        tracing::warn!(why, "refused by the host/origin guard");
        return Err(Rejection::new(
            None,
            McpError::new(ErrorCode::Forbidden, why),
        ));
    }
    let body = read_body(payload, service).await?;
    let incoming =
        Incoming::parse(&body).map_err(|Malformed { id, error }| Rejection { id, error })?;
    let id = match &incoming {
        Incoming::Request(r) => Some(&r.id),
        _ => None,
    };
    let (tenant, principal) = resolve(req, slug, service, id)?;
    // The era is decided here, in the order of protocol-2026-07-28 §4.5: a legacy handshake;
    // the modern envelope (never looking at sessions); a session's id; otherwise modern.
    let session_id = header_str(req, legacy::SESSION_HEADER).map(str::trim);
    match incoming {
        Incoming::Request(request) if legacy::is_handshake(req, &request) => {
            legacy::initialize(request, tenant, principal, service)
        }
        Incoming::Request(request) if has_modern_envelope(request.params.as_ref()) => {
            dispatch(req, request, tenant, principal, service, dispatcher).await
        }
        Incoming::Request(request) => match session_id {
            Some(sid) => {
                let found = legacy::session(req, sid, &tenant, &principal, service)
                    .map_err(|r| r.with_id(&request.id))?;
                legacy::request(req, request, found, tenant, service).await
            }
            None if legacy::names_legacy_version(req) => Err(Rejection::new(
                Some(&request.id),
                McpError::invalid_request(
                    "No Mcp-Session-Id: a legacy client must begin with initialize",
                ),
            )),
            None => dispatch(req, request, tenant, principal, service, dispatcher).await,
        },
        Incoming::Notification(notification) => match session_id {
            Some(sid) => {
                let found = legacy::session(req, sid, &tenant, &principal, service)?;
                Ok(legacy::notification(found, notification, service))
            }
            None => accept_notification(req, &notification, service),
        },
        Incoming::Response(response) => match session_id {
            Some(sid) => {
                legacy::session(req, sid, &tenant, &principal, service)?;
                legacy::answer(sid, response, service).await
            }
            None => Err(Rejection::new(
                None,
                McpError::invalid_request("No server-to-client request is awaiting a response"),
            )),
        },
    }
}

/// The body, within `max_body_bytes` (413) and `body_timeout` (408).
async fn read_body(payload: web::Payload, service: &McpService) -> Result<web::Bytes, Rejection> {
    let limit = service.http.max_body_bytes;
    match tokio::time::timeout(service.http.body_timeout, payload.to_bytes_limited(limit)).await {
        Err(_) => Err(Rejection::new(
            None,
            McpError::new(ErrorCode::RequestTimeout, "Request body timed out"),
        )),
        Ok(Err(_)) => Err(Rejection::new(
            None,
            McpError::new(
                ErrorCode::PayloadTooLarge,
                format!("Request body exceeds {limit} bytes"),
            ),
        )),
        Ok(Ok(Err(e))) => Err(Rejection::new(
            None,
            McpError::invalid_request(format!("Could not read the request body: {e}")),
        )),
        Ok(Ok(Ok(body))) => Ok(body),
    }
}

/// The tenant (404 if unknown) and who is calling (401 if not authenticated).
fn resolve(
    req: &HttpRequest,
    slug: &str,
    service: &McpService,
    id: Option<&RequestId>,
) -> Result<(Arc<Tenant>, Principal), Rejection> {
    let tenant = service.directory.tenant(slug).ok_or_else(|| {
        Rejection::new(
            id,
            McpError::new(ErrorCode::UnknownTenant, "Unknown tenant"),
        )
    })?;
    match service.authenticator.authenticate(&tenant, bearer(req)) {
        Ok(principal) => Ok((tenant, principal)),
        Err(reason) => {
            tracing::info!(tenant = tenant.slug(), %reason, "authentication failed");
            Err(Rejection::new(
                id,
                McpError::new(ErrorCode::Unauthorized, "Unauthorized"),
            ))
        }
    }
}

/// Client notifications are accepted (202) and need no answer. The one the core defines on
/// HTTP would be `notifications/cancelled`, which 2026-07-28 replaced with closing the stream.
fn accept_notification(
    req: &HttpRequest,
    n: &Notification,
    service: &McpService,
) -> Result<HttpResponse, Rejection> {
    if let Some(m) = header_str(req, "mcp-method") {
        if m.trim() != n.method {
            return Err(Rejection::new(
                None,
                McpError::header_mismatch(
                    "Mcp-Method header does not match the notification's method",
                ),
            ));
        }
    }
    service.metrics.record_notification();
    Ok(HttpResponse::Accepted().finish())
}

async fn dispatch(
    req: &HttpRequest,
    request: Request,
    tenant: Arc<Tenant>,
    principal: Principal,
    service: &Arc<McpService>,
    dispatcher: &WorkerDispatcher,
) -> Result<HttpResponse, Rejection> {
    let id = request.id.clone();
    let headers = mcp_headers(req).map_err(|e| Rejection::new(Some(&id), e))?;
    let catalog = tenant.catalog();
    let envelope = envelope::check_modern(
        &request,
        Some(HttpCheck {
            headers: &headers,
            catalog: &catalog,
        }),
    )
    .map_err(|e| Rejection::new(Some(&id), e))?;

    // Notifications travel on SSE; a client that cannot read SSE gets only the result.
    let (notifier, notifications) = envelope.notifier().filter(|_| accepts_sse(req)).unzip();
    let cancel = CancellationToken::new();
    let in_flight = InFlight::new(cancel.clone(), service.clone());
    let call = Call {
        tenant: tenant.clone(),
        catalog,
        principal,
        scope: Scope::from(envelope),
        request,
        notifier,
        cancel,
        shim: None,
    };
    Ok(match notifications {
        // One JSON reply: run on this task when the worker can (no actor hop).
        None => {
            let reply = dispatcher.reply(call).await;
            in_flight.finish();
            frame(service, &id, reply, &tenant, Era::Modern)
        }
        Some(rx) => {
            sse::request_stream(
                service.clone(),
                tenant,
                id,
                Era::Modern,
                Box::pin(dispatcher.actor.send(Dispatch(call))),
                rx,
                in_flight,
            )
            .await
        }
    })
}

/// Frames a reply that needs no stream of its own (a listen reply opens one).
pub(crate) fn frame(
    service: &Arc<McpService>,
    id: &RequestId,
    reply: Reply,
    tenant: &Arc<Tenant>,
    era: Era,
) -> HttpResponse {
    service.metrics.record_reply(&reply);
    match reply {
        Reply::Result(r) => json_result(id, &r),
        Reply::Error(e) => {
            let mut response = json_error(Some(id), &e);
            if let Ok(status) = StatusCode::from_u16(error_status(era, &e)) {
                *response.status_mut() = status;
            }
            response
        }
        Reply::Listen(listen) => sse::listen_stream(service, tenant.clone(), listen),
        // A modern request is cancelled only by its client going away: nobody reads this.
        Reply::Cancelled if era == Era::Modern => HttpResponse::NoContent().finish(),
        // A legacy request cancelled by `notifications/cancelled` (or its session's end) gets
        // no response, yet a POSTed request is answered with a stream: an empty one.
        Reply::Cancelled => sse::empty_stream(),
    }
}

/// The HTTP status of a JSON-RPC error answering a request. On the legacy wire an error
/// answers its request with 200, except that a session that ended is 404 like any other
/// unknown session.
pub(crate) fn error_status(era: Era, error: &McpError) -> u16 {
    match era {
        Era::Modern => error.http_status(),
        Era::Legacy if error.code == ErrorCode::UnknownSession => error.http_status(),
        Era::Legacy => 200,
    }
}

/// Whether the client reads SSE (a missing `Accept` accepts anything).
pub(crate) fn accepts_sse(req: &HttpRequest) -> bool {
    header_str(req, "accept").is_none_or(|a| a.contains("text/event-stream") || a.contains("*/*"))
}

pub(crate) fn header_str<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn bearer(req: &HttpRequest) -> Option<&str> {
    let value = header_str(req, "authorization")?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The MCP headers of the request. A repeated MCP header is refused: intermediaries route on
/// these headers, and two values would let them see one request and the server another.
fn mcp_headers(req: &HttpRequest) -> Result<HttpHeaders<'_>, McpError> {
    let single = |name: &str| {
        let mut values = req.headers().get_all(name);
        let first = values.next().and_then(|v| v.to_str().ok());
        match values.next() {
            Some(_) => Err(McpError::header_mismatch(format!("Repeated {name} header"))),
            None => Ok(first),
        }
    };
    let params = req
        .headers()
        .iter()
        .filter_map(|(name, value)| {
            let suffix = name.as_str().strip_prefix("mcp-param-")?;
            Some((suffix, value.to_str().ok()?))
        })
        .collect();
    Ok(HttpHeaders {
        protocol_version: single("mcp-protocol-version")?,
        method: single("mcp-method")?,
        name: single("mcp-name")?,
        params,
    })
}

/// GET (the session's stream) and DELETE (end the session) with an `Mcp-Session-Id`; without
/// one no legacy session is named, so 405.
async fn session_get_or_delete(
    req: HttpRequest,
    slug: &str,
    service: web::Data<McpService>,
) -> HttpResponse {
    let service = service.into_inner();
    let Some(sid) = header_str(&req, legacy::SESSION_HEADER).map(str::trim) else {
        return method_not_allowed().await;
    };
    let outcome = async {
        if let Err(why) = service.http.guard.check(&req) {
            return Err(Rejection::new(
                None,
                McpError::new(ErrorCode::Forbidden, why),
            ));
        }
        let (tenant, principal) = resolve(&req, slug, &service, None)?;
        let found = legacy::session(&req, sid, &tenant, &principal, &service)?;
        if req.method() == actix_web::http::Method::DELETE {
            Ok(legacy::end(sid, &service, found))
        } else {
            legacy::open_stream(&req, found, &service).await
        }
    };
    match outcome.await {
        Ok(response) => response,
        Err(Rejection { id, error }) => json_error(id.as_ref(), &error),
    }
}

/// Other methods on the endpoint, and GET or DELETE without a session: 405.
pub(crate) async fn method_not_allowed() -> HttpResponse {
    let mut resp = json_error(
        None,
        &McpError::invalid_request("Method not allowed: use POST"),
    );
    *resp.status_mut() = actix_web::http::StatusCode::METHOD_NOT_ALLOWED;
    resp.headers_mut()
        .insert(header::ALLOW, header::HeaderValue::from_static("POST"));
    resp
}

pub(crate) async fn not_found() -> HttpResponse {
    let mut resp = json_error(None, &McpError::invalid_request("Not found"));
    *resp.status_mut() = actix_web::http::StatusCode::NOT_FOUND;
    resp
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
