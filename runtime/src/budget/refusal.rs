//! A charge a limit refused, and the JSON-RPC error that tells the client.

use std::time::Duration;

use serde_json::json;

use crate::protocol::{ErrorCode, McpError};

/// How long a refused client is told to wait: what it holds goes when its sessions, flows or
/// streams end, which the server cannot predict; half a minute is a polite first retry.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

/// Which limit refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// The caller's own budget: the caller should let something go (HTTP 429).
    Caller,
    /// The tenant's budget, shared by its callers (HTTP 429).
    Tenant,
    /// The process's ceiling (HTTP 503): another worker may have room.
    Process,
}

/// A charge that would have passed a limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("over the {} budget of {max} {unit}", self.limit_name())]
pub struct Refusal {
    /// Which limit.
    pub limit: Limit,
    /// Its value.
    pub max: u64,
    /// What it counts.
    pub unit: &'static str,
}

impl Refusal {
    fn limit_name(&self) -> &'static str {
        match self.limit {
            Limit::Caller => "caller's",
            Limit::Tenant => "tenant's",
            Limit::Process => "server's",
        }
    }

    /// The error: -31429 (HTTP 429, `Retry-After`) for a caller's or tenant's budget,
    /// -31503 (HTTP 503, `Retry-After`) for the process ceiling; `data` names the limit.
    pub fn to_error(&self) -> McpError {
        let (code, limit) = match self.limit {
            Limit::Caller => (ErrorCode::OverBudget, "caller"),
            Limit::Tenant => (ErrorCode::OverBudget, "tenant"),
            Limit::Process => (ErrorCode::OverCapacity, "process"),
        };
        let retry_ms = u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX);
        McpError::new(code, format!("Refused: {self}; try again later")).with_data(json!({
            "retryAfterMs": retry_ms,
            "budget": { "limit": limit, "max": self.max, "unit": self.unit },
        }))
    }
}

impl From<Refusal> for McpError {
    fn from(r: Refusal) -> Self {
        r.to_error()
    }
}
