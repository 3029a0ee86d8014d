//! Era detection (protocol §4.5) against scripted servers: what the `server/discover` probe
//! makes of each kind of answer (over stdio, of none), the per-endpoint cache, and forced
//! eras.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use roundtrip_client::{Client, Era, EraChoice, Error, ProtocolVersion};
use serde_json::json;

use super::scripted::{discovered, initialized, Reply, Scripted, Seen};

/// A server that answers `discover` with `probe` and serves a legacy session otherwise.
async fn legacy_after(probe: impl Fn(&Seen) -> Reply + Send + Sync + 'static) -> Scripted {
    Scripted::start(move |seen| match seen.method() {
        "server/discover" => probe(seen),
        "initialize" => Reply::result(seen, initialized("2025-11-25")),
        "notifications/initialized" => Reply::empty(202),
        _ => Reply::result(seen, json!({"tools": []})),
    })
    .await
}

async fn connect(server: &Scripted) -> Result<Client, Error> {
    Client::builder().connect_http(&server.url).await
}

/// The JSON-RPC methods POSTed, in order (a legacy session's GET stream left out).
fn methods(server: &Scripted) -> Vec<String> {
    server
        .seen()
        .iter()
        .filter(|s| s.http == "POST")
        .map(|s| s.method().to_owned())
        .collect()
}

#[actix_web::test]
async fn a_discover_result_sharing_our_version_means_modern_and_is_cached_for_the_endpoint() {
    let server = Scripted::start(|seen| match seen.method() {
        "server/discover" => Reply::result(seen, discovered(&["2099-01-01", "2026-07-28"])),
        _ => Reply::result(seen, json!({"resultType": "complete", "tools": []})),
    })
    .await;
    let first = connect(&server).await.expect("connects");
    assert_eq!(first.era(), Era::Modern);
    assert_eq!(
        first.server().server_info,
        Some(json!({"name": "scripted", "version": "1"}))
    );
    let second = connect(&server).await.expect("connects");
    assert_eq!(second.era(), Era::Modern);
    assert_eq!(
        server.calls("server/discover").len(),
        1,
        "the second client used the cache"
    );
}

#[actix_web::test]
async fn a_json_rpc_error_to_the_probe_falls_back_to_initialize() {
    let server = legacy_after(|seen| {
        Reply::error(
            seen,
            404,
            json!({"code": -32601, "message": "Method not found"}),
        )
    })
    .await;
    let client = connect(&server).await.expect("connects");
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(
        client.server().protocol_version,
        ProtocolVersion::V2025_11_25
    );
    assert_eq!(
        methods(&server),
        ["server/discover", "initialize", "notifications/initialized"]
    );
}

#[actix_web::test]
async fn a_discover_result_sharing_no_modern_version_falls_back_to_initialize() {
    let server = legacy_after(|seen| Reply::result(seen, discovered(&["2099-01-01"]))).await;
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
}

#[actix_web::test]
async fn a_response_without_a_result_falls_back_to_initialize() {
    let server = legacy_after(|_| Reply::empty(404)).await;
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
    let server = legacy_after(|_| Reply::json(200, json!({"hello": "world"}))).await;
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
}

