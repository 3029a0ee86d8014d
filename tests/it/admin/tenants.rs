//! Tenants through the admin API: create, read, list in pages, change, suspend, resume and
//! delete, with every refusal a problem with its status.

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::{tool_call, Server};

#[actix_web::test]
async fn a_created_tenant_is_answered_with_201_and_serves_at_once() {
    let server = Server::start().await;
    let tenant = server
        .create_tenant(
            "acme",
            "examples",
            "anonymous",
            json!({"instructions": "Hi."}),
        )
        .await;
    assert_eq!(tenant["endpoint"], "/t/acme/mcp");
    assert_eq!(tenant["status"], "active");
    assert_eq!(tenant["legacy_shim"], true);
    let echo = tool_call(1, "echo", json!({"text": "new"}), json!({}));
    let result = server.send("acme", &echo).await.result();
    assert_eq!(result["content"][0]["text"], "new");
    server.stop().await;
}

#[actix_web::test]
async fn a_taken_slug_is_a_409() {
    let server = Server::start().await;
    let body = json!({"slug": "lab", "name": "Again", "catalogs": ["lab"], "auth": "anonymous"});
    server
        .admin(Method::POST, "/tenants")
        .json(&body)
        .send_unchecked()
        .await
        .problem(409);
    server.stop().await;
}

