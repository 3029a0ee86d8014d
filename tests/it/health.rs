//! `/healthz`, `/readyz` and `/metrics`: what an orchestrator and a scraper see.

use std::sync::Arc;

use awc::http::Method;
use roundtrip_runtime::sealing::{
    KeyShare, LocalKeyShare, MasterKey, ShareError, Stored, Version, WrappedRing,
};
use serde_json::json;

use crate::support::{tool_call, Server, LAB};

fn metric(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no series {series} in:\n{text}"))
}

async fn scrape(server: &Server) -> String {
    let reply = server.http(Method::GET, "/metrics").send_unchecked().await;
    assert_eq!(reply.status, 200);
    assert!(
        reply
            .content_type()
            .starts_with("application/openmetrics-text; version=1.0.0"),
        "{reply:?}"
    );
    String::from_utf8(reply.body.to_vec()).expect("UTF-8 metrics")
}

#[actix_web::test]
async fn healthz_answers_ok() {
    let server = Server::start().await;
    let reply = server.http(Method::GET, "/healthz").send_unchecked().await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.json(), json!({"status": "ok"}));
    server.stop().await;
}

#[actix_web::test]
async fn readyz_turns_unavailable_once_shutdown_begins() {
    let server = Server::start().await;
    assert_eq!(
        server
            .http(Method::GET, "/readyz")
            .send_unchecked()
            .await
            .status,
        200
    );
    server.begin_shutdown();
    assert_eq!(
        server
            .http(Method::GET, "/readyz")
            .send_unchecked()
            .await
            .status,
        503
    );
    server.stop().await;
}

#[actix_web::test]
async fn metrics_count_requests_by_outcome() {
    let server = Server::start().await;
    let before = scrape(&server).await;
    server
        .send(LAB, &tool_call(1, "quiet", json!({}), json!({})))
        .await
        .result();
    server
        .send(
            LAB,
            &tool_call(2, "ask_form", json!({}), json!({"elicitation": {}})),
        )
        .await
        .result();
    server
        .send(LAB, &tool_call(3, "no_such_tool", json!({}), json!({})))
        .await;
    let after = scrape(&server).await;
    for (series, delta) in [
        ("roundtrip_mcp_requests_total{outcome=\"complete\"}", 1),
        (
            "roundtrip_mcp_requests_total{outcome=\"input_required\"}",
            1,
        ),
        ("roundtrip_mcp_requests_total{outcome=\"error\"}", 1),
    ] {
        assert_eq!(
            metric(&after, series) - metric(&before, series),
            delta,
            "{series}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn metrics_time_requests_by_tenant_method_and_outcome() {
    let server = Server::start().await;
    server
        .send(LAB, &tool_call(1, "quiet", json!({}), json!({})))
        .await
        .result();
    server
        .send(LAB, &tool_call(2, "no_such_tool", json!({}), json!({})))
        .await;
    let text = scrape(&server).await;
    for labels in [
        r#"tenant="lab",method="tools/call",outcome="complete""#,
        r#"tenant="lab",method="tools/call",outcome="error""#,
    ] {
        let series = format!("roundtrip_mcp_request_duration_seconds_count{{{labels}}}");
        assert_eq!(metric(&text, &series), 1, "{series}");
    }
    assert!(
        text.ends_with("# EOF\n"),
        "OpenMetrics ends with # EOF:\n{text}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn metrics_label_a_method_nobody_defined_as_other() {
    let server = Server::start().await;
    for (id, method) in [(1, "made/up"), (2, "made/up2")] {
        server
            .send(LAB, &crate::support::rpc(id, method, json!({})))
            .await;
    }
    let text = scrape(&server).await;
    let series = r#"roundtrip_mcp_request_duration_seconds_count{tenant="lab",method="other",outcome="error"}"#;
    assert_eq!(metric(&text, series), 2);
    assert!(!text.contains("made/up"), "{text}");
    server.stop().await;
}

#[actix_web::test]
async fn metrics_count_a_request_whose_client_went_away_as_cancelled() {
    let server = Server::start().await;
    let before = scrape(&server).await;
    let probe = server.lab_probe.clone();
    let pending = actix_rt::spawn(
        server
            .post(LAB, &tool_call(1, "wait_cancel", json!({}), json!({})))
            .detach(),
    );
    assert!(
        crate::support::lab::Probe::wait_for(&probe.started).await,
        "the handler runs"
    );
    pending.abort();
    assert!(
        crate::support::lab::Probe::wait_for(&probe.cancelled).await,
        "the handler was cancelled"
    );
    let series = "roundtrip_mcp_requests_total{outcome=\"cancelled\"}";
    assert_eq!(
        metric(&scrape(&server).await, series) - metric(&before, series),
        1
    );
    server.stop().await;
}

#[actix_web::test]
async fn metrics_count_a_request_stream_whose_client_went_away_as_cancelled_once() {
    let server = Server::start().await;
    let before = scrape(&server).await;
    let probe = server.lab_probe.clone();
    let mut call = tool_call(1, "wait_cancel", json!({}), json!({}));
    call["params"]["_meta"]["progressToken"] = json!("c");
    let mut events = server.post(LAB, &call).open().await;
    let first = events
        .next()
        .await
        .expect("the progress that opens the stream");
    assert_eq!(first["method"], "notifications/progress");
    drop(events);
    assert!(
        crate::support::lab::Probe::wait_for(&probe.cancelled).await,
        "the handler was cancelled"
    );
    let series = "roundtrip_mcp_requests_total{outcome=\"cancelled\"}";
    assert_eq!(
        metric(&scrape(&server).await, series) - metric(&before, series),
        1
    );
    server.stop().await;
}

#[actix_web::test]
async fn metrics_show_the_live_legacy_sessions() {
    let server = Server::start().await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}
    }});
    let reply = server
        .post(LAB, &init)
        .without("mcp-protocol-version")
        .send_unchecked()
        .await;
    let session = reply
        .header("mcp-session-id")
        .expect("a session")
        .to_owned();
    assert_eq!(
        metric(&scrape(&server).await, "roundtrip_legacy_sessions"),
        1
    );
    let ended = server
        .http(Method::DELETE, "/t/lab/mcp")
        .header("mcp-session-id", &session)
        .send_unchecked()
        .await;
    assert_eq!(ended.status, 200);
    assert_eq!(
        metric(&scrape(&server).await, "roundtrip_legacy_sessions"),
        0
    );
    server.stop().await;
}

