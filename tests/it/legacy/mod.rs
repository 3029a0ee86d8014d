//! Legacy sessions (MCP 2025-11-25 and older) on the same endpoint as modern requests, in two
//! modules: `sessions`, the session itself (the handshake, its own methods, who may use it, its
//! lifetime and caps, its GET stream), and `shim`, the input requests a handler makes relayed
//! over it as server-to-client requests. The assertions both use are here.
//!
//! Every message the server sends in a session is checked against the committed 2025-11-25
//! schema by `support::legacy_client`.

mod sessions;
mod shim;

use serde_json::{json, Value};

use crate::support::legacy_client::{LegacySession, LegacyStream};
use crate::support::Reply;

/// The unknown-session code of a legacy request whose session is not (or no longer) live.
const UNKNOWN_SESSION: i64 = -31005;

/// A JSON reply carrying the JSON-RPC error `code` with HTTP `status`; the error object.
fn error_of(reply: &Reply, code: i64, status: u16) -> Value {
    assert_eq!(reply.status, status, "expected HTTP {status}: {reply:?}");
    let body = reply.json();
    assert_eq!(
        body["error"]["code"], code,
        "expected error {code}: {reply:?}"
    );
    body["error"].clone()
}

/// The answer reached the flow waiting for it: 202, no body.
fn assert_accepted(reply: &Reply) {
    assert_eq!(reply.status, 202, "expected the answer accepted: {reply:?}");
    assert!(reply.body.is_empty(), "a 202 has no body: {reply:?}");
}

fn accept_name(name: &str) -> Value {
    json!({"action": "accept", "content": {"name": name}})
}

fn leg_id(leg: &Value) -> &Value {
    &leg["id"]
}

/// Opens a call's stream, which must be SSE since the handler asks first.
async fn open_sse(session: &LegacySession<'_>, body: &Value) -> LegacyStream {
    let stream = session.open(body).await;
    assert_eq!(stream.status, 200);
    assert!(
        stream.is_sse(),
        "a call whose handler asks for input gets an SSE stream"
    );
    stream
}