#[actix_web::test]
async fn bad_tenant_bodies_are_400s_that_say_why() {
    let server = Server::start().await;
    let cases: [(Value, &str); 6] = [
        (
            json!({"slug": "Bad Slug", "name": "x", "catalogs": ["lab"], "auth": "anonymous"}),
            "slug",
        ),
        (
            json!({"slug": "ok-1", "name": "x", "catalogs": ["nosuch"], "auth": "anonymous"}),
            "nosuch",
        ),
        (
            json!({"slug": "ok-1", "name": "x", "catalogs": ["lab"], "auth": "anonymous", "colour": "red"}),
            "colour",
        ),
        (
            json!({"slug": "ok-1", "name": "", "catalogs": ["lab"], "auth": "anonymous"}),
            "name",
        ),
        (
            json!({"slug": "ok-1", "name": "x", "catalogs": ["lab"], "auth": "oauth"}),
            "auth",
        ),
        (
            json!({"slug": "ok-1", "name": "x", "catalogs": ["lab"], "auth": "anonymous", "state_ttl_secs": 0}),
            "state_ttl_secs",
        ),
    ];
    for (body, named) in cases {
        let problem = server
            .admin(Method::POST, "/tenants")
            .json(&body)
            .send_unchecked()
            .await
            .problem(400);
        assert!(
            problem["detail"]
                .as_str()
                .is_some_and(|d| d.contains(named)),
            "{named}: {problem}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_body_that_is_not_json_is_a_400_problem() {
    let server = Server::start().await;
    let reply = server
        .admin(Method::POST, "/tenants")
        .header("content-type", "application/json")
        .json(&json!("just a string"))
        .send_unchecked()
        .await;
    reply.problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn tenants_are_listed_in_pages_with_a_cursor() {
    let server = Server::start().await;
    let mut seen = Vec::new();
    let mut path = "/tenants?limit=3".to_owned();
    loop {
        let page = server
            .admin(Method::GET, &path)
            .send_unchecked()
            .await
            .problem_or_json();
        let items = page["items"].as_array().expect("items");
        assert!(items.len() <= 3);
        seen.extend(
            items
                .iter()
                .map(|t| t["slug"].as_str().unwrap_or_default().to_owned()),
        );
        match page["next_cursor"].as_str() {
            Some(cursor) => path = format!("/tenants?limit=3&cursor={cursor}"),
            None => break,
        }
    }
    assert_eq!(seen, ["demo", "empty", "lab", "lab2"]);
    server
        .admin(Method::GET, "/tenants?limit=0")
        .send_unchecked()
        .await
        .problem(400);
    server
        .admin(Method::GET, "/tenants?cursor=%25%25")
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_patch_changes_only_what_it_names_and_null_clears() {
    let server = Server::start().await;
    let patched = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&json!({"name": "Laboratory", "state_ttl_secs": 120}))
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(patched["name"], "Laboratory");
    assert_eq!(patched["state_ttl_secs"], 120);
    assert_eq!(patched["instructions"], "The lab test tenant.");
    let cleared = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&json!({"instructions": null, "state_ttl_secs": null}))
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(cleared["instructions"], Value::Null);
    assert_eq!(cleared["state_ttl_secs"], Value::Null);
    assert_eq!(cleared["name"], "Laboratory");
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_tenant_is_a_404() {
    let server = Server::start().await;
    server
        .admin(Method::GET, "/tenants/nosuch")
        .send_unchecked()
        .await
        .problem(404);
    server
        .admin(Method::PATCH, "/tenants/nosuch")
        .json(&json!({"name": "x"}))
        .send_unchecked()
        .await
        .problem(404);
    server
        .admin(Method::GET, "/tenants/NOT_A_SLUG")
        .send_unchecked()
        .await
        .problem(404);
    server.stop().await;
}

#[actix_web::test]
async fn a_deleted_tenant_is_gone_from_the_api_and_the_endpoint() {
    let server = Server::start().await;
    let deleted = server
        .admin(Method::DELETE, "/tenants/lab2")
        .send_unchecked()
        .await;
    assert_eq!(deleted.status, 204, "{deleted:?}");
    server
        .admin(Method::GET, "/tenants/lab2")
        .send_unchecked()
        .await
        .problem(404);
    let call = tool_call(1, "quiet", json!({}), json!({}));
    server.send("lab2", &call).await.error(-31004, 404);
    server.stop().await;
}

#[actix_web::test]
async fn a_suspended_tenant_gets_403_on_its_endpoint_until_resumed() {
    let server = Server::start().await;
    let call = tool_call(1, "quiet", json!({}), json!({}));
    let suspended = server
        .admin(Method::POST, "/tenants/lab/suspend")
        .send_unchecked()
        .await;
    assert_eq!(suspended.problem_or_json()["status"], "suspended");
    server.send("lab", &call).await.error(-31003, 403);
    server
        .admin(Method::POST, "/tenants/lab/resume")
        .send_unchecked()
        .await
        .problem_or_json();
    server.send("lab", &call).await.result();
    server.stop().await;
}

#[actix_web::test]
async fn the_catalogs_list_their_tools_prompts_and_resources() {
    let server = Server::start().await;
    let list = server
        .admin(Method::GET, "/catalogs")
        .send_unchecked()
        .await
        .problem_or_json();
    let examples = list["items"]
        .as_array()
        .and_then(|items| items.iter().find(|c| c["name"] == "examples"))
        .cloned()
        .expect("the examples catalog");
    assert!(
        examples["tools"]
            .as_array()
            .is_some_and(|t| t.contains(&json!("echo"))),
        "{examples}"
    );
    assert!(
        examples["resources"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("workspace://roots"))),
        "{examples}"
    );
    server.stop().await;
}

#[actix_web::test]
async fn a_state_key_rotation_names_the_new_key() {
    let server = Server::start().await;
    let first = server
        .admin(Method::POST, "/tenants/lab/state-keys/rotate")
        .send_unchecked()
        .await
        .problem_or_json();
    let second = server
        .admin(Method::POST, "/tenants/lab/state-keys/rotate")
        .send_unchecked()
        .await
        .problem_or_json();
    assert!(first["kid"].is_string());
    assert_ne!(first["kid"], second["kid"]);
    server.stop().await;
}

#[actix_web::test]
async fn an_unknown_admin_path_is_a_404_problem() {
    let server = Server::start().await;
    server
        .admin(Method::GET, "/nothing-here")
        .send_unchecked()
        .await
        .problem(404);
    server.stop().await;
}
