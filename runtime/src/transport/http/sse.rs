//! SSE framing: a request's own stream (notifications, then the final response) and the
//! long-lived `subscriptions/listen` stream.
//!
//! A stream's body owns the request's cancellation guard: when the client goes away actix
//! drops the body, the guard trips the token, and the dispatcher abandons the handler.
//! Keep-alive comments flow while nothing else does, so idle proxies keep the stream and a
//! closed client is noticed at the next write.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use actix::MailboxError;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::stream::{self, Stream, StreamExt};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::UnboundedReceiver;
use tokio::time::{interval_at, Instant, Interval};
use tokio_util::sync::DropGuard;

use super::endpoint::respond;
use super::response::{sse_event, SSE_PING};
use super::{McpService, Metrics};
use crate::dispatch::{Listen, Reply};
use crate::handler::OutgoingNotification;
use crate::protocol::jsonrpc::{error_bytes, notification_bytes, result_bytes};
use crate::protocol::{McpError, RequestId};
use crate::tenancy::Tenant;

pub(crate) type PendingReply = Pin<Box<dyn Future<Output = Result<Reply, MailboxError>>>>;

/// Counts an open stream for `/metrics` for as long as the body lives.
struct OpenStream(Arc<McpService>);

impl OpenStream {
    fn new(service: Arc<McpService>) -> Self {
        service.metrics.streams_open.fetch_add(1, Ordering::Relaxed);
        Self(service)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.metrics.streams_open.fetch_sub(1, Ordering::Relaxed);
    }
}

fn sse_response<S>(body: S) -> HttpResponse
where
    S: Stream<Item = Result<Bytes, Infallible>> + 'static,
{
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}

fn keepalive(service: &McpService) -> Interval {
    let period = service.http.sse_keepalive;
    interval_at(Instant::now() + period, period)
}

fn notification_event(n: &OutgoingNotification) -> Bytes {
    sse_event(&notification_bytes(n.method, &n.params))
}

/// The final event of a request stream, or `None` when the request was cancelled.
fn final_event(service: &McpService, id: &RequestId, reply: Reply) -> Option<Bytes> {
    match reply {
        Reply::Result(r) => {
            let input_required =
                r.get("resultType").and_then(|v| v.as_str()) == Some("input_required");
            Metrics::inc(if input_required {
                &service.metrics.input_required
            } else {
                &service.metrics.complete
            });
            Some(sse_event(&result_bytes(id, &serde_json::Value::Object(r))))
        }
        Reply::Error(e) => {
            Metrics::inc(&service.metrics.errors);
            Some(sse_event(&error_bytes(Some(id), &e)))
        }
        Reply::Cancelled | Reply::Listen(_) => {
            Metrics::inc(&service.metrics.cancelled);
            None
        }
    }
}

/// Waits for the first of: the reply (then answer JSON, unless notifications were queued)
/// or a notification (then switch to SSE for the rest of the request).
pub(crate) async fn request_stream(
    service: Arc<McpService>,
    tenant: Arc<Tenant>,
    id: RequestId,
    mut reply: PendingReply,
    mut rx: UnboundedReceiver<OutgoingNotification>,
    guard: DropGuard,
) -> HttpResponse {
    let unavailable = || Reply::Error(McpError::internal("Internal error: dispatcher unavailable"));
    let mut pending = VecDeque::new();
    tokio::select! {
        biased;
        r = &mut reply => {
            let r = r.unwrap_or_else(|_| unavailable());
            while let Ok(n) = rx.try_recv() {
                pending.push_back(notification_event(&n));
            }
            if pending.is_empty() || matches!(r, Reply::Listen(_)) {
                drop(guard.disarm());
                return respond(&service, &id, r, &tenant);
            }
            pending.extend(final_event(&service, &id, r));
            let open = OpenStream::new(service);
            return sse_response(stream::iter(pending.into_iter().map(Ok)).chain(stream::once(async move {
                drop(open);
                Ok(Bytes::new())
            })));
        }
        Some(n) = rx.recv() => pending.push_back(notification_event(&n)),
    }

    struct State {
        service: Arc<McpService>,
        id: RequestId,
        reply: Option<PendingReply>,
        rx: UnboundedReceiver<OutgoingNotification>,
        rx_open: bool,
        pending: VecDeque<Bytes>,
        ping: Interval,
        _guard: DropGuard,
        _open: OpenStream,
    }
    let state = State {
        ping: keepalive(&service),
        _open: OpenStream::new(service.clone()),
        service,
        id,
        reply: Some(reply),
        rx,
        rx_open: true,
        pending,
        _guard: guard,
    };
    let body = stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.pending.pop_front() {
                return Some((Ok(event), s));
            }
            let reply = s.reply.as_mut()?;
            tokio::select! {
                biased;
                n = s.rx.recv(), if s.rx_open => match n {
                    Some(n) => s.pending.push_back(notification_event(&n)),
                    None => s.rx_open = false,
                },
                r = reply => {
                    s.reply = None;
                    while let Ok(n) = s.rx.try_recv() {
                        s.pending.push_back(notification_event(&n));
                    }
                    let r = r.unwrap_or_else(|_| Reply::Error(McpError::internal("Internal error: dispatcher unavailable")));
                    s.pending.extend(final_event(&s.service, &s.id, r));
                }
                _ = s.ping.tick() => return Some((Ok(Bytes::from_static(SSE_PING)), s)),
            }
        }
    });
    sse_response(body)
}

/// A `subscriptions/listen` stream: the acknowledgement, then each honoured change, until
/// the client leaves or the server shuts down (then the closing result).
pub(crate) fn listen_stream(
    service: &Arc<McpService>,
    tenant: Arc<Tenant>,
    listen: Listen,
) -> HttpResponse {
    struct State {
        listen: Listen,
        tenant: Arc<Tenant>,
        acknowledged: bool,
        done: bool,
        ping: Interval,
        shutdown: tokio_util::sync::CancellationToken,
        _open: OpenStream,
    }
    let state = State {
        ping: keepalive(service),
        shutdown: service.shutdown.clone(),
        listen,
        tenant,
        acknowledged: false,
        done: false,
        _open: OpenStream::new(service.clone()),
    };
    let body = stream::unfold(state, |mut s| async move {
        if !s.acknowledged {
            s.acknowledged = true;
            let (method, params) = s.listen.acknowledgement();
            return Some((Ok(sse_event(&notification_bytes(method, &params))), s));
        }
        loop {
            if s.done {
                return None;
            }
            tokio::select! {
                biased;
                _ = s.shutdown.cancelled() => {
                    s.done = true;
                    let closing = s.listen.closing_result(s.tenant.server_info());
                    let id = s.listen.subscription_id.clone();
                    return Some((Ok(sse_event(&result_bytes(&id, &serde_json::Value::Object(closing)))), s));
                }
                event = s.listen.events.recv() => match event {
                    Ok(event) => if let Some((method, params)) = s.listen.render(&event) {
                        return Some((Ok(sse_event(&notification_bytes(method, &params))), s));
                    },
                    Err(RecvError::Lagged(missed)) => tracing::warn!(missed, "listen stream lagged behind its tenant's changes"),
                    Err(RecvError::Closed) => {
                        s.done = true;
                        let closing = s.listen.closing_result(s.tenant.server_info());
                        let id = s.listen.subscription_id.clone();
                        return Some((Ok(sse_event(&result_bytes(&id, &serde_json::Value::Object(closing)))), s));
                    }
                },
                _ = s.ping.tick() => return Some((Ok(Bytes::from_static(SSE_PING)), s)),
            }
        }
    });
    sse_response(body)
}
