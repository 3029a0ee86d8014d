//! Anonymous callers told apart by client address: one address at its session cap, listen
//! cap or rate limit does not lock out another; behind a trusted proxy a configured header names the
//! client, and from any other peer that header is ignored. And a session counts as used only
//! after a request (not a notification, not a GET stream).

use std::net::IpAddr;
use std::time::Duration;

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::legacy_client::{initialize_request, legacy_rpc, LEGACY_VERSION};
use crate::support::{mcp_headers, rpc, tool_call, Server, LAB};

/// POSTs `body` as JSON to the `lab` tenant from a client socket bound to `from`, with
/// `headers`: the response, whose body (a stream, for a listen) is held as long as it is.
async fn send_from(
    server: &Server,
    from: &str,
    body: &Value,
    headers: &[(String, String)],
) -> awc::ClientResponse<
    impl futures_util::Stream<Item = Result<actix_web::web::Bytes, awc::error::PayloadError>>,
> {
    let local: IpAddr = from.parse().expect("an address");
    let mut req = awc::Client::builder()
        .connector(awc::Connector::new().local_address(local))
        .timeout(Duration::from_secs(20))
        .finish()
        .post(server.url(LAB))
        .insert_header(("content-type", "application/json"))
        .insert_header(("accept", "application/json, text/event-stream"));
    for (name, value) in headers {
        req = req.insert_header((name.as_str(), value.as_str()));
    }
    req.send_body(serde_json::to_vec(body).expect("json"))
        .await
        .expect("answered")
}

/// POSTs `body` to the `lab` tenant from a client socket bound to `from`, with `headers`: the
/// status and the JSON body.
async fn post_from(
    server: &Server,
    from: &str,
    body: &Value,
    headers: &[(String, String)],
) -> (u16, Value) {
    let mut resp = send_from(server, from, body, headers).await;
    let bytes = resp.body().await.expect("a body");
    let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    (resp.status().as_u16(), json)
}

/// A legacy `initialize` from `from`, with `headers` (e.g. a forwarded address).
async fn initialize_from(server: &Server, from: &str, headers: &[(&str, &str)]) -> (u16, Value) {
    let body = initialize_request(LEGACY_VERSION, json!({}));
    let headers: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| ((*n).to_owned(), (*v).to_owned()))
        .collect();
    post_from(server, from, &body, &headers).await
}

/// A modern `tools/call` of `quiet` from `from`: its HTTP status.
async fn call_from(server: &Server, from: &str) -> u16 {
    let body = tool_call(1, "quiet", json!({}), json!({}));
    post_from(server, from, &body, &mcp_headers(Some(&body)))
        .await
        .0
}

#[actix_web::test]
async fn an_anonymous_address_at_its_session_cap_does_not_lock_out_another_address() {
    let server = Server::start_with(|c| c.legacy.max_sessions_per_caller = 2).await;
    for _ in 0..2 {
        assert_eq!(initialize_from(&server, "127.0.0.1", &[]).await.0, 200);
    }
    let (status, body) = initialize_from(&server, "127.0.0.1", &[]).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (503, &json!(-31503)),
        "{body}"
    );
    let (status, body) = initialize_from(&server, "127.0.0.2", &[]).await;
    assert_eq!(status, 200, "another address is another caller: {body}");
    server.stop().await;
}

/// A `subscriptions/listen` from `from`: its response, whose stream is held open as long as
/// the response is.
async fn listen_from(
    server: &Server,
    from: &str,
) -> awc::ClientResponse<impl futures_util::Stream> {
    let body = rpc(
        "listen-1",
        "subscriptions/listen",
        json!({"notifications": {"toolsListChanged": true}}),
    );
    send_from(server, from, &body, &mcp_headers(Some(&body))).await
}

