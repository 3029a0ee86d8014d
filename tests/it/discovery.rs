//! `server/discover` and the list methods: versions, capabilities that match the catalog,
//! caching hints, `serverInfo` in `_meta`.

use serde_json::{json, Value};

use crate::support::{assert_valid, rpc, Server, DEMO, EMPTY, LAB, SERVER_INFO, VERSION};

async fn discover(server: &Server, tenant: &str) -> Value {
    let body = rpc("d1", "server/discover", json!({}));
    if tenant == DEMO {
        server.send_demo(&body).await.result()
    } else {
        server.send(tenant, &body).await.result()
    }
}

#[actix_web::test]
async fn discover_names_the_versions_capabilities_caching_hints_and_server_info() {
    let server = Server::start().await;
    let result = discover(&server, LAB).await;
    assert_valid("DiscoverResult", &result);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!([VERSION]));
    let caps = &result["capabilities"];
    for key in ["tools", "prompts", "resources", "completions"] {
        assert!(caps.get(key).is_some(), "the lab offers {key}: {caps}");
    }
    assert!(result["ttlMs"].as_u64().is_some(), "{result}");
    assert!(
        matches!(result["cacheScope"].as_str(), Some("public" | "private")),
        "{result}"
    );
    assert_eq!(result["instructions"], "The lab test tenant.");
    assert_eq!(
        result["_meta"][SERVER_INFO],
        json!({"name": "roundtrip-lab", "title": "lab", "version": env!("CARGO_PKG_VERSION")})
    );
    assert!(
        result.get("serverInfo").is_none(),
        "serverInfo lives in _meta"
    );
    server.stop().await;
}

#[actix_web::test]
async fn capabilities_are_only_what_the_catalog_has() {
    let server = Server::start().await;
    let demo = discover(&server, DEMO).await;
    assert!(demo["capabilities"].get("tools").is_some());
    assert!(demo["capabilities"].get("resources").is_some());
    assert!(demo["capabilities"].get("prompts").is_none(), "{demo}");

    let empty = discover(&server, EMPTY).await;
    for key in ["tools", "prompts", "resources", "completions"] {
        assert!(empty["capabilities"].get(key).is_none(), "{empty}");
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_list_the_tenant_does_not_offer_is_method_not_found() {
    let server = Server::start().await;
    let reply = server.send_demo(&rpc(1, "prompts/list", json!({}))).await;
    reply.error(-32601, 404);
    for method in [
        "tools/list",
        "prompts/list",
        "resources/list",
        "resources/templates/list",
    ] {
        server
            .send(EMPTY, &rpc(2, method, json!({})))
            .await
            .error(-32601, 404);
    }
    server.stop().await;
}

#[actix_web::test]
async fn lists_carry_their_items_and_caching_hints() {
    let server = Server::start().await;
    for (method, key, expected) in [
        ("tools/list", "tools", "ask_form"),
        ("prompts/list", "prompts", "summary"),
        ("resources/list", "resources", "lab://static"),
        (
            "resources/templates/list",
            "resourceTemplates",
            "lab://items/{id}",
        ),
    ] {
        let result = server.send(LAB, &rpc(1, method, json!({}))).await.result();
        let items = result[key].as_array().expect("a list");
        assert!(
            items.iter().any(|i| i["name"] == expected
                || i["uri"] == expected
                || i["uriTemplate"] == expected),
            "{method} lists {expected}: {result}"
        );
        assert!(
            result["ttlMs"].is_u64() && result["cacheScope"].is_string(),
            "{result}"
        );
        assert!(result.get("nextCursor").is_none());
    }
    server.stop().await;
}

#[actix_web::test]
async fn a_tool_with_mirrored_arguments_is_listed_with_its_x_mcp_header() {
    let server = Server::start().await;
    let result = server
        .send(LAB, &rpc(1, "tools/list", json!({})))
        .await
        .result();
    let regional = result["tools"]
        .as_array()
        .and_then(|t| t.iter().find(|t| t["name"] == "regional"))
        .expect("the regional tool");
    assert_eq!(
        regional["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );
    server.stop().await;
}
