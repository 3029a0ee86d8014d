//! The limits of long-lived streams: how many `subscriptions/listen` streams a caller, a
//! tenant and the process keep open, how long one may idle, and the file descriptors they
//! must leave for everything else.

use std::time::Duration;

use crate::budget::BudgetLimits;

/// Limits of long-lived streams.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamsConfig {
    /// Open listen streams per caller, per tenant and per process (counts).
    pub listen: BudgetLimits,
    /// A listen stream that delivered nothing for this long is closed (with its closing
    /// result); the client may listen again.
    pub listen_idle: Duration,
    /// File descriptors kept free: no new long-lived stream while fewer remain.
    pub fd_headroom: u64,
}

impl Default for StreamsConfig {
    fn default() -> Self {
        Self {
            listen: BudgetLimits {
                per_caller: 16,
                per_tenant: 256,
                process: 4096,
            },
            listen_idle: Duration::from_secs(30 * 60),
            fd_headroom: 256,
        }
    }
}
