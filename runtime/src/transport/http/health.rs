//! `/healthz` (the process answers), `/readyz` (it serves, and is not shutting down) and
//! `/metrics` (OpenMetrics text, `crate::metrics`).

use actix_web::{web, HttpResponse};

use super::McpService;

pub(crate) async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/json")
        .body(r#"{"status":"ok"}"#)
}

pub(crate) async fn readyz(service: web::Data<McpService>) -> HttpResponse {
    if service.shutdown.is_cancelled() {
        HttpResponse::ServiceUnavailable()
            .content_type("application/json")
            .body(r#"{"status":"shutting down"}"#)
    } else {
        HttpResponse::Ok()
            .content_type("application/json")
            .body(r#"{"status":"ready"}"#)
    }
}

pub(crate) async fn metrics(service: web::Data<McpService>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(service.metrics_text())
}
