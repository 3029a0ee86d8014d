//! The edges of what the admin API reads, each found by schemathesis against the OpenAPI
//! document (issue 16): a value the document allows is accepted, one it forbids is refused
//! with a 4xx problem, and nothing else is answered.

use awc::http::Method;
use serde_json::json;

use crate::support::Server;

#[actix_web::test]
async fn a_taken_slug_is_a_409_that_names_the_slug_plainly() {
    let server = Server::start().await;
    let body = json!({"slug": "lab", "name": "Again", "catalogs": ["lab"], "auth": "anonymous"});
    let problem = server
        .admin(Method::POST, "/tenants")
        .json(&body)
        .send_unchecked()
        .await
        .problem(409);
    assert_eq!(problem["detail"], "tenant \"lab\" already exists");
    server.stop().await;
}

#[actix_web::test]
async fn an_array_in_place_of_an_object_is_a_400() {
    let server = Server::start().await;
    for body in [
        json!({"rate_limits": []}),
        json!({"rate_limits": {"tenant": [1.5, 10]}}),
        json!({"disabled": [["echo"]]}),
    ] {
        server
            .admin(Method::PATCH, "/tenants/lab")
            .json(&body)
            .send_unchecked()
            .await
            .problem(400);
    }
    server
        .admin(Method::POST, "/tenants")
        .json(&json!(["acme", "Acme", ["lab"], "anonymous"]))
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_whole_number_may_carry_a_zero_fraction() {
    let server = Server::start().await;
    let body = json!({
        "state_ttl_secs": 120.0,
        "rate_limits": {"key": {"per_second": 5, "burst": 10.0}}
    });
    let tenant = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(tenant["state_ttl_secs"], 120);
    assert_eq!(tenant["rate_limits"]["key"]["burst"], 10);
    server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&json!({"state_ttl_secs": 120.5}))
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_rate_just_above_the_limit_is_refused() {
    let server = Server::start().await;
    // The f64 after 1e6, written out: it must not be read as 1e6.
    let body = r#"{"rate_limits": {"tenant": {"per_second": 1000000.0000000001, "burst": 1}}}"#;
    server
        .admin(Method::PATCH, "/tenants/lab")
        .header("content-type", "application/json")
        .bytes(body)
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_name_with_a_control_character_is_a_400() {
    let server = Server::start().await;
    for name in ["a\u{0}b", "line\nbreak", "\u{1b}[31mred"] {
        server
            .admin(Method::PATCH, "/tenants/lab")
            .json(&json!({ "name": name }))
            .send_unchecked()
            .await
            .problem(400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn each_list_of_names_holds_1024_names() {
    let server = Server::start().await;
    let tools: Vec<String> = (0..1024).map(|i| format!("t{i}")).collect();
    let body = json!({"disabled": {"tools": tools, "prompts": ["p"], "resources": ["r://x"]}});
    let tenant = server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(
        tenant["disabled"]["tools"].as_array().map(Vec::len),
        Some(1024)
    );
    let tools: Vec<String> = (0..1025).map(|i| format!("t{i}")).collect();
    server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&json!({"disabled": {"tools": tools}}))
        .send_unchecked()
        .await
        .problem(400);
    server.stop().await;
}

#[actix_web::test]
async fn a_method_the_resource_lacks_is_a_405_naming_those_it_has() {
    let server = Server::start().await;
    for (method, path, allow) in [
        (Method::PUT, "/tenants", "GET, POST"),
        (Method::POST, "/tenants/lab", "GET, PATCH, DELETE"),
        (Method::GET, "/tenants/lab/keys/k1", "DELETE"),
        (Method::DELETE, "/catalogs", "GET"),
    ] {
        let reply = server.admin(method.clone(), path).send_unchecked().await;
        reply.problem(405);
        assert_eq!(reply.header("allow"), Some(allow), "{method} {path}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn any_cursor_of_the_documented_form_pages_from_its_place() {
    let server = Server::start().await;
    // The hex of "lab": the tenants after it.
    let page = server
        .admin(Method::GET, "/tenants?cursor=6c6162")
        .send_unchecked()
        .await
        .problem_or_json();
    let slugs: Vec<&str> = page["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|t| t["slug"].as_str())
        .collect();
    assert_eq!(slugs, ["lab2"]);
    // Not lowercase hex: not a cursor.
    for cursor in ["6C6162", "abc", "zz"] {
        server
            .admin(Method::GET, &format!("/tenants?cursor={cursor}"))
            .send_unchecked()
            .await
            .problem(400);
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_cursor_with_a_nul_pages_as_if_cut_there() {
    let server = Server::start().await;
    // "lab\0x": after "lab", as no slug holds U+0000.
    let page = server
        .admin(Method::GET, "/tenants?cursor=6c61620078")
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(page["items"][0]["slug"], "lab2", "{page}");
    server.stop().await;
}

#[actix_web::test]
async fn an_audit_target_with_a_nul_matches_nothing() {
    let server = Server::start().await;
    let page = server
        .admin(Method::GET, "/tenants/lab/audit?target=%00")
        .send_unchecked()
        .await
        .problem_or_json();
    assert_eq!(page["items"], json!([]));
    server.stop().await;
}

#[actix_web::test]
async fn a_body_over_64_kib_is_a_413_problem() {
    let server = Server::start().await;
    let body = json!({"instructions": "x".repeat(70 * 1024)});
    server
        .admin(Method::PATCH, "/tenants/lab")
        .json(&body)
        .send_unchecked()
        .await
        .problem(413);
    server.stop().await;
}

#[actix_web::test]
async fn a_body_that_is_not_json_is_a_415_problem() {
    let server = Server::start().await;
    server
        .admin(Method::PATCH, "/tenants/lab")
        .header("content-type", "text/plain")
        .bytes(r#"{"name": "x"}"#)
        .send_unchecked()
        .await
        .problem(415);
    server.stop().await;
}