#[actix_web::test]
async fn a_32022_naming_a_shared_version_gets_one_more_probe_at_it() {
    let probes = AtomicUsize::new(0);
    let server = Scripted::start(move |seen| match seen.method() {
        "server/discover" if probes.fetch_add(1, Ordering::SeqCst) == 0 => Reply::error(
            seen,
            400,
            json!({"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}),
        ),
        "server/discover" => Reply::result(seen, discovered(&["2026-07-28"])),
        _ => Reply::result(seen, json!({})),
    })
    .await;
    let client = connect(&server).await.expect("connects");
    assert_eq!(client.era(), Era::Modern);
    let probes = server.calls("server/discover");
    assert_eq!(probes.len(), 2);
    assert_eq!(probes[1].header("mcp-protocol-version"), Some("2026-07-28"));
}

#[actix_web::test]
async fn a_second_32022_is_not_probed_again_and_falls_back_to_initialize() {
    let server = legacy_after(|seen| {
        Reply::error(
            seen,
            400,
            json!({"code": -32022, "message": "Unsupported protocol version",
                "data": {"supported": ["2026-07-28"], "requested": "2026-07-28"}}),
        )
    })
    .await;
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
    assert_eq!(server.calls("server/discover").len(), 2);
}

#[actix_web::test]
async fn http_401_and_403_are_errors_and_never_decide_the_era() {
    for status in [401, 403] {
        let server = legacy_after(move |_| {
            Reply::empty(status).with_header("www-authenticate", "Bearer realm=\"mcp\"")
        })
        .await;
        let err = connect(&server).await.expect_err("refused");
        let Error::Unauthorized {
            status: got,
            www_authenticate,
            ..
        } = err
        else {
            panic!("expected Unauthorized, got {err:?}")
        };
        assert_eq!(got, status);
        assert_eq!(www_authenticate.as_deref(), Some("Bearer realm=\"mcp\""));
        assert_eq!(
            methods(&server),
            ["server/discover"],
            "no initialize after a {status}"
        );
    }
}

#[actix_web::test]
async fn a_network_error_is_an_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let err = Client::builder()
        .connect_http(&format!("http://127.0.0.1:{port}/mcp"))
        .await
        .expect_err("nobody listens");
    assert!(matches!(err, Error::Network { .. }), "{err:?}");
}

#[actix_web::test]
async fn a_forced_modern_era_sends_no_probe() {
    let server =
        Scripted::start(|seen| Reply::result(seen, json!({"resultType": "complete", "tools": []})))
            .await;
    let client = Client::builder()
        .era(EraChoice::Modern)
        .connect_http(&server.url)
        .await
        .expect("connects");
    client.list_tools().await.expect("tools");
    assert_eq!(methods(&server), ["tools/list"]);
}

#[actix_web::test]
async fn a_forced_legacy_era_begins_with_initialize() {
    let server = legacy_after(|seen| Reply::result(seen, discovered(&["2026-07-28"]))).await;
    let client = Client::builder()
        .era(EraChoice::Legacy)
        .connect_http(&server.url)
        .await
        .expect("connects");
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(
        methods(&server),
        ["initialize", "notifications/initialized"]
    );
}

#[actix_web::test]
async fn an_initialize_answered_with_a_version_we_do_not_speak_is_no_shared_version() {
    let server = Scripted::start(|seen| Reply::result(seen, initialized("2024-11-05"))).await;
    let err = Client::builder()
        .era(EraChoice::Legacy)
        .connect_http(&server.url)
        .await
        .expect_err("no version in common");
    assert!(
        matches!(&err, Error::NoSharedVersion { offered } if offered == &["2024-11-05"]),
        "{err:?}"
    );
}

/// A server that answers `discover` with the modern error `code` (HTTP 400) and serves
/// modern requests otherwise.
async fn refusing_discover_with(code: i64) -> Scripted {
    Scripted::start(move |seen| match seen.method() {
        "server/discover" => Reply::error(
            seen,
            400,
            json!({"code": code, "message": "refused", "data": {"requiredCapabilities": {}}}),
        ),
        "initialize" => Reply::result(seen, initialized("2025-11-25")),
        _ => Reply::result(seen, json!({"resultType": "complete", "tools": []})),
    })
    .await
}

#[actix_web::test]
async fn a_32020_answer_to_the_probe_means_modern_without_initialize() {
    let server = refusing_discover_with(-32020).await;
    let client = connect(&server).await.expect("connects");
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(
        client.server().protocol_version,
        ProtocolVersion::V2026_07_28
    );
    client.list_tools().await.expect("tools");
    assert_eq!(methods(&server), ["server/discover", "tools/list"]);
}

#[actix_web::test]
async fn a_32021_answer_to_the_probe_means_modern_without_initialize() {
    let server = refusing_discover_with(-32021).await;
    let client = connect(&server).await.expect("connects");
    assert_eq!(client.era(), Era::Modern);
    client.list_tools().await.expect("tools");
    assert_eq!(methods(&server), ["server/discover", "tools/list"]);
    assert_eq!(
        server.calls("tools/list")[0].body["params"]["_meta"]
            ["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28",
        "the calls that follow are modern"
    );
}

#[actix_web::test]
async fn two_paths_on_one_origin_are_cached_apart() {
    let server = Scripted::start(|seen| match (seen.path.as_str(), seen.method()) {
        ("/modern/mcp", "server/discover") => Reply::result(seen, discovered(&["2026-07-28"])),
        ("/legacy/mcp", "server/discover") => Reply::error(
            seen,
            404,
            json!({"code": -32601, "message": "Method not found"}),
        ),
        (_, "initialize") => Reply::result(seen, initialized("2025-11-25")),
        (_, "notifications/initialized") => Reply::empty(202),
        _ => Reply::result(seen, json!({"resultType": "complete", "tools": []})),
    })
    .await;
    let (modern_url, legacy_url) = (server.url_at("/modern/mcp"), server.url_at("/legacy/mcp"));
    for _ in 0..2 {
        for (url, era) in [(&modern_url, Era::Modern), (&legacy_url, Era::Legacy)] {
            let client = Client::builder().connect_http(url).await.expect("connects");
            assert_eq!(client.era(), era, "{url}");
        }
    }
    let probes = |path: &str| {
        server
            .calls("server/discover")
            .iter()
            .filter(|s| s.path == path)
            .count()
    };
    assert_eq!(
        (probes("/modern/mcp"), probes("/legacy/mcp")),
        (1, 1),
        "each path probed once, then read from its own cache entry"
    );
    assert_eq!(server.calls("initialize").len(), 2, "legacy twice");
}

/// A server that speaks only the legacy era until `switched` is set, then answers with `then`.
async fn legacy_until(
    switched: &Arc<AtomicBool>,
    then: impl Fn(&Seen) -> Reply + Send + Sync + 'static,
) -> Scripted {
    let switched = switched.clone();
    Scripted::start(move |seen| {
        if switched.load(Ordering::SeqCst) {
            return then(seen);
        }
        match seen.method() {
            "server/discover" => Reply::error(
                seen,
                404,
                json!({"code": -32601, "message": "Method not found"}),
            ),
            "initialize" => Reply::result(seen, initialized("2025-11-25")),
            "notifications/initialized" => Reply::empty(202),
            _ => Reply::result(seen, json!({"tools": []})),
        }
    })
    .await
}

#[actix_web::test]
async fn a_cached_legacy_endpoint_whose_initialize_is_refused_is_probed_again() {
    let upgraded = Arc::new(AtomicBool::new(false));
    let server = legacy_until(&upgraded, |seen| match seen.method() {
        "server/discover" => Reply::result(seen, discovered(&["2026-07-28"])),
        "initialize" => Reply::error(
            seen,
            400,
            json!({"code": -32601, "message": "Method not found"}),
        ),
        _ => Reply::result(seen, json!({"resultType": "complete", "tools": []})),
    })
    .await;
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
    upgraded.store(true, Ordering::SeqCst);
    let client = connect(&server).await.expect("connects after the upgrade");
    assert_eq!(client.era(), Era::Modern);
    assert_eq!(
        methods(&server),
        [
            "server/discover",
            "initialize",
            "notifications/initialized",
            "initialize",
            "server/discover"
        ],
        "the cached era tried once, then a probe"
    );
    assert_eq!(
        connect(&server).await.expect("connects").era(),
        Era::Modern,
        "the new era is cached"
    );
    assert_eq!(server.calls("server/discover").len(), 2);
}

#[actix_web::test]
async fn a_cached_legacy_endpoint_that_refuses_credentials_keeps_its_era() {
    let refusing = Arc::new(AtomicBool::new(false));
    let server = legacy_until(&refusing, |_| Reply::empty(401)).await;
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
    refusing.store(true, Ordering::SeqCst);
    let err = connect(&server).await.expect_err("refused");
    assert!(
        matches!(err, Error::Unauthorized { status: 401, .. }),
        "{err:?}"
    );
    refusing.store(false, Ordering::SeqCst);
    assert_eq!(connect(&server).await.expect("connects").era(), Era::Legacy);
    assert_eq!(
        server.calls("server/discover").len(),
        1,
        "a 401 says nothing of the era: the cached one stays"
    );
}

/// A stdio server that never answers `server/discover` and answers `initialize` at
/// 2025-11-25; every other line is read and left unanswered.
const ANSWERS_ONLY_INITIALIZE: &str = r#"
while IFS= read -r line; do
  case "$line" in
    *'"method":"initialize"'*)
      id=$(printf '%s\n' "$line" | sed -n 's/.*"id":\([0-9][0-9]*\).*/\1/p')
      printf '{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"silent-prober","version":"1"}}}\n' "$id"
      ;;
  esac
done
"#;

#[actix_web::test]
async fn a_stdio_server_silent_to_the_probe_is_legacy_after_the_probe_timeout() {
    const PROBE: Duration = Duration::from_millis(300);
    let mut command = tokio::process::Command::new("sh");
    command.args(["-c", ANSWERS_ONLY_INITIALIZE]);
    let started = Instant::now();
    let client = Client::builder()
        .probe_timeout(PROBE)
        .connect_stdio(command)
        .await
        .expect("initializes");
    assert!(
        started.elapsed() >= PROBE,
        "initialize came after the probe timed out"
    );
    assert_eq!(client.era(), Era::Legacy);
    assert_eq!(
        client.server().server_info.map(|s| s["name"].clone()),
        Some(json!("silent-prober"))
    );
    client.close().await;
}
