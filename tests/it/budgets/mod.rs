//! What callers may keep and hold open: byte budgets per caller, tenant and process (legacy
//! sessions, their GET streams and held flows; listen streams), caps on listen streams, the
//! file-descriptor headroom, and anonymous callers told apart by address. Each limit refuses
//! the request that would pass it, with its code, status and `Retry-After`, while the server
//! goes on serving everyone else.

mod descriptors;
mod fairness;
mod listen;
mod sessions;

use serde_json::Value;

use crate::support::Reply;

/// A refusal by a budget: `code` with HTTP `status`, a `Retry-After`, and `data.budget.limit`
/// naming `limit` (`caller`, `tenant`, `process`, or `None` when no budget is named).
fn assert_refused(reply: &Reply, code: i64, status: u16, limit: Option<&str>) -> Value {
    assert_eq!(reply.status, status, "expected HTTP {status}: {reply:?}");
    let error = reply.json()["error"].clone();
    assert_eq!(error["code"], code, "{reply:?}");
    let retry = reply.header("retry-after").expect("a Retry-After header");
    assert!(retry.parse::<u64>().is_ok_and(|s| s > 0), "{retry}");
    if let Some(limit) = limit {
        assert_eq!(error["data"]["budget"]["limit"], limit, "{error}");
    }
    error
}
