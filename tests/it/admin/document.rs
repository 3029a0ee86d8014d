//! The OpenAPI document as served: what schemathesis (tests/admin-api/run.sh) reads to test
//! the API, so what it must say for that test to mean anything.

use awc::http::Method;
use serde_json::{json, Value};

use crate::support::Server;

async fn document(server: &Server) -> Value {
    server
        .admin_anonymous(Method::GET, "/openapi.json")
        .send_unchecked()
        .await
        .problem_or_json()
}

/// Every operation of the document, as `(method, path, operation)`.
fn operations(doc: &Value) -> Vec<(String, String, Value)> {
    let mut all = Vec::new();
    for (path, item) in doc["paths"].as_object().into_iter().flatten() {
        for (method, operation) in item.as_object().into_iter().flatten() {
            all.push((method.clone(), path.clone(), operation.clone()));
        }
    }
    all
}

#[actix_web::test]
async fn a_catalog_name_is_one_of_the_servers_catalogs() {
    let server = Server::start().await;
    let doc = document(&server).await;
    let names = &doc["components"]["schemas"]["CatalogName"]["enum"];
    for catalog in ["examples", "conformance", "lab", "lab2", "empty"] {
        assert!(
            names
                .as_array()
                .is_some_and(|n| n.contains(&json!(catalog))),
            "{catalog}: {names}"
        );
    }
    server.stop().await;
}

#[actix_web::test]
async fn every_operation_has_an_id_and_its_problems_are_problem_json() {
    let server = Server::start().await;
    let doc = document(&server).await;
    let all = operations(&doc);
    assert_eq!(all.len(), 13);
    for (method, path, operation) in all {
        assert!(operation["operationId"].is_string(), "{method} {path}");
        for (status, response) in operation["responses"].as_object().into_iter().flatten() {
            if status.starts_with('4') || status.starts_with('5') {
                assert!(
                    response["content"]
                        .get("application/problem+json")
                        .is_some(),
                    "{method} {path} {status}: {response}"
                );
            }
        }
        let statuses = operation["responses"].as_object().map(|r| r.len());
        assert!(statuses.is_some_and(|n| n >= 3), "{method} {path}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_body_taking_operation_documents_413_and_415() {
    let server = Server::start().await;
    let doc = document(&server).await;
    for (method, path) in [
        ("post", "/admin/v1/tenants"),
        ("patch", "/admin/v1/tenants/{slug}"),
        ("post", "/admin/v1/tenants/{slug}/keys"),
    ] {
        let responses = &doc["paths"][path][method]["responses"];
        for status in ["400", "401", "403", "413", "415", "503"] {
            assert!(responses.get(status).is_some(), "{method} {path} {status}");
        }
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_created_tenant_links_to_its_keys_and_a_created_key_to_its_revocation() {
    let server = Server::start().await;
    let doc = document(&server).await;
    let created = &doc["paths"]["/admin/v1/tenants"]["post"]["responses"]["201"]["links"];
    assert_eq!(
        created["CreateKey"]["operationId"], "create_key",
        "{created}"
    );
    assert_eq!(
        created["CreateKey"]["parameters"]["slug"],
        "$response.body#/slug"
    );
    let key = &doc["paths"]["/admin/v1/tenants/{slug}/keys"]["post"]["responses"]["201"]["links"];
    assert_eq!(key["RevokeKey"]["operationId"], "revoke_key", "{key}");
    assert_eq!(key["RevokeKey"]["parameters"]["id"], "$response.body#/id");
    assert_eq!(
        key["RevokeKey"]["parameters"]["slug"],
        "$response.body#/tenant"
    );
    server.stop().await;
}
