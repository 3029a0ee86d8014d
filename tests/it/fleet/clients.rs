//! Who a forwarded request comes from: the worker that forwards a session's request names
//! the client's address under the fleet's MAC, so the owner counts an anonymous caller by
//! its own address, not by the forwarding worker's.

use std::net::IpAddr;
use std::time::Duration;

use serde_json::{json, Value};

use super::workers::ADMIN_TOKEN;
use crate::support::legacy_client::{initialize_request, LEGACY_VERSION};
use crate::support::{mcp_headers, rpc};

/// An anonymous tenant every worker serves once the store says so.
pub(super) const OPEN: &str = "open";

/// Creates the anonymous tenant [`OPEN`] through the admin API at `worker`.
pub(super) async fn create_open_tenant(worker: &str) {
    let mut resp = awc::Client::new()
        .post(format!("{worker}/admin/v1/tenants"))
        .insert_header(("authorization", format!("Bearer {ADMIN_TOKEN}")))
        .send_json(
            &json!({"slug": OPEN, "name": "Open", "catalogs": ["examples"], "auth": "anonymous"}),
        )
        .await
        .expect("the worker answers");
    let body = resp.body().await.expect("a body");
    assert_eq!(resp.status(), 201, "{}", String::from_utf8_lossy(&body));
}

/// A client whose connections come from `from` (a loopback address of its own).
fn client_from(from: &str) -> awc::Client {
    let local: IpAddr = from.parse().expect("an address");
    awc::Client::builder()
        .connector(awc::Connector::new().local_address(local))
        .timeout(Duration::from_secs(20))
        .finish()
}

/// A legacy `initialize` on [`OPEN`] at `worker` from `from`: the session id.
pub(super) async fn initialize_from(worker: &str, from: &str) -> String {
    let resp = client_from(from)
        .post(format!("{worker}/t/{OPEN}/mcp"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .send_json(&initialize_request(LEGACY_VERSION, json!({})))
        .await
        .expect("the worker answers");
    assert_eq!(resp.status(), 200);
    resp.headers()
        .get("mcp-session-id")
        .and_then(|v| v.to_str().ok())
        .expect("a session id")
        .to_owned()
}

/// A modern `subscriptions/listen` on [`OPEN`] at `worker` from `from`, carrying the id of
/// `session` (held by another worker, so it is forwarded there): the status, with the
/// stream kept open for as long as the response lives.
pub(super) async fn listen_from(
    worker: &str,
    from: &str,
    session: &str,
) -> (u16, awc::ClientResponse<impl futures_util::Stream>) {
    let body = rpc(
        "listen-1",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    let mut req = client_from(from)
        .post(format!("{worker}/t/{OPEN}/mcp"))
        .insert_header(("accept", "application/json, text/event-stream"))
        .insert_header(("mcp-session-id", session));
    for (name, value) in mcp_headers(Some(&body)) {
        req = req.insert_header((name, value));
    }
    let resp = req.send_json(&body).await.expect("the worker answers");
    (resp.status().as_u16(), resp)
}

/// Waits until `worker` serves [`OPEN`] (tenants reach every worker through the store).
pub(super) async fn wait_until_served(worker: &str) {
    let body: Value = rpc(1, "tools/list", json!({}));
    for _ in 0..100 {
        let mut req = awc::Client::new()
            .post(format!("{worker}/t/{OPEN}/mcp"))
            .insert_header(("accept", "application/json, text/event-stream"));
        for (name, value) in mcp_headers(Some(&body)) {
            req = req.insert_header((name, value));
        }
        if matches!(req.send_json(&body).await, Ok(resp) if resp.status() == 200) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{worker} never served the tenant created on another worker");
}
