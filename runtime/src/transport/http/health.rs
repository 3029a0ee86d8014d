//! `/healthz` (the process answers), `/readyz` (it serves, and is not shutting down) and
//! `/metrics` (OpenMetrics text, `crate::metrics`).
//!
//! A worker whose key share is down still serves (with the key rings it holds: states sealed
//! before keep opening, and new ones are sealed), so `/readyz` stays 200 and says
//! `"degraded"` with the reason: a load balancer must not take every worker out of service
//! because Redis blinked. Only shutting down is 503.

use actix_web::{web, HttpResponse};

use super::response::json_content_type;
use super::McpService;

pub(crate) async fn healthz() -> HttpResponse {
    HttpResponse::Ok()
        .content_type(json_content_type())
        .body(r#"{"status":"ok"}"#)
}

pub(crate) async fn readyz(service: web::Data<McpService>) -> HttpResponse {
    if service.shutdown.is_cancelled() {
        HttpResponse::ServiceUnavailable()
            .content_type(json_content_type())
            .body(r#"{"status":"shutting down"}"#)
    } else if let Some(reason) = service.keys.as_ref().and_then(|k| k.share_health.failing()) {
        HttpResponse::Ok().json(serde_json::json!({
            "status": "degraded",
            "reasons": [format!("requestState key share unavailable, serving the key rings held: {reason}")],
        }))
    } else {
        HttpResponse::Ok()
            .content_type(json_content_type())
            .body(r#"{"status":"ready"}"#)
    }
}

pub(crate) async fn metrics(service: web::Data<McpService>) -> HttpResponse {
    HttpResponse::Ok()
        .content_type("application/openmetrics-text; version=1.0.0; charset=utf-8")
        .body(service.metrics_text())
}
