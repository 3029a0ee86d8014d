//! How a reply becomes an HTTP response, in one place: a JSON body, an error with its own
//! status, a listen stream, or, when notifications come before the result, an SSE stream
//! that ends with it.

use std::collections::VecDeque;
use std::sync::Arc;

use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use tokio::sync::mpsc::Receiver;

use super::error::{answer_status, RpcError};
use super::inflight::InFlight;
use super::response::json_body;
use super::sse::{self, PendingReply};
use super::McpService;
use crate::dispatch::Reply;
use crate::handler::OutgoingMessage;
use crate::protocol::{Era, RequestId};

/// Frames a reply that came without notifications before it.
pub(crate) fn frame(
    service: &Arc<McpService>,
    id: &RequestId,
    reply: Reply,
    era: Era,
) -> HttpResponse {
    service.count_reply(&reply);
    match reply {
        Reply::Result(r) => json_body(r.response_bytes(id)),
        Reply::Error(e) => RpcError::answering(id, e, era).error_response(),
        Reply::Listen(listen) => sse::listen_stream(service, listen),
        // A modern request is cancelled only by its client going away: nobody reads this.
        Reply::Cancelled if era == Era::Modern => HttpResponse::NoContent().finish(),
        // A legacy request cancelled by `notifications/cancelled` (or its session's end) gets
        // no response, yet a POSTed request is answered with a stream: an empty one.
        Reply::Cancelled => sse::empty_stream(),
    }
}

/// The response to a request that may notify before its result: waits for the first of the
/// reply (then answers as [`frame`] does, unless notifications were queued before it) or a
/// notification (then streams SSE for the rest of the request). An error that arrives before
/// anything was written keeps its own HTTP status: the queued notifications are dropped,
/// since the request failed anyway.
pub(crate) async fn respond(
    service: Arc<McpService>,
    id: RequestId,
    era: Era,
    mut reply: PendingReply,
    mut rx: Receiver<Box<OutgoingMessage>>,
    in_flight: InFlight<'_>,
) -> HttpResponse {
    let mut pending = VecDeque::new();
    tokio::select! {
        biased;
        r = &mut reply => {
            in_flight.finish();
            sse::drain(&mut rx, &mut pending);
            let keeps_status = matches!(&r, Reply::Error(e) if answer_status(era, e) != StatusCode::OK);
            if pending.is_empty() || keeps_status || matches!(r, Reply::Listen(_)) {
                frame(&service, &id, r, era)
            } else {
                sse::replay(service, &id, pending, r)
            }
        }
        Some(n) = rx.recv() => {
            pending.push_back(sse::notification_event(&n));
            sse::request_stream(service, id, reply, rx, pending, in_flight.into_owned())
        }
    }
}
