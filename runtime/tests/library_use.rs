//! The runtime used as a library, with no security configured: `requestState` passes
//! through exactly as the handler wrote it, and everything else still applies.

use std::sync::Arc;

use actix_web::{test, App};
use roundtrip_runtime::dispatch::RuntimeConfig;
use roundtrip_runtime::handler::{fn_tool, Catalog, InputRequired, ToolDescriptor};
use roundtrip_runtime::protocol::result::CallToolResult;
use roundtrip_runtime::tenancy::{StaticTenants, Tenant};
use roundtrip_runtime::transport::http::{self, HttpConfig, McpService};
use serde_json::{json, Value};

fn service() -> Arc<McpService> {
    let catalog = Catalog::builder()
        .tool(fn_tool(
            ToolDescriptor::no_args("stateful", "Carries a state between rounds."),
            |ctx, _| async move {
                match ctx.request_state() {
                    None => InputRequired::new().state("plain-handler-state").into(),
                    Some(state) => CallToolResult::text(format!("state was {state}")).into(),
                }
            },
        ))
        .build();
    let tenants = Arc::new(StaticTenants::new().with(Tenant::new("lib", catalog)));
    McpService::new(
        tenants.clone(),
        tenants,
        RuntimeConfig::default(),
        HttpConfig::default(),
        None,
    )
}

fn call(id: u32, extra: Value) -> Value {
    let mut params = json!({
        "name": "stateful",
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {}
        }
    });
    if let (Value::Object(p), Value::Object(e)) = (&mut params, extra) {
        p.extend(e);
    }
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
}

async fn post<S>(app: &S, body: Value) -> Value
where
    S: actix_web::dev::Service<
        actix_http::Request,
        Response = actix_web::dev::ServiceResponse,
        Error = actix_web::Error,
    >,
{
    let req = test::TestRequest::post()
        .uri("/t/lib/mcp")
        .insert_header(("host", "localhost"))
        .insert_header(("content-type", "application/json"))
        .insert_header(("mcp-protocol-version", "2026-07-28"))
        .insert_header(("mcp-method", "tools/call"))
        .insert_header(("mcp-name", "stateful"))
        .set_json(body)
        .to_request();
    test::call_and_read_body_json(app, req).await
}

#[actix_web::test]
async fn without_sealing_the_request_state_passes_through_unchanged() {
    let app = test::init_service(App::new().configure(http::configure(service()))).await;
    let first = post(&app, call(1, json!({}))).await;
    assert_eq!(first["result"]["resultType"], "input_required");
    assert_eq!(first["result"]["requestState"], "plain-handler-state");

    let second = post(
        &app,
        call(2, json!({"requestState": "plain-handler-state"})),
    )
    .await;
    assert_eq!(second["result"]["resultType"], "complete");
    assert_eq!(
        second["result"]["content"][0]["text"],
        "state was plain-handler-state"
    );
}
