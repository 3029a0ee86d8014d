//! SSE streams, once it is decided that a response is one: a request's own stream
//! (notifications and, on a legacy session, the shim's server-to-client requests, then the
//! final response), the long-lived `subscriptions/listen` stream, and a legacy session's GET
//! stream.
//!
//! A request stream's body owns the request's [`InFlight`] guard: when the client goes away
//! actix drops the body, and the guard cancels the handler. Keep-alive comments flow while
//! nothing else does, so idle proxies keep the stream and a closed client is noticed at the
//! next write.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::stream;
use tokio::sync::broadcast::error::RecvError;
use tokio::sync::mpsc::Receiver;
use tokio::time::{interval_at, sleep, Instant, Interval, Sleep};

use super::inflight::InFlight;
use super::response::{sse_event, sse_response, SSE_PING};
use super::McpService;
use crate::budget::Charge;
use crate::dispatch::{Listen, Reply};
use crate::handler::{ListChanged, OutgoingMessage};
use crate::protocol::jsonrpc::{error_bytes, notification_bytes, result_bytes};
use crate::protocol::RequestId;

/// A reply still to come.
pub(crate) type PendingReply = Pin<Box<dyn Future<Output = Reply>>>;

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

fn keepalive(service: &McpService) -> Interval {
    let period = service.http.sse_keepalive;
    interval_at(Instant::now() + period, period)
}

pub(crate) fn notification_event(n: &OutgoingMessage) -> Bytes {
    sse_event(&n.to_bytes())
}

/// Queues the notifications already sent when the reply arrived: they precede it.
pub(crate) fn drain(rx: &mut Receiver<Box<OutgoingMessage>>, pending: &mut VecDeque<Bytes>) {
    while let Ok(n) = rx.try_recv() {
        pending.push_back(notification_event(&n));
    }
}

/// The final event of a request stream; `None` when there is nothing to send.
fn final_event(service: &McpService, id: &RequestId, reply: Reply) -> Option<Bytes> {
    service.count_reply(&reply);
    match reply {
        Reply::Result(r) => Some(sse_event(&r.response_bytes(id))),
        Reply::Error(e) => Some(sse_event(&error_bytes(Some(id), &e))),
        Reply::Cancelled | Reply::Listen(_) => None,
    }
}

/// A request whose reply came with notifications queued before it: they, then the reply.
pub(crate) fn replay(
    service: Arc<McpService>,
    id: &RequestId,
    mut pending: VecDeque<Bytes>,
    reply: Reply,
) -> HttpResponse {
    pending.extend(final_event(&service, id, reply));
    let open = OpenStream::new(service);
    sse_response(stream::unfold(
        (pending, open),
        |(mut pending, open)| async move {
            pending
                .pop_front()
                .map(|event| (Ok(event), (pending, open)))
        },
    ))
}

/// A request whose first notification came before its reply: `pending` (that notification),
/// then every further one as it comes, then the reply, with keep-alives meanwhile.
pub(crate) fn request_stream(
    service: Arc<McpService>,
    id: RequestId,
    reply: PendingReply,
    rx: Receiver<Box<OutgoingMessage>>,
    pending: VecDeque<Bytes>,
    in_flight: InFlight<'static>,
) -> HttpResponse {
    struct State {
        service: Arc<McpService>,
        id: RequestId,
        reply: Option<PendingReply>,
        rx: Receiver<Box<OutgoingMessage>>,
        rx_open: bool,
        pending: VecDeque<Bytes>,
        ping: Interval,
        in_flight: Option<InFlight<'static>>,
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
                    s.pending.extend(final_event(&s.service, &s.id, r));
                }
                _ = s.ping.tick() => return Some((Ok(Bytes::from_static(SSE_PING)), s)),
            }
        }
    });
    sse_response(body)
}

/// A `subscriptions/listen` stream: the acknowledgement, then each honoured change, until
/// the client leaves, or the server shuts down or the stream idles for `streams.listen_idle`
/// (then the closing result). The stream's charges live in `listen`, and go with the body.
pub(crate) fn listen_stream(service: &Arc<McpService>, listen: Box<Listen>) -> HttpResponse {
    struct State {
        listen: Box<Listen>,
        pending: VecDeque<Bytes>,
        done: bool,
        ping: Interval,
        /// Reset by every change delivered; when it fires the stream closes.
        idle: Pin<Box<Sleep>>,
        idle_for: Duration,
        shutdown: tokio_util::sync::CancellationToken,
        _open: OpenStream,
    }
    let (method, params) = listen.acknowledgement();
    let idle_for = service.http.streams.listen_idle;
    let state = State {
        idle: Box::pin(sleep(idle_for)),
        idle_for,
        pending: VecDeque::from([sse_event(&notification_bytes(method, &params))]),
        ping: keepalive(service),
        shutdown: service.shutdown.clone(),
        listen,
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
                () = &mut s.idle => {
                    tracing::info!("listen stream closed after idling");
                    s.close();
                }
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
                let idle_for = self.idle_for;
                self.idle.as_mut().reset(Instant::now() + idle_for);
            }
        }

        /// The closing result, then the end of the stream. The server info is the tenant's
        /// as it is at the close, which may have changed since the stream opened.
        fn close(&mut self) {
            self.done = true;
            let closing = self
                .listen
                .closing_result(self.listen.tenant.view().server_info());
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
    charge: Charge,
) -> HttpResponse {
    struct State {
        rx: Receiver<Box<OutgoingMessage>>,
        ping: Interval,
        shutdown: tokio_util::sync::CancellationToken,
        _open: OpenStream,
        /// What the stream is charged, given back when the body is dropped.
        _charge: Charge,
    }
    let state = State {
        rx,
        _charge: charge,
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
