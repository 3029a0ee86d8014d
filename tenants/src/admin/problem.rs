//! The admin API's errors: one type, [`Problem`], an actix-web `ResponseError` written as
//! RFC 9457 `application/problem+json`, its status decided here.

use actix_web::http::header::{self, HeaderValue};
use actix_web::http::StatusCode;
use actix_web::{HttpResponse, ResponseError};
use serde::Serialize;
use utoipa::ToSchema;

use crate::error::TenantError;
use crate::store::StoreError;

/// An RFC 9457 problem: what went wrong, for a person and for a program.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, ToSchema)]
pub struct ProblemBody {
    /// `about:blank`: the status says what kind of problem it is.
    #[serde(rename = "type")]
    pub kind: String,
    /// The status's reason phrase.
    pub title: String,
    /// The HTTP status.
    pub status: u16,
    /// What exactly was wrong.
    pub detail: String,
}

/// An admin API error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{detail}")]
pub struct Problem {
    status: StatusCode,
    detail: String,
    /// The `Allow` header of a 405.
    allow: Option<&'static str>,
}

impl Problem {
    fn new(status: StatusCode, detail: impl Into<String>) -> Problem {
        Problem {
            status,
            detail: detail.into(),
            allow: None,
        }
    }

    /// 400: the request is malformed or a field is out of bounds.
    pub fn bad_request(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::BAD_REQUEST, detail)
    }

    /// 401: no credentials, or credentials that are not recognised.
    pub fn unauthorized() -> Problem {
        Problem::new(
            StatusCode::UNAUTHORIZED,
            "Send the operator token or a tenant-admin key as Authorization: Bearer",
        )
    }

    /// 403: the caller is known and may not do this.
    pub fn forbidden(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::FORBIDDEN, detail)
    }

    /// 404: no such thing.
    pub fn not_found(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::NOT_FOUND, detail)
    }

    /// 405: the resource has no such method; `allow` lists those it has.
    pub fn method_not_allowed(allow: &'static str) -> Problem {
        Problem {
            allow: Some(allow),
            ..Problem::new(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("This resource answers {allow} only"),
            )
        }
    }

    /// 409: it exists already.
    pub fn conflict(detail: impl Into<String>) -> Problem {
        Problem::new(StatusCode::CONFLICT, detail)
    }

    /// 503: the store failed; the detail stays in the log.
    pub fn unavailable() -> Problem {
        Problem::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "The tenant store is unavailable; try again",
        )
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The body as it is sent.
    pub fn body(&self) -> ProblemBody {
        ProblemBody {
            kind: "about:blank".into(),
            title: self.status.canonical_reason().unwrap_or("Error").to_owned(),
            status: self.status.as_u16(),
            detail: self.detail.clone(),
        }
    }
}

impl ResponseError for Problem {
    fn status_code(&self) -> StatusCode {
        self.status
    }

    fn error_response(&self) -> HttpResponse {
        let mut response = HttpResponse::build(self.status);
        response.insert_header((
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        ));
        if self.status == StatusCode::UNAUTHORIZED {
            response.insert_header((header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer")));
        }
        if let Some(allow) = self.allow {
            response.insert_header((header::ALLOW, HeaderValue::from_static(allow)));
        }
        response.body(serde_json::to_vec(&self.body()).unwrap_or_default())
    }
}

impl From<TenantError> for Problem {
    fn from(e: TenantError) -> Problem {
        match e {
            TenantError::Exists(_) => Problem::conflict(e.to_string()),
            _ => Problem::bad_request(e.to_string()),
        }
    }
}

impl From<StoreError> for Problem {
    fn from(e: StoreError) -> Problem {
        match e {
            StoreError::Conflict(what) => Problem::conflict(format!("{what} already exists")),
            // The tenant went away between the handler's lookup and the write.
            StoreError::NotFound(what) => Problem::not_found(format!("No {what}")),
            other => {
                tracing::error!(error = %other, "tenant store failed");
                Problem::unavailable()
            }
        }
    }
}

/// actix-web's own refusals of a body, path or query (bad JSON, an unknown field, a body too
/// large, a wrong content type), as problems.
pub fn from_payload(error: impl std::fmt::Display, status: StatusCode) -> actix_web::Error {
    let detail = error.to_string();
    let status = if status.is_client_error() {
        status
    } else {
        StatusCode::BAD_REQUEST
    };
    Problem::new(status, detail).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_problem_is_problem_json_with_its_status() {
        let response = Problem::conflict("tenant \"a\" already exists").error_response();
        assert_eq!(response.status(), StatusCode::CONFLICT);
        assert_eq!(
            response.headers().get(header::CONTENT_TYPE),
            Some(&HeaderValue::from_static("application/problem+json"))
        );
    }

    #[test]
    fn a_401_asks_for_a_bearer_token() {
        let response = Problem::unauthorized().error_response();
        assert_eq!(
            response.headers().get(header::WWW_AUTHENTICATE),
            Some(&HeaderValue::from_static("Bearer"))
        );
    }

    #[test]
    fn a_tenant_gone_from_the_store_meanwhile_is_a_404() {
        let problem: Problem = StoreError::NotFound("tenant \"acme\"".into()).into();
        assert_eq!(problem.status(), StatusCode::NOT_FOUND);
    }

    #[test]
    fn a_store_failure_says_nothing_of_the_database() {
        let problem: Problem = StoreError::Database("password=hunter2".into()).into();
        assert_eq!(problem.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert!(!problem.body().detail.contains("hunter2"));
    }
}
