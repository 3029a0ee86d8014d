//! SSE framing: a request's own stream (notifications and, on a legacy session, the shim's
//! server-to-client requests, then the final response), the long-lived
//! `subscriptions/listen` stream, and a legacy session's GET stream.
//!
//! A request stream's body owns the request's [`InFlight`] guard: when the client goes away
//! actix drops the body, and the guard cancels the handler. Keep-alive comments flow while
//! nothing else does, so idle proxies keep the stream and a closed client is noticed at the
//! next write.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use actix::MailboxError;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::stream::{self, Stream};
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::Receiver;
use tokio::time::{interval_at, Instant, Interval};

use super::endpoint::{error_status, frame};
use super::inflight::InFlight;
use super::response::{sse_event, SSE_PING};
use super::McpService;
use crate::dispatch::{Listen, Reply};
use crate::handler::{OutgoingMessage, Tenant};
use crate::protocol::jsonrpc::{error_bytes, notification_bytes, result_bytes};
use crate::protocol::{Era, RequestId};
use crate::tenancy::ListChanged;

pub(crate) type PendingReply = Pin<Box<dyn Future<Output = Result<Reply, MailboxError>>>>;

/// Counts an open stream for `/metrics` for as long as the body lives.
struct OpenStream(Arc<McpService>);

impl OpenStream {
    fn new(service: Arc<McpService>) -> Self {
        service.metrics.stream_opened();
        Self(service)
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.metrics.stream_closed();
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

fn notification_event(n: &OutgoingMessage) -> Bytes {
    sse_event(&n.to_bytes())
}

/// Queues the notifications already sent when the reply arrived: they precede it.
fn drain(rx: &mut Receiver<Box<OutgoingMessage>>, pending: &mut VecDeque<Bytes>) {
    while let Ok(n) = rx.try_recv() {
        pending.push_back(notification_event(&n));
    }
}

/// The final event of a request stream; `None` when there is nothing to send.
fn final_event(service: &McpService, id: &RequestId, reply: Reply) -> Option<Bytes> {
    service.metrics.record_reply(&reply);
    match reply {
        Reply::Result(r) => Some(sse_event(&result_bytes(id, &r))),
        Reply::Error(e) => Some(sse_event(&error_bytes(Some(id), &e))),
        Reply::Cancelled | Reply::Listen(_) => None,
    }
}

/// Waits for the first of: the reply (then answer as JSON, unless notifications were queued
/// before it) or a notification (then switch to SSE for the rest of the request). An error
/// that arrives before anything was written keeps its own HTTP status: the queued
/// notifications are dropped, since the request failed anyway.
pub(crate) async fn request_stream(
    service: Arc<McpService>,
    tenant: Arc<Tenant>,
    id: RequestId,
    era: Era,
    mut reply: PendingReply,
    mut rx: Receiver<Box<OutgoingMessage>>,
    in_flight: InFlight,
) -> HttpResponse {
    let mut pending = VecDeque::new();
    tokio::select! {
        biased;
        r = &mut reply => {
            let r = r.unwrap_or_else(|_| Reply::unavailable());
            in_flight.finish();
            drain(&mut rx, &mut pending);
            let keeps_status = matches!(&r, Reply::Error(e) if error_status(era, e) != 200);
            if pending.is_empty() || keeps_status || matches!(r, Reply::Listen(_)) {
                return frame(&service, &id, r, &tenant, era);
            }
            pending.extend(final_event(&service, &id, r));
            let open = OpenStream::new(service);
            return sse_response(stream::unfold((pending, open), |(mut pending, open)| async move {
                pending.pop_front().map(|event| (Ok(event), (pending, open)))
            }));
        }
        Some(n) = rx.recv() => pending.push_back(notification_event(&n)),
    }

    struct State {
        service: Arc<McpService>,
        id: RequestId,
        reply: Option<PendingReply>,
        rx: Receiver<Box<OutgoingMessage>>,
        rx_open: bool,
        pending: VecDeque<Bytes>,
        ping: Interval,
        in_flight: Option<InFlight>,
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
        in_flight: Some(in_flight),
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
                    if let Some(in_flight) = s.in_flight.take() {
                        in_flight.finish();
                    }
                    drain(&mut s.rx, &mut s.pending);
                    let r = r.unwrap_or_else(|_| Reply::unavailable());
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
        pending: VecDeque<Bytes>,
        done: bool,
        ping: Interval,
        shutdown: tokio_util::sync::CancellationToken,
        _open: OpenStream,
    }
    let (method, params) = listen.acknowledgement();
    let state = State {
        pending: VecDeque::from([sse_event(&notification_bytes(method, &params))]),
        ping: keepalive(service),
        shutdown: service.shutdown.clone(),
        listen,
        tenant,
        done: false,
        _open: OpenStream::new(service.clone()),
    };
    let body = stream::unfold(state, |mut s| async move {
        loop {
            if let Some(event) = s.pending.pop_front() {
                return Some((Ok(event), s));
            }
            if s.done {
                return None;
            }
            tokio::select! {
                biased;
                _ = s.shutdown.cancelled() => s.close(),
                event = s.listen.events.recv() => match event {
                    Ok(event) => s.push(&event),
                    // Missed changes are unknown: announce every list this stream follows.
                    Err(RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "listen stream lagged behind its tenant's changes");
                        for event in &ListChanged::LISTS {
                            s.push(event);
                        }
                    }
                    Err(RecvError::Closed) => s.close(),
                },
                _ = s.ping.tick() => return Some((Ok(Bytes::from_static(SSE_PING)), s)),
            }
        }
    });

    impl State {
        fn push(&mut self, event: &ListChanged) {
            if let Some((method, params)) = self.listen.render(event) {
                self.pending
                    .push_back(sse_event(&notification_bytes(method, &params)));
            }
        }

        /// The closing result, then the end of the stream.
        fn close(&mut self) {
            self.done = true;
            let closing = self.listen.closing_result(self.tenant.server_info());
            let id = &self.listen.subscription_id;
            self.pending.push_back(sse_event(&result_bytes(
                id,
                &serde_json::Value::Object(closing),
            )));
        }
    }

    sse_response(body)
}

/// A stream that ends at once, with nothing on it.
pub(crate) fn empty_stream() -> HttpResponse {
    sse_response(stream::empty())
}

/// A legacy session's GET stream: the session's notifications not tied to a request, until
/// the session ends, the client leaves or the server shuts down.
pub(crate) fn session_stream(
    service: &Arc<McpService>,
    rx: Receiver<Box<OutgoingMessage>>,
) -> HttpResponse {
    struct State {
        rx: Receiver<Box<OutgoingMessage>>,
        ping: Interval,
        shutdown: tokio_util::sync::CancellationToken,
        _open: OpenStream,
    }
    let state = State {
        rx,
        ping: keepalive(service),
        shutdown: service.shutdown.clone(),
        _open: OpenStream::new(service.clone()),
    };
    let body = stream::unfold(state, |mut s| async move {
        tokio::select! {
            biased;
            _ = s.shutdown.cancelled() => None,
            message = s.rx.recv() => {
                let event = notification_event(&*message?);
                Some((Ok(event), s))
            }
            _ = s.ping.tick() => Some((Ok(Bytes::from_static(SSE_PING)), s)),
        }
    });
    sse_response(body)
}
