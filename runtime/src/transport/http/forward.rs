//! A legacy session's request that lands on a worker other than the one holding the session
//! is sent on to that worker (its owner, found in the fleet's `SessionDirectory`) and its
//! response streamed back as it comes: the client gets what the owner answers, an SSE stream
//! included. Why over HTTP and not through Redis: `fleet::directory`.
//!
//! A request is forwarded at most once: the forward carries [`FORWARDED`], and a worker never
//! forwards a request that carries it (so a stale directory cannot make a loop). The header's
//! value names the client's address, vouched for with the fleet's MAC (`fleet`), so
//! the owner counts an anonymous caller by its own address, not the forwarding worker's; a
//! value without a good MAC (a client that sends the header itself) names nobody, and the
//! peer is the client as usual. An owner that cannot be reached is gone: its entry is
//! forgotten and the client gets 404, as for any ended session, and initializes again.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use actix_web::http::header::{self, HeaderName, HeaderValue};
use actix_web::{web, HttpRequest, HttpResponse};

use super::error::RpcError;
use super::headers::SESSION_ID;
use super::McpService;
use crate::fleet::directory::DirectoryEntry;
use crate::fleet::{Forward, SessionFleet};
use crate::protocol::McpError;

/// Set on a forwarded request.
pub(crate) const FORWARDED: HeaderName = HeaderName::from_static("roundtrip-forwarded");

/// How long connecting to an owner may take before it counts as gone.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(1);

/// A worker's HTTP client for forwards (awc clients belong to one thread).
pub(crate) struct Forwarder {
    client: awc::Client,
}

impl Forwarder {
    pub(crate) fn new() -> Forwarder {
        Forwarder {
            client: awc::Client::builder()
                .disable_timeout()
                .disable_redirects()
                .connector(awc::Connector::new().timeout(CONNECT_TIMEOUT))
                .finish(),
        }
    }
}

/// Where a request is to be forwarded: the session it names, held by another worker of the
/// fleet, and that session's directory entry.
pub(crate) struct Owner<'r> {
    fleet: &'r SessionFleet,
    session: &'r str,
    /// The entry: the owner's URL, and who holds the session.
    pub(crate) entry: DirectoryEntry,
}

/// Where `req` is to be forwarded, when another worker of the fleet holds the session it
/// names for tenant `slug`. `None` when this worker answers it: no fleet, no session id, a
/// session held here, a forward already, or a session the directory does not know (or
/// cannot be asked about), which this worker then answers 404.
pub(crate) async fn owner_of<'r>(
    req: &'r HttpRequest,
    slug: &str,
    service: &'r McpService,
) -> Option<Owner<'r>> {
    let fleet = service.runtime.sessions.as_ref()?;
    let session = req.headers().get(SESSION_ID)?.to_str().ok()?;
    if req.headers().contains_key(FORWARDED) || service.legacy.sessions.holds(session) {
        return None;
    }
    let entry = match fleet.directory().lookup(session).await {
        Ok(entry) => entry?,
        Err(e) => {
            tracing::warn!(error = %e, "could not look a legacy session up in the directory");
            return None;
        }
    };
    (*entry.holder.tenant == *slug && fleet.owner() != Some(entry.owner.as_str())).then_some(
        Owner {
            fleet,
            session,
            entry,
        },
    )
}

/// The client a forwarded request names in [`FORWARDED`], if the fleet's key vouches for it.
/// Outside a fleet no header is read.
pub(crate) fn vouched_client(req: &HttpRequest, service: &McpService) -> Option<IpAddr> {
    let fleet = service.runtime.sessions.as_ref()?;
    let value = req.headers().get(FORWARDED)?.to_str().ok()?;
    let to = Forward {
        session: req.headers().get(SESSION_ID)?.to_str().ok()?,
        method: req.method().as_str(),
        owner: fleet.owner()?,
    };
    fleet.key().believe(&to, value)
}

/// Sends `req` from `client` with its body to `owner` and streams the owner's response back.
pub(crate) async fn to_owner(
    owner: Owner<'_>,
    req: &HttpRequest,
    client: Option<IpAddr>,
    payload: web::Payload,
    service: &McpService,
    forwarder: &Forwarder,
) -> Result<HttpResponse, RpcError> {
    let started = Instant::now();
    let Owner {
        fleet,
        session,
        entry,
    } = owner;
    let mut forward = forwarder.client.request(
        req.method().clone(),
        format!("{}{}", entry.owner, req.uri()),
    );
    for (name, value) in req.headers() {
        if !hop_by_hop(name) {
            forward = forward.append_header((name.clone(), value.clone()));
        }
    }
    let to = Forward {
        session,
        method: req.method().as_str(),
        owner: &entry.owner,
    };
    let vouch = client.and_then(|c| HeaderValue::from_str(&fleet.key().vouch(&to, c)).ok());
    let forward =
        forward.insert_header((FORWARDED, vouch.unwrap_or(HeaderValue::from_static("-"))));
    match forward.send_stream(payload).await {
        Ok(response) => {
            service.metrics.record_forwarded(started.elapsed());
            let mut back = HttpResponse::build(response.status());
            for (name, value) in response.headers() {
                if !hop_by_hop(name) {
                    back.append_header((name.clone(), value.clone()));
                }
            }
            Ok(back.streaming(response))
        }
        Err(awc::error::SendRequestError::Connect(e)) => {
            service.metrics.record_owner_gone();
            tracing::info!(error = %e, "the worker holding a legacy session is gone");
            service.legacy.forget_in_fleet(session, entry.holder);
            Err(RpcError::refused(None, McpError::unknown_session()))
        }
        Err(e) => {
            tracing::warn!(error = %e, "forwarding a legacy session's request failed");
            Err(RpcError::refused(
                None,
                McpError::internal("Internal error: the worker holding the session did not answer"),
            ))
        }
    }
}

/// Headers about one hop's connection, not the message: never passed on.
fn hop_by_hop(name: &HeaderName) -> bool {
    *name == header::CONNECTION
        || *name == header::CONTENT_LENGTH
        || *name == header::TRANSFER_ENCODING
        || *name == header::TE
        || *name == header::TRAILER
        || *name == header::UPGRADE
        || name.as_str() == "keep-alive"
        || name.as_str() == "proxy-connection"
}
