//! Deciding a server's era (protocol §4.5), once per connection.
//!
//! `auto` probes `server/discover` at our newest modern version:
//! - a discover result that lists a modern version we speak: modern, at that version;
//! - a -32020 (header mismatch) or -32021 (missing client capability): modern, at the version
//!   probed, since only a modern server answers with them (§4.5: "a recognised modern error
//!   body means modern");
//! - a -32022 naming a version we share: one more probe, at that version;
//! - any other JSON-RPC error, a discover result sharing no modern version, or no result at
//!   all (an empty or non-JSON-RPC body, HTTP 400/404/405 without one): legacy, `initialize`;
//! - 401 and 403 are errors and decide nothing; so is a network error, or any other HTTP
//!   status without a JSON-RPC body;
//! - on stdio, a probe the server leaves unanswered for the probe timeout: legacy.
//!
//! On HTTP the outcome is cached for the process, per origin and path, so the next client of
//! the same endpoint skips the probe. This is the crate's one global: a map behind a mutex,
//! written only by a successful detection. A cached legacy endpoint whose `initialize` is
//! answered as no legacy server would (an HTTP 400, 404 or 405, a JSON-RPC error, a malformed
//! result or a version we do not speak) may have been upgraded since: its entry is dropped and
//! the endpoint probed again, once. Forcing an era skips both probe and cache.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Map, Value};

use crate::error::Error;
use crate::handler::InputContext;
use crate::protocol::jsonrpc::RpcError;
use crate::protocol::parse;
use crate::protocol::results::{DiscoverResult, InitializeResult};
use crate::protocol::version::{Era, ProtocolVersion};
use crate::session::{ServerInfo, Session, Wire};

/// The era each HTTP endpoint was found to speak, by origin and path.
static ERAS: LazyLock<Mutex<HashMap<String, (Era, ProtocolVersion)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

/// The cache, locked. A lookup, insert or removal cannot leave the map half-changed, so a
/// poisoned lock is taken as it is.
fn eras() -> MutexGuard<'static, HashMap<String, (Era, ProtocolVersion)>> {
    ERAS.lock().unwrap_or_else(|p| p.into_inner())
}

/// The cached era of the endpoint `key`.
pub(crate) fn cached(key: &str) -> Option<(Era, ProtocolVersion)> {
    eras().get(key).copied()
}

fn remember(key: &str, era: Era, version: ProtocolVersion) {
    eras().insert(key.to_owned(), (era, version));
}

fn forget(key: &str) {
    eras().remove(key);
}

/// Whether a failed exchange got no answer of the era it was sent in: an HTTP 400, 404 or 405
/// without a JSON-RPC body, a body that is not one, or a stream that ended without one. A
/// probe reads it as legacy; a cached legacy endpoint's `initialize` as a change of era.
/// Refused credentials, a network failure or a timeout say nothing of the era.
fn no_answer_of_this_era(error: &Error) -> bool {
    matches!(
        error,
        Error::Http {
            status: 400 | 404 | 405,
            ..
        } | Error::Malformed { .. }
            | Error::StreamEnded { .. }
    )
}

/// Whether a failed `initialize` says the endpoint may no longer speak the legacy era: no
/// legacy answer, a JSON-RPC error, or a version we do not speak.
fn may_have_changed_era(error: &Error) -> bool {
    no_answer_of_this_era(error)
        || matches!(error, Error::Rpc { .. } | Error::NoSharedVersion { .. })
}

/// The cache key of an HTTP endpoint: its origin and path, without query or fragment.
pub(crate) fn cache_key(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or_default();
    let port = url.port_or_known_default().unwrap_or_default();
    format!("{}://{host}:{port}{}", url.scheme(), url.path())
}

/// What a probe found: modern with what `server/discover` said (nothing when the server
/// answered with a modern error), or legacy.
#[derive(Debug)]
enum Probed {
    Modern(ProtocolVersion, Option<Box<DiscoverResult>>),
    Legacy,
}

