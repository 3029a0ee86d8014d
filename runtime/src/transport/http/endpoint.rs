//! `POST /t/{tenant}/mcp`: read the body within its limits, parse, guard, resolve and
//! authenticate, check the envelope, then hand the request to the worker's Dispatcher and
//! frame its reply as JSON, or as SSE when notifications come before the result.

use actix_web::http::header;
use actix_web::{web, HttpRequest, HttpResponse};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::response::{json_error, json_result};
use super::sse;
use super::{McpService, Metrics, WorkerDispatcher};
use crate::dispatch::Call;
use crate::dispatch::Scope;
use crate::dispatch::{envelope, Dispatch, HttpHeaders, Reply};
use crate::handler::Notifier;
use crate::protocol::error::ErrorCode;
use crate::protocol::jsonrpc::Malformed;
use crate::protocol::{Incoming, McpError};

pub(crate) async fn post(
    req: HttpRequest,
    tenant: web::Path<String>,
    payload: web::Payload,
    service: web::Data<McpService>,
    dispatcher: web::Data<WorkerDispatcher>,
) -> HttpResponse {
    let service = service.into_inner();
    let reject = |id, error: McpError| {
        Metrics::inc(&service.metrics.rejected_http);
        json_error(id, &error)
    };
    let body = match tokio::time::timeout(
        service.http.body_timeout,
        payload.to_bytes_limited(service.http.max_body_bytes),
    )
    .await
    {
        Err(_) => {
            return reject(
                None,
                McpError::new(ErrorCode::RequestTimeout, "Request body timed out"),
            )
        }
        Ok(Err(_)) => {
            let limit = service.http.max_body_bytes;
            return reject(
                None,
                McpError::new(
                    ErrorCode::PayloadTooLarge,
                    format!("Request body exceeds {limit} bytes"),
                ),
            );
        }
        Ok(Ok(Err(e))) => {
            return reject(
                None,
                McpError::invalid_request(format!("Could not read the request body: {e}")),
            )
        }
        Ok(Ok(Ok(body))) => body,
    };
    let incoming = Incoming::parse(&body);
    if let Err(why) = service.http.guard.check(&req) {
        tracing::warn!(why, "refused by the host/origin guard");
        let id = match &incoming {
            Ok(Incoming::Request(r)) => Some(&r.id),
            Err(Malformed { id, .. }) => id.as_ref(),
            _ => None,
        };
        return reject(id, McpError::new(ErrorCode::Forbidden, why));
    }
    let request = match incoming {
        Err(Malformed { id, error }) => return reject(id.as_ref(), error),
        Ok(Incoming::Notification(n)) => {
            if let Some(m) = header_str(&req, "mcp-method") {
                if m.trim() != n.method {
                    return reject(
                        None,
                        McpError::header_mismatch(
                            "Mcp-Method header does not match the notification's method",
                        ),
                    );
                }
            }
            Metrics::inc(&service.metrics.notifications);
            return HttpResponse::Accepted().finish();
        }
        Ok(Incoming::Response(_)) => {
            return reject(
                None,
                McpError::invalid_request("No server-to-client request is awaiting a response"),
            );
        }
        Ok(Incoming::Request(r)) => r,
    };

    let Some(tenant) = service.directory.tenant(&tenant) else {
        return reject(
            Some(&request.id),
            McpError::new(ErrorCode::UnknownTenant, "Unknown tenant"),
        );
    };
    let principal = match service.authenticator.authenticate(&tenant, bearer(&req)) {
        Ok(p) => p,
        Err(reason) => {
            tracing::info!(tenant = tenant.slug(), %reason, "authentication failed");
            let mut resp = reject(
                Some(&request.id),
                McpError::new(ErrorCode::Unauthorized, "Unauthorized"),
            );
            resp.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                header::HeaderValue::from_static("Bearer"),
            );
            return resp;
        }
    };
    let headers = match mcp_headers(&req) {
        Ok(h) => h,
        Err(e) => return reject(Some(&request.id), e),
    };
    let envelope = match envelope::check_modern(&request, Some(&headers)) {
        Ok(e) => e,
        Err(e) => return reject(Some(&request.id), e),
    };

    let cancel = CancellationToken::new();
    // Notifications travel on SSE; a client that cannot read SSE gets only the result.
    let accepts_sse = header_str(&req, "accept")
        .is_none_or(|a| a.contains("text/event-stream") || a.contains("*/*"));
    let (notifier, notifications) = if envelope.may_notify() && accepts_sse {
        let (tx, rx) = mpsc::unbounded_channel();
        let n = Notifier {
            tx,
            progress_token: envelope.meta.progress_token.clone(),
            log_level: envelope.meta.log_level,
        };
        (Some(n), Some(rx))
    } else {
        (None, None)
    };
    let id = request.id.clone();
    let call = Call {
        tenant: tenant.clone(),
        principal,
        scope: Scope::from(&envelope),
        request,
        headers: Some(headers),
        notifier,
        cancel: cancel.clone(),
    };
    let guard = cancel.drop_guard();
    let reply = dispatcher.0.send(Dispatch(call));
    match notifications {
        None => {
            let reply = reply.await.unwrap_or_else(|_| {
                Reply::Error(McpError::internal("Internal error: dispatcher unavailable"))
            });
            drop(guard.disarm());
            respond(&service, &id, reply, &tenant)
        }
        Some(rx) => sse::request_stream(service, tenant, id, Box::pin(reply), rx, guard).await,
    }
}

/// Frames a reply that needs no stream.
pub(crate) fn respond(
    service: &std::sync::Arc<McpService>,
    id: &crate::protocol::RequestId,
    reply: Reply,
    tenant: &std::sync::Arc<crate::tenancy::Tenant>,
) -> HttpResponse {
    match reply {
        Reply::Result(r) => {
            let input_required =
                r.get("resultType").and_then(|v| v.as_str()) == Some("input_required");
            Metrics::inc(if input_required {
                &service.metrics.input_required
            } else {
                &service.metrics.complete
            });
            json_result(id, r)
        }
        Reply::Error(e) => {
            Metrics::inc(&service.metrics.errors);
            json_error(Some(id), &e)
        }
        Reply::Listen(listen) => sse::listen_stream(service, tenant.clone(), listen),
        Reply::Cancelled => {
            Metrics::inc(&service.metrics.cancelled);
            HttpResponse::NoContent().finish()
        }
    }
}

fn header_str<'a>(req: &'a HttpRequest, name: &str) -> Option<&'a str> {
    req.headers().get(name).and_then(|v| v.to_str().ok())
}

fn bearer(req: &HttpRequest) -> Option<&str> {
    let value = header_str(req, "authorization")?;
    let (scheme, token) = value.split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| token.trim())
}

/// The MCP headers of the request. A repeated MCP header is refused: intermediaries route on
/// these headers, and two values would let them see one request and the server another.
fn mcp_headers(req: &HttpRequest) -> Result<HttpHeaders, McpError> {
    let single = |name: &str| {
        let mut values = req.headers().get_all(name);
        let first = values
            .next()
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
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
            Some((suffix.to_owned(), value.to_str().ok()?.to_owned()))
        })
        .collect();
    Ok(HttpHeaders {
        protocol_version: single("mcp-protocol-version")?,
        method: single("mcp-method")?,
        name: single("mcp-name")?,
        params,
    })
}

/// GET and DELETE on the endpoint: no legacy session can exist here, so 405.
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
