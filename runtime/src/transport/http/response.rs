//! JSON-RPC bodies as HTTP responses: every error, including 404, 405, 413 and the guard's
//! 403, carries a JSON-RPC error body, because a modern client tells a modern server from a
//! legacy one by that body.

use actix_web::http::StatusCode;
use actix_web::HttpResponse;
use serde::Serialize;

use crate::protocol::jsonrpc::{error_bytes, result_bytes};
use crate::protocol::{McpError, RequestId};

pub(crate) fn json_error(id: Option<&RequestId>, error: &McpError) -> HttpResponse {
    let status = StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::BAD_REQUEST);
    HttpResponse::build(status)
        .content_type("application/json")
        .body(error_bytes(id, error))
}

pub(crate) fn json_result<R: Serialize + ?Sized>(id: &RequestId, result: &R) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(result_bytes(id, result))
}

/// One SSE event carrying one JSON-RPC message.
pub(crate) fn sse_event(message: &[u8]) -> bytes::Bytes {
    let mut out = Vec::with_capacity(message.len() + 24);
    out.extend_from_slice(b"event: message\ndata: ");
    out.extend_from_slice(message);
    out.extend_from_slice(b"\n\n");
    out.into()
}

pub(crate) const SSE_PING: &[u8] = b": ping\n\n";
