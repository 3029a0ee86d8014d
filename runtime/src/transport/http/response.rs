//! The bytes of successful responses: a JSON-RPC result as a JSON body, and SSE: the
//! response head, one event per JSON-RPC message, and the keep-alive comment. Errors are
//! `error.rs`'s.

use std::convert::Infallible;

use actix_web::http::header::HeaderValue;
use actix_web::HttpResponse;
use bytes::Bytes;
use futures_util::Stream;
use serde::Serialize;

use crate::protocol::jsonrpc::result_bytes;
use crate::protocol::RequestId;

pub(crate) fn json_result<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> HttpResponse {
    json_body(result_bytes(id, result))
}

/// A response already written as JSON.
pub(crate) fn json_body(bytes: Vec<u8>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(json_content_type())
        .body(bytes)
}

/// `application/json`, from static text: a header value made from a `&str` is a copy, an
/// allocation on every response.
pub(crate) fn json_content_type() -> HeaderValue {
    HeaderValue::from_static("application/json")
}

/// An SSE response streaming `body`.
pub(crate) fn sse_response<S>(body: S) -> HttpResponse
where
    S: Stream<Item = Result<Bytes, Infallible>> + 'static,
{
    HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-cache"))
        .insert_header(("x-accel-buffering", "no"))
        .streaming(body)
}

/// One SSE event carrying one JSON-RPC message.
pub(crate) fn sse_event(message: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(message.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
    out.into()
}

/// The comment sent on an idle stream, so proxies keep it and a closed client is noticed.
pub(crate) const SSE_PING: &[u8] = b": ping\n\n";
