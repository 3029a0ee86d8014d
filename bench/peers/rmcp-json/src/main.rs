//! rmcp's `echo`: the official Rust SDK's Streamable HTTP server, stateless (no sessions),
//! answering each call with one JSON body, on a single-threaded tokio runtime, with
//! TCP_NODELAY on accepted sockets as Roundtrip has it.
//!
//! usage: peer-rmcp-json 127.0.0.1:PORT     (POST /mcp)

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ServerCapabilities, ServerConfig};
use rmcp::transport::streamable_http_server::session::never::NeverSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{schemars, tool, tool_handler, tool_router, ServerHandler};

#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to return.
    text: String,
}

#[derive(Debug, Clone)]
struct EchoServer {
    #[allow(dead_code)] // read by the macro-generated handler
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl EchoServer {
    #[tool(description = "Returns its text argument unchanged.")]
    fn echo(&self, Parameters(args): Parameters<EchoArgs>) -> String {
        args.text
    }
}

#[tool_handler]
impl ServerHandler for EchoServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::io::Result<()> {
    let listen = std::env::args().nth(1).unwrap_or_else(|| "127.0.0.1:3202".to_owned());
    let prototype = EchoServer { tool_router: EchoServer::tool_router() };
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(true)
        .with_sse_keep_alive(None);
    let service: StreamableHttpService<EchoServer, NeverSessionManager> = StreamableHttpService::new(
        move || Ok(prototype.clone()),
        Arc::new(NeverSessionManager::default()),
        config,
    );
    let app = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind(&listen).await?;
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    axum::serve(listener, app).await
}