#[actix_web::test]
async fn an_anonymous_address_at_its_listen_cap_does_not_lock_out_another_address() {
    let server = Server::start_with(|c| c.streams.max_listen_per_caller = 1).await;
    let held = listen_from(&server, "127.0.0.1").await;
    assert_eq!(held.status().as_u16(), 200);
    let refused = listen_from(&server, "127.0.0.1").await;
    assert_eq!(
        refused.status().as_u16(),
        429,
        "the same address is the same caller"
    );
    let other = listen_from(&server, "127.0.0.2").await;
    assert_eq!(
        other.status().as_u16(),
        200,
        "another address is another caller"
    );
    drop((held, other));
    server.stop().await;
}

#[actix_web::test]
async fn behind_a_trusted_proxy_the_forwarded_address_names_the_caller() {
    let server = Server::start_with(|c| {
        c.legacy.max_sessions_per_caller = 1;
        c.clients.address_header = Some("X-Forwarded-For".into());
        c.clients.trusted_proxies = vec!["127.0.0.1".parse().expect("ip")];
    })
    .await;
    let one = [("x-forwarded-for", "192.0.2.1")];
    assert_eq!(initialize_from(&server, "127.0.0.1", &one).await.0, 200);
    assert_eq!(initialize_from(&server, "127.0.0.1", &one).await.0, 503);
    let two = [("x-forwarded-for", "192.0.2.2")];
    assert_eq!(initialize_from(&server, "127.0.0.1", &two).await.0, 200);
    server.stop().await;
}

#[actix_web::test]
async fn the_forwarded_address_from_an_untrusted_peer_is_ignored() {
    let server = Server::start_with(|c| {
        c.legacy.max_sessions_per_caller = 1;
        c.clients.address_header = Some("X-Forwarded-For".into());
        c.clients.trusted_proxies = vec!["127.0.0.9".parse().expect("ip")];
    })
    .await;
    let one = [("x-forwarded-for", "192.0.2.1")];
    assert_eq!(initialize_from(&server, "127.0.0.1", &one).await.0, 200);
    // A client naming itself someone else is still its own address.
    let two = [("x-forwarded-for", "192.0.2.2")];
    assert_eq!(initialize_from(&server, "127.0.0.1", &two).await.0, 503);
    server.stop().await;
}

#[actix_web::test]
async fn a_session_that_only_sent_initialized_expires_as_unused() {
    let server = Server::start_with(|c| {
        c.legacy.idle_timeout_secs = 3600;
        c.legacy.unused_timeout_secs = 1;
    })
    .await;
    // `legacy_session` sends notifications/initialized and nothing else: still unused.
    let notified = server.legacy_session(LAB, json!({})).await;
    let used = server.legacy_session(LAB, json!({})).await;
    assert_eq!(used.ping().await.status, 200);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let gone = notified.send(&legacy_rpc("p", "ping", json!({}))).await;
    assert_eq!(gone.status, 404, "{gone:?}");
    assert_eq!(used.ping().await.json()["result"], json!({}));
    server.stop().await;
}

#[actix_web::test]
async fn a_session_that_only_opened_a_get_stream_expires_as_unused_once_it_closes() {
    let server = Server::start_with(|c| {
        c.legacy.idle_timeout_secs = 3600;
        c.legacy.unused_timeout_secs = 1;
    })
    .await;
    let session = server.legacy_session(LAB, json!({})).await;
    let stream = session.listen().await;
    assert!(stream.is_sse());
    drop(stream);
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let gone = session.send(&legacy_rpc("p", "ping", json!({}))).await;
    assert_eq!(gone.status, 404, "{gone:?}");
    server.stop().await;
}

#[actix_web::test]
async fn an_anonymous_address_over_its_rate_limit_does_not_limit_another_address() {
    let server = Server::start().await;
    let limits = json!({"rate_limits": {"key": {"per_second": 0.001, "burst": 2}}});
    let patched = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&limits)
        .send_unchecked()
        .await;
    assert_eq!(patched.status, 200, "{patched:?}");
    for _ in 0..2 {
        assert_eq!(call_from(&server, "127.0.0.1").await, 200);
    }
    assert_eq!(call_from(&server, "127.0.0.1").await, 429);
    assert_eq!(
        call_from(&server, "127.0.0.2").await,
        200,
        "another address, another bucket"
    );
    server.stop().await;
}