/// Probes, then sets the connection up in the era found: modern needs nothing more, legacy
/// runs `initialize`. `cache`: the HTTP endpoint's key.
pub(crate) async fn detect(
    session: &Session,
    cache: Option<&str>,
    probe_timeout: Duration,
) -> Result<(), Error> {
    if let Some(key) = cache {
        match cached(key) {
            Some((Era::Modern, version)) => {
                modern(session, version, None);
                return Ok(());
            }
            Some((Era::Legacy, _)) => match initialize(session).await {
                Err(e) if may_have_changed_era(&e) => forget(key),
                set_up => return set_up,
            },
            None => {}
        }
    }
    match probe(session, probe_timeout).await? {
        Probed::Modern(version, discovered) => {
            modern(session, version, discovered.map(|d| *d));
            if let Some(key) = cache {
                remember(key, Era::Modern, version);
            }
            Ok(())
        }
        Probed::Legacy => {
            initialize(session).await?;
            if let (Some(key), Some(server)) = (cache, session.server()) {
                remember(key, Era::Legacy, server.protocol_version);
            }
            Ok(())
        }
    }
}

async fn probe(session: &Session, probe_timeout: Duration) -> Result<Probed, Error> {
    let mut version = ProtocolVersion::MODERN[0];
    let mut reprobed = false;
    let context = InputContext::default();
    loop {
        let exchange = session.exchange(
            Wire::Modern(version),
            "server/discover",
            Map::new(),
            &context,
        );
        let answer = if session.transport.is_stdio() {
            match tokio::time::timeout(probe_timeout, exchange).await {
                Ok(answer) => answer,
                Err(_) => return Ok(Probed::Legacy),
            }
        } else {
            exchange.await
        };
        match answer {
            Ok(Ok(result)) => {
                let Ok(discovered) = parse::<Map<String, Value>>("a discover result", result)
                    .and_then(DiscoverResult::parse)
                else {
                    return Ok(Probed::Legacy);
                };
                let shared = ProtocolVersion::shared_modern(
                    discovered.supported_versions.iter().map(String::as_str),
                );
                return Ok(match shared {
                    Some(v) => Probed::Modern(v, Some(Box::new(discovered))),
                    None => Probed::Legacy,
                });
            }
            Ok(Err(e))
                if e.code == RpcError::HEADER_MISMATCH
                    || e.code == RpcError::MISSING_REQUIRED_CLIENT_CAPABILITY =>
            {
                return Ok(Probed::Modern(version, None))
            }
            Ok(Err(e)) if e.code == RpcError::UNSUPPORTED_PROTOCOL_VERSION && !reprobed => {
                match ProtocolVersion::shared_modern(e.supported_versions()) {
                    Some(v) => {
                        version = v;
                        reprobed = true;
                    }
                    None => return Ok(Probed::Legacy),
                }
            }
            Ok(Err(_)) => return Ok(Probed::Legacy),
            Err(e) if no_answer_of_this_era(&e) => return Ok(Probed::Legacy),
            Err(e) => return Err(e),
        }
    }
}

/// Sets the connection up as modern at `version`.
pub(crate) fn modern(
    session: &Session,
    version: ProtocolVersion,
    discovered: Option<DiscoverResult>,
) {
    let (capabilities, server_info, instructions) = match discovered {
        Some(d) => (Some(d.capabilities), d.server_info, d.instructions),
        None => (None, None, None),
    };
    session.set_server(ServerInfo {
        era: Era::Modern,
        protocol_version: version,
        capabilities,
        server_info,
        instructions,
    });
}

/// The legacy handshake: `initialize` asking for our newest legacy version, then
/// `notifications/initialized`. A version the server answers with that we do not speak is
/// [`Error::NoSharedVersion`].
pub(crate) async fn initialize(session: &Session) -> Result<(), Error> {
    const METHOD: &str = "initialize";
    let params = json!({
        "protocolVersion": ProtocolVersion::LEGACY[0].as_str(),
        "capabilities": session.handlers.capabilities(),
        "clientInfo": session.client_info(),
    });
    let params = params.as_object().cloned().unwrap_or_default();
    let answer = session
        .exchange(Wire::Legacy(None), METHOD, params, &InputContext::default())
        .await?;
    let result = answer.map_err(|error| Error::Rpc {
        method: METHOD.into(),
        error,
    })?;
    let init: InitializeResult =
        parse("an initialize result", result).map_err(|source| Error::Malformed {
            method: METHOD.into(),
            source,
        })?;
    let version = ProtocolVersion::parse(&init.protocol_version)
        .filter(|v| v.era() == Era::Legacy)
        .ok_or_else(|| Error::NoSharedVersion {
            offered: vec![init.protocol_version.clone()],
        })?;
    session.set_server(ServerInfo {
        era: Era::Legacy,
        protocol_version: version,
        capabilities: Some(init.capabilities),
        server_info: init.server_info,
        instructions: init.instructions,
    });
    session.notify("notifications/initialized", None).await?;
    session.transport.initialized(version).await;
    Ok(())
}
