//! Rate limits whose buckets are in Redis, as the worker processes of a fleet keep them: the
//! request over a limit gets the same 429 as in one process, servers sharing a Redis share
//! each limit, and a Redis that went away is the configured fallback's to answer.

use awc::http::Method;
use roundtrip::config::Config;
use roundtrip_tenants::redis_limits::RedisFallback;
use serde_json::json;

use super::limits::{limit, set_limits};
use crate::support::{rpc, Server, LAB};
use roundtrip_runtime::redis::testing::{connect, unique_prefix, SpareRedis};

async fn metrics_text(server: &Server) -> String {
    let reply = server.http(Method::GET, "/metrics").send_unchecked().await;
    String::from_utf8(reply.body.to_vec()).expect("UTF-8 metrics")
}

#[actix_web::test]
async fn through_redis_the_request_over_a_limit_gets_429_with_retry_after_and_data() {
    let server = Server::start_limiting_in(connect(&unique_prefix()).await, |_| {}).await;
    // A token every 2 s: the refused request waits up to that long.
    let limits = json!({"tenant": {"per_second": 0.5, "burst": 2}});
    set_limits(&server, LAB, limits).await;
    let list = rpc(1, "tools/list", json!({}));
    server.send(LAB, &list).await.result();
    server.send(LAB, &list).await.result();
    let refused = server.send(LAB, &list).await;
    let error = refused.error(-31429, 429);
    let wait_ms = error["data"]["retryAfterMs"]
        .as_u64()
        .expect("data.retryAfterMs");
    assert!((1_500..=2_000).contains(&wait_ms), "{error}");
    assert_eq!(
        refused.header("retry-after"),
        Some("2"),
        "whole seconds, rounded up"
    );
    let text = metrics_text(&server).await;
    assert!(
        text.contains("roundtrip_rate_limited_total{tenant=\"lab\"} 1\n"),
        "{text}"
    );
    assert!(text.contains("roundtrip_redis_errors_total 0\n"), "{text}");
    server.stop().await;
}

#[actix_web::test]
async fn two_servers_sharing_redis_admit_one_limit_between_them() {
    let prefix = unique_prefix();
    let servers = [
        Server::start_limiting_in(connect(&prefix).await, |_| {}).await,
        Server::start_limiting_in(connect(&prefix).await, |_| {}).await,
    ];
    // Each server has a store of its own here; a fleet's share one.
    for server in &servers {
        set_limits(server, LAB, json!({"tenant": limit(3)})).await;
    }
    let list = rpc(1, "tools/list", json!({}));
    let mut admitted = 0;
    for n in 0..8 {
        let reply = servers[n % 2].send(LAB, &list).await;
        if reply.status == 200 {
            reply.result();
            admitted += 1;
        } else {
            reply.error(-31429, 429);
        }
    }
    assert_eq!(admitted, 3);
    for server in servers {
        server.stop().await;
    }
}

#[actix_web::test]
async fn with_redis_gone_a_fail_closed_server_answers_503_with_retry_after() {
    let spare = SpareRedis::start();
    let closed = |c: &mut Config| c.limits.redis_fallback = RedisFallback::Closed;
    let server = Server::start_limiting_in(spare.connect().await, closed).await;
    set_limits(&server, LAB, json!({"tenant": limit(100)})).await;
    let list = rpc(1, "tools/list", json!({}));
    server.send(LAB, &list).await.result();
    spare.stop();
    let refused = server.send(LAB, &list).await;
    let error = refused.error(-31503, 503);
    assert_eq!(error["data"]["retryAfterMs"], 1000, "{error}");
    assert_eq!(refused.header("retry-after"), Some("1"));
    let text = metrics_text(&server).await;
    // The refused call, and the key ring subscription that dropped with Redis.
    let errors: u64 = text
        .lines()
        .find_map(|l| l.strip_prefix("roundtrip_redis_errors_total "))
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(errors >= 1, "{text}");
    assert!(
        !text.contains("roundtrip_rate_limited_total{"),
        "not the caller's doing: {text}"
    );
    server.stop().await;
}
