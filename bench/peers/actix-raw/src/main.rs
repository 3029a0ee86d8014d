//! The ceiling: what actix-web does for an MCP `tools/call` of `echo` with no MCP runtime at
//! all. It parses the JSON-RPC body, takes `params.arguments.text` and writes the smallest
//! 2026-07-28 result around it. One worker, TCP_NODELAY as Roundtrip sets it.
//!
//! usage: peer-actix-raw 127.0.0.1:PORT     (POST /mcp)

use actix_web::{web, App, HttpResponse, HttpServer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Call<'a> {
    #[serde(borrow)]
    id: &'a RawValue,
    #[serde(default)]
    params: Option<Params>,
}

#[derive(Deserialize)]
struct Params {
    #[serde(default)]
    arguments: Option<Arguments>,
}

#[derive(Deserialize)]
struct Arguments {
    #[serde(default)]
    text: String,
}

#[derive(Serialize)]
struct Reply<'a> {
    jsonrpc: &'static str,
    id: &'a RawValue,
    result: Outcome<'a>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Outcome<'a> {
    content: [Text<'a>; 1],
    is_error: bool,
    result_type: &'static str,
}

#[derive(Serialize)]
struct Text<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    text: &'a str,
}

async fn mcp(body: web::Bytes) -> HttpResponse {
    let Ok(call) = serde_json::from_slice::<Call<'_>>(&body) else {
        return HttpResponse::BadRequest()
            .content_type("application/json")
            .body(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#);
    };
    let text = call
        .params
        .as_ref()
        .and_then(|p| p.arguments.as_ref())
        .map_or("", |a| a.text.as_str());
    let reply = Reply {
        jsonrpc: "2.0",
        id: call.id,
        result: Outcome {
            content: [Text { kind: "text", text }],
            is_error: false,
            result_type: "complete",
        },
    };
    match serde_json::to_vec(&reply) {
        Ok(bytes) => HttpResponse::Ok().content_type("application/json").body(bytes),
        Err(_) => HttpResponse::InternalServerError().finish(),
    }
}

#[actix_web::main]
async fn main() -> std::io::Result<()> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3201".to_owned());
    HttpServer::new(|| App::new().route("/mcp", web::post().to(mcp)))
        .workers(1)
        .tcp_nodelay(true)
        .bind(listen)?
        .run()
        .await
}
