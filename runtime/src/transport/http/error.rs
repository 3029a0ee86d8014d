//! The MCP endpoint's errors as HTTP responses: one type, [`RpcError`], an actix-web
//! `ResponseError` that decides both the JSON-RPC error body and the HTTP status, here and
//! nowhere else.
//!
//! Every error carries a JSON-RPC body, 404 and 405 included, because a modern client tells a
//! modern server from a legacy one by that body. The status is the code's own
//! ([`McpError::http_status`]), except that on the legacy wire a JSON-RPC error answering a
//! request travels with 200 (a session that ended stays 404).

use std::fmt;

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};

use super::response::json_content_type;
use crate::protocol::error::ErrorCode;
use crate::protocol::jsonrpc::error_bytes;
use crate::protocol::{Era, McpError, RequestId};

/// A JSON-RPC error, with the id it answers and the status it travels with.
#[derive(Debug)]
pub(crate) struct RpcError {
    id: Option<RequestId>,
    error: McpError,
    status: StatusCode,
}

impl RpcError {
    /// A request refused before dispatch (or a client's message refused), with the id to
    /// answer it under: the code's own status, on either era.
    pub(crate) fn refused(id: Option<&RequestId>, error: McpError) -> Self {
        let status = status_of(&error);
        Self {
            id: id.cloned(),
            error,
            status,
        }
    }

    /// The JSON-RPC error that answers request `id` on `era`'s wire.
    pub(crate) fn answering(id: &RequestId, error: McpError, era: Era) -> Self {
        let status = answer_status(era, &error);
        Self {
            id: Some(id.clone()),
            error,
            status,
        }
    }

    /// A method the endpoint does not take: 405 with `Allow: POST`.
    pub(crate) fn method_not_allowed() -> Self {
        Self {
            id: None,
            error: McpError::invalid_request("Method not allowed: use POST"),
            status: StatusCode::METHOD_NOT_ALLOWED,
        }
    }

    /// A path that is not an endpoint: 404.
    pub(crate) fn not_found() -> Self {
        Self {
            id: None,
            error: McpError::invalid_request("Not found"),
            status: StatusCode::NOT_FOUND,
        }
    }

    /// An SSE stream was asked for without `Accept: text/event-stream`: 406.
    pub(crate) fn not_acceptable(error: McpError) -> Self {
        Self {
            id: None,
            error,
            status: StatusCode::NOT_ACCEPTABLE,
        }
    }

    /// The same error, answering `id` (a check that knows no id made it).
    pub(crate) fn with_id(mut self, id: &RequestId) -> Self {
        self.id = Some(id.clone());
        self
    }

    pub(crate) fn code(&self) -> ErrorCode {
        self.error.code
    }
}

/// The status of a JSON-RPC error answering a request on `era`'s wire. On the legacy wire an
/// ended session stays 404, and a budget refusal keeps its 429 or 503 with `Retry-After`, so
/// that a client or proxy that backs off on those does.
pub(crate) fn answer_status(era: Era, error: &McpError) -> StatusCode {
    let keeps_status = matches!(
        error.code,
        ErrorCode::UnknownSession | ErrorCode::OverBudget | ErrorCode::OverCapacity
    );
    match era {
        Era::Legacy if !keeps_status => StatusCode::OK,
        _ => status_of(error),
    }
}

fn status_of(error: &McpError) -> StatusCode {
    StatusCode::from_u16(error.http_status()).unwrap_or(StatusCode::BAD_REQUEST)
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.error.message, self.error.code.code())
    }
}

impl ResponseError for RpcError {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        response.content_type(json_content_type());
        if self.error.code == ErrorCode::Unauthorized {
            response.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
        }
        if self.status == StatusCode::TOO_MANY_REQUESTS
            || self.status == StatusCode::SERVICE_UNAVAILABLE
        {
            if let Some(secs) = self.error.retry_after_secs() {
                response.insert_header((header::RETRY_AFTER, secs));
            }
        }
        if self.status == StatusCode::METHOD_NOT_ALLOWED {
            response.insert_header((header::ALLOW, HeaderValue::from_static("POST")));
        }
        response.body(error_bytes(self.id.as_ref(), &self.error))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_legacy_answer_travels_with_200_but_an_ended_session_stays_404() {
        let id = RequestId::Number(1.into());
        let answer = RpcError::answering(&id, McpError::invalid_params("x"), Era::Legacy);
        assert_eq!(answer.status_code(), StatusCode::OK);
        let gone = RpcError::answering(&id, McpError::unknown_session(), Era::Legacy);
        assert_eq!(gone.status_code(), StatusCode::NOT_FOUND);
        let modern = RpcError::answering(&id, McpError::invalid_params("x"), Era::Modern);
        assert_eq!(modern.status_code(), StatusCode::BAD_REQUEST);
    }

    #[test]
    fn an_unauthorized_refusal_asks_for_a_bearer_token() {
        let e = RpcError::refused(None, McpError::new(ErrorCode::Unauthorized, "Unauthorized"));
        let response = e.error_response();
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(
            response.headers().get(header::WWW_AUTHENTICATE),
            Some(&HeaderValue::from_static("Bearer"))
        );
    }

    #[test]
    fn a_rate_limited_refusal_says_when_to_retry() {
        let id = RequestId::Number(1.into());
        let e = McpError::rate_limited(std::time::Duration::from_millis(2_500));
        let response = RpcError::answering(&id, e, Era::Modern).error_response();
        assert_eq!(response.status(), StatusCode::TOO_MANY_REQUESTS);
        assert_eq!(
            response.headers().get(header::RETRY_AFTER),
            Some(&HeaderValue::from_static("3"))
        );
    }

    #[test]
    fn method_not_allowed_names_the_method_allowed() {
        let response = RpcError::method_not_allowed().error_response();
        assert_eq!(response.status(), StatusCode::METHOD_NOT_ALLOWED);
        assert_eq!(
            response.headers().get(header::ALLOW),
            Some(&HeaderValue::from_static("POST"))
        );
    }
}
