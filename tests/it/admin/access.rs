//! Who may use the admin API: the operator everywhere, a tenant-admin key on its own tenant
//! only, an `mcp` key nowhere, and nobody without valid credentials.

use awc::http::Method;
use serde_json::json;

use crate::support::{Server, ALICE};

#[actix_web::test]
async fn the_operator_sees_every_tenant() {
    let server = Server::start().await;
    let page = server
        .admin(Method::GET, "/tenants")
        .send_unchecked()
        .await
        .problem_or_json();
    let slugs: Vec<&str> = page["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|t| t["slug"].as_str())
        .collect();
    assert_eq!(slugs, ["demo", "empty", "lab", "lab2"]);
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_admin_key_sees_its_own_tenant() {
    let server = Server::start().await;
    let (_, admin) = server
        .create_key("lab", json!({"scopes": ["tenant-admin"]}))
        .await;
    let page = server
        .admin_as(&admin, Method::GET, "/tenants")
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(page["items"].as_array().map(Vec::len), Some(1), "{page}");
    assert_eq!(page["items"][0]["slug"], "lab");
    let own = server
        .admin_as(&admin, Method::GET, "/tenants/lab")
        .send_unchecked()
        .await;
    assert_eq!(own.problem_or_json()["slug"], "lab");
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_admin_key_is_refused_on_another_tenant() {
    let server = Server::start().await;
    let (_, admin) = server
        .create_key("lab", json!({"scopes": ["tenant-admin"]}))
        .await;
    for (method, path) in [
        (Method::GET, "/tenants/demo"),
        (Method::GET, "/tenants/demo/keys"),
        (Method::GET, "/tenants/demo/audit"),
        (Method::POST, "/tenants/demo/state-keys/rotate"),
        // A tenant that does not exist is refused the same way: nothing is given away.
        (Method::GET, "/tenants/nosuch"),
    ] {
        server
            .admin_as(&admin, method.clone(), path)
            .send_unchecked()
            .await
            .problem(403);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_tenant_admin_key_cannot_do_what_only_the_operator_may() {
    let server = Server::start().await;
    let (_, admin) = server
        .create_key("lab", json!({"scopes": ["tenant-admin"]}))
        .await;
    let create = json!({"slug": "mine", "name": "Mine", "catalogs": ["lab"], "auth": "anonymous"});
    server
        .admin_as(&admin, Method::POST, "/tenants")
        .json(&create)
        .send_unchecked()
        .await
        .problem(403);
    server
        .admin_as(&admin, Method::POST, "/tenants/lab/suspend")
        .send_unchecked()
        .await
        .problem(403);
    server
        .admin_as(&admin, Method::DELETE, "/tenants/lab")
        .send_unchecked()
        .await
        .problem(403);
    let limits = json!({"rate_limits": {"tenant": {"per_second": 1000, "burst": 1000}}});
    server
        .admin_as(&admin, Method::PATCH, "/tenants/lab")
        .json(&limits)
        .send_unchecked()
        .await
        .problem(403);
    let budget = json!({"memory_budget_bytes": 1_u64 << 40});
    server
        .admin_as(&admin, Method::PATCH, "/tenants/lab")
        .json(&budget)
        .send_unchecked()
        .await
        .problem(403);
    // What a tenant admin may change, it may.
    let instructions = json!({"instructions": "Ours."});
    let changed = server
        .admin_as(&admin, Method::PATCH, "/tenants/lab")
        .json(&instructions)
        .send_unchecked()
        .await;
    assert_eq!(changed.problem_or_json()["instructions"], "Ours.");
    server.stop().await;
}

#[actix_web::test]
async fn an_mcp_key_is_forbidden_on_the_admin_api() {
    let server = Server::start().await;
    server
        .admin_as(ALICE, Method::GET, "/tenants/demo")
        .send_unchecked()
        .await
        .problem(403);
    server.stop().await;
}

#[actix_web::test]
async fn no_credentials_get_401_asking_for_a_bearer_token() {
    let server = Server::start().await;
    let reply = server
        .admin_anonymous(Method::GET, "/tenants")
        .send_unchecked()
        .await;
    reply.problem(401);
    assert_eq!(reply.header("www-authenticate"), Some("Bearer"));
    server
        .admin_as("not-a-token", Method::GET, "/tenants")
        .send_unchecked()
        .await
        .problem(401);
    server.stop().await;
}

#[actix_web::test]
async fn two_authorization_headers_are_refused() {
    let server = Server::start().await;
    let reply = server
        .admin(Method::GET, "/tenants")
        .also("authorization", "Bearer other")
        .send_unchecked()
        .await;
    reply.problem(401);
    server.stop().await;
}

#[actix_web::test]
async fn a_revoked_admin_key_gets_401() {
    let server = Server::start().await;
    let (id, admin) = server
        .create_key("lab", json!({"scopes": ["tenant-admin"]}))
        .await;
    let revoke = server
        .admin(Method::DELETE, &format!("/tenants/lab/keys/{id}"))
        .send_unchecked()
        .await;
    assert_eq!(revoke.status, 204, "{revoke:?}");
    server
        .admin_as(&admin, Method::GET, "/tenants/lab")
        .send_unchecked()
        .await
        .problem(401);
    server.stop().await;
}

#[actix_web::test]
async fn an_expired_admin_key_gets_401() {
    let server = Server::start().await;
    let soon = roundtrip_tenants::admin::bodies::rfc3339(roundtrip_tenants::Millis(
        roundtrip_tenants::Millis::now().0 + 600,
    ));
    let (_, admin) = server
        .create_key(
            "lab",
            json!({"scopes": ["tenant-admin"], "expires_at": soon}),
        )
        .await;
    let ok = server
        .admin_as(&admin, Method::GET, "/tenants/lab")
        .send_unchecked()
        .await;
    assert_eq!(ok.status, 200, "{ok:?}");
    actix_web::rt::time::sleep(std::time::Duration::from_millis(700)).await;
    server
        .admin_as(&admin, Method::GET, "/tenants/lab")
        .send_unchecked()
        .await
        .problem(401);
    server.stop().await;
}

#[actix_web::test]
async fn the_openapi_document_is_public_and_3_1() {
    let server = Server::start().await;
    let reply = server
        .admin_anonymous(Method::GET, "/openapi.json")
        .send_unchecked()
        .await;
    let doc = reply.problem_or_json();
    assert!(
        doc["openapi"]
            .as_str()
            .is_some_and(|v| v.starts_with("3.1")),
        "{doc}"
    );
    for path in [
        "/admin/v1/tenants",
        "/admin/v1/tenants/{slug}/keys",
        "/admin/v1/tenants/{slug}/audit",
        "/admin/v1/catalogs",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    server.stop().await;
}