/// A key share that gives the rings it holds but takes no change: a store that went
/// read-only, or a network that lets reads through and not writes.
struct ReadOnly(LocalKeyShare);

#[async_trait::async_trait]
impl KeyShare for ReadOnly {
    async fn load(&self, tenant: &str) -> Result<Option<Stored>, ShareError> {
        self.0.load(tenant).await
    }

    async fn store(
        &self,
        _tenant: &str,
        _ring: &WrappedRing,
        _expected: Option<Version>,
    ) -> Result<Version, ShareError> {
        Err(ShareError::Unavailable("read-only".into()))
    }
}

#[actix_web::test]
async fn a_rotation_the_key_share_cannot_store_answers_503_and_is_counted_on_metrics() {
    let fleet = LocalKeyShare::new();
    let master = MasterKey::generate();
    // A first server makes the rings; the second only reads them.
    Server::start_sharing(Arc::new(fleet.clone()), master.clone(), |_| {})
        .await
        .stop()
        .await;
    let server = Server::start_sharing(Arc::new(ReadOnly(fleet)), master, |_| {}).await;
    let series = "roundtrip_key_share_failures_total";
    assert_eq!(metric(&scrape(&server).await, series), 0);
    let rotated = server
        .admin(Method::POST, "/tenants/lab/state-keys/rotate")
        .send_unchecked()
        .await;
    assert_eq!(rotated.status, 503, "{rotated:?}");
    assert_eq!(metric(&scrape(&server).await, series), 1);
    server.stop().await;
}

#[actix_web::test]
async fn while_the_key_share_fails_readyz_stays_200_and_says_degraded_with_the_reason() {
    let fleet = LocalKeyShare::new();
    let master = MasterKey::generate();
    Server::start_sharing(Arc::new(fleet.clone()), master.clone(), |_| {})
        .await
        .stop()
        .await;
    let server = Server::start_sharing(Arc::new(ReadOnly(fleet)), master, |_| {}).await;
    let ready = server.http(Method::GET, "/readyz").send_unchecked().await;
    assert_eq!(ready.json()["status"], "ready", "{ready:?}");
    server
        .admin(Method::POST, "/tenants/lab/state-keys/rotate")
        .send_unchecked()
        .await;
    let degraded = server.http(Method::GET, "/readyz").send_unchecked().await;
    assert_eq!(degraded.status, 200, "{degraded:?}");
    assert_eq!(degraded.json()["status"], "degraded", "{degraded:?}");
    let reason = degraded.json()["reasons"][0]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(reason.contains("key share"), "{reason}");
    server.stop().await;
}
