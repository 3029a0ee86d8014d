//! Rate limits set through the admin API, per tenant, per key and per tool: the request over
//! a limit gets HTTP 429 with `Retry-After` and -31429 with `data.retryAfterMs`, and nothing
//! else is refused.

use awc::http::Method;
use roundtrip_runtime::tenancy::TenantDirectory;
use serde_json::{json, Value};

use crate::support::{rpc, tool_call, Server, ALICE, BOB, LAB};

/// A limit that lets `burst` requests through, then refills too slowly for a test to see.
pub(super) fn limit(burst: u32) -> Value {
    json!({"per_second": 0.001, "burst": burst})
}

pub(super) async fn set_limits(server: &Server, tenant: &str, limits: Value) {
    let body = json!({"rate_limits": limits});
    let reply = server
        .admin(Method::PATCH, &format!("/tenants/{tenant}"))
        .json(&body)
        .send_unchecked()
        .await;
    assert_eq!(reply.status, 200, "{reply:?}");
}

#[actix_web::test]
async fn the_request_over_a_tenant_limit_gets_429_with_retry_after() {
    let server = Server::start().await;
    set_limits(&server, LAB, json!({"tenant": limit(2)})).await;
    let list = rpc(1, "tools/list", json!({}));
    server.send(LAB, &list).await.result();
    server.send(LAB, &list).await.result();
    let refused = server.send(LAB, &list).await;
    let error = refused.error(-31429, 429);
    assert!(
        error["data"]["retryAfterMs"]
            .as_u64()
            .is_some_and(|ms| ms > 0),
        "{error}"
    );
    let retry_after: u64 = refused
        .header("retry-after")
        .and_then(|v| v.parse().ok())
        .expect("Retry-After");
    assert!(retry_after >= 1);
    // Another tenant is not limited by this one's limit.
    server.send("lab2", &list).await.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_refusal_by_a_rate_limit_is_counted_for_its_tenant() {
    let server = Server::start().await;
    set_limits(&server, LAB, json!({"tenant": limit(1)})).await;
    let list = rpc(1, "tools/list", json!({}));
    server.send(LAB, &list).await.result();
    for _ in 0..2 {
        server.send(LAB, &list).await.error(-31429, 429);
    }
    let reply = server.http(Method::GET, "/metrics").send_unchecked().await;
    let text = String::from_utf8(reply.body.to_vec()).expect("UTF-8 metrics");
    assert!(
        text.contains("roundtrip_rate_limited_total{tenant=\"lab\"} 2\n"),
        "{text}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn each_key_has_its_own_limit() {
    let server = Server::start().await;
    set_limits(&server, "demo", json!({"key": limit(1)})).await;
    let echo = tool_call(1, "echo", json!({"text": "x"}), json!({}));
    server
        .post("demo", &echo)
        .bearer(ALICE)
        .send()
        .await
        .result();
    server
        .post("demo", &echo)
        .bearer(ALICE)
        .send()
        .await
        .error(-31429, 429);
    server.post("demo", &echo).bearer(BOB).send().await.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_tool_limit_holds_that_tool_only() {
    let server = Server::start().await;
    set_limits(&server, LAB, json!({"tools": {"quiet": limit(1)}})).await;
    let quiet = tool_call(1, "quiet", json!({}), json!({}));
    server.send(LAB, &quiet).await.result();
    server.send(LAB, &quiet).await.error(-31429, 429);
    let chatty = tool_call(2, "nap", json!({}), json!({}));
    server.send(LAB, &chatty).await.result();
    server
        .send(LAB, &rpc(3, "tools/list", json!({})))
        .await
        .result();
    // A prompt of the tool's name is not the tool: the spent limit does not hold it.
    let prompt = server
        .send(LAB, &rpc(4, "prompts/get", json!({"name": "quiet"})))
        .await
        .response();
    assert_ne!(prompt["error"]["code"], -31429, "{prompt}");
    server.stop().await;
}

#[actix_web::test]
async fn lifting_a_limit_lets_requests_through_at_once() {
    let server = Server::start().await;
    set_limits(&server, LAB, json!({"tenant": limit(1)})).await;
    let list = rpc(1, "tools/list", json!({}));
    server.send(LAB, &list).await.result();
    server.send(LAB, &list).await.error(-31429, 429);
    set_limits(&server, LAB, json!({})).await;
    server.send(LAB, &list).await.result();
    server.stop().await;
}

#[actix_web::test]
async fn a_limit_that_lets_nothing_through_is_refused() {
    let server = Server::start().await;
    let body = json!({"rate_limits": {"tenant": {"per_second": 0, "burst": 1}}});
    server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await
        .problem(400);
    let body = json!({"rate_limits": {"tenant": {"per_second": 1, "burst": 0}}});
    server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_tenants_settings_say_whether_it_has_rate_limits_as_they_change() {
    let server = Server::start().await;
    let has_limits = || {
        let tenant = server.registry().tenant(LAB).expect("the tenant");
        tenant.view().settings().has_rate_limits
    };
    assert!(!has_limits(), "none set");
    set_limits(&server, LAB, json!({"tools": {"echo": limit(1)}})).await;
    assert!(has_limits(), "a tool's limit set");
    set_limits(&server, LAB, json!({})).await;
    assert!(!has_limits(), "lifted");
    server.stop().await;
}
