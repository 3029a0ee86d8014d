//! The settings of what callers may keep and hold open: byte budgets (`budgets.*`), long-lived
//! streams (`streams.*`) and how clients are told apart (`clients.*`). Part of the settings
//! (`config.rs`, which validates them with [`zero_key`]), kept apart because they go together.

use std::net::IpAddr;
use std::time::Duration;

use roundtrip_runtime::budget::machine::{self, CeilingTooHigh};
use roundtrip_runtime::budget::BudgetLimits;
use roundtrip_runtime::transport::http::{ClientsConfig, StreamsConfig};
use serde::Deserialize;

/// Bytes kept past the request that brought them (legacy sessions, their subscriptions,
/// GET streams and held flows; listen streams), per caller, per tenant and per process.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct BudgetSettings {
    /// What one caller of a tenant keeps (an API key; an anonymous client address).
    pub caller_bytes: u64,
    /// What all callers of one tenant keep together.
    pub tenant_bytes: u64,
    /// What the process keeps; at most 3/4 of the machine's (or cgroup's) memory.
    pub process_bytes: u64,
}

impl Default for BudgetSettings {
    fn default() -> Self {
        let runtime = BudgetLimits::BYTES;
        Self {
            caller_bytes: runtime.per_caller,
            tenant_bytes: runtime.per_tenant,
            process_bytes: runtime.process,
        }
    }
}

impl BudgetSettings {
    pub fn runtime(&self) -> BudgetLimits {
        BudgetLimits {
            per_caller: self.caller_bytes,
            per_tenant: self.tenant_bytes,
            process: self.process_bytes,
        }
    }

    /// Refuses a process budget the machine cannot give (above 3/4 of `MemTotal`, or of the
    /// cgroup's `memory.max`): checked at start-up, where the machine is known.
    pub fn check_machine(&self) -> Result<(), CeilingTooHigh> {
        machine::check_ceiling(self.process_bytes, machine::available_memory())
    }
}

/// Long-lived streams: `subscriptions/listen` caps and idling, and file descriptors.
#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct StreamSettings {
    /// Open listen streams one caller of a tenant holds.
    pub max_listen_per_caller: u64,
    /// Open listen streams one tenant's callers hold together.
    pub max_listen_per_tenant: u64,
    /// Open listen streams in the process.
    pub max_listen: u64,
    /// A listen stream that delivered nothing for this long is closed.
    pub listen_idle_secs: u64,
    /// File descriptors kept free for ordinary requests and `/healthz`: no new long-lived
    /// stream while fewer remain.
    pub fd_headroom: u64,
}

impl Default for StreamSettings {
    fn default() -> Self {
        let runtime = StreamsConfig::default();
        Self {
            max_listen_per_caller: runtime.listen.per_caller,
            max_listen_per_tenant: runtime.listen.per_tenant,
            max_listen: runtime.listen.process,
            listen_idle_secs: runtime.listen_idle.as_secs(),
            fd_headroom: runtime.fd_headroom,
        }
    }
}

impl StreamSettings {
    pub fn runtime(&self) -> StreamsConfig {
        StreamsConfig {
            listen: BudgetLimits {
                per_caller: self.max_listen_per_caller,
                per_tenant: self.max_listen_per_tenant,
                process: self.max_listen,
            },
            listen_idle: Duration::from_secs(self.listen_idle_secs),
            fd_headroom: self.fd_headroom,
        }
    }
}

/// How clients are told apart: anonymous callers by address.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ClientSettings {
    /// A header naming the client's address (e.g. `X-Forwarded-For`), believed only from
    /// `trusted_proxies`.
    pub address_header: Option<String>,
    /// The addresses of proxies whose `address_header` is believed.
    pub trusted_proxies: Vec<IpAddr>,
}

impl ClientSettings {
    pub fn runtime(&self) -> ClientsConfig {
        ClientsConfig {
            address_header: self
                .address_header
                .as_ref()
                .map(|h| h.trim().to_ascii_lowercase())
                .filter(|h| !h.is_empty()),
            trusted_proxies: self.trusted_proxies.clone(),
        }
    }
}

/// The key of the first budget or stream limit that is zero, if any: each must be above zero.
pub fn zero_key(budgets: &BudgetSettings, streams: &StreamSettings) -> Option<&'static str> {
    [
        ("budgets.caller_bytes", budgets.caller_bytes),
        ("budgets.tenant_bytes", budgets.tenant_bytes),
        ("budgets.process_bytes", budgets.process_bytes),
        (
            "streams.max_listen_per_caller",
            streams.max_listen_per_caller,
        ),
        (
            "streams.max_listen_per_tenant",
            streams.max_listen_per_tenant,
        ),
        ("streams.max_listen", streams.max_listen),
        ("streams.listen_idle_secs", streams.listen_idle_secs),
    ]
    .into_iter()
    .find_map(|(key, value)| (value == 0).then_some(key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_the_runtimes() {
        assert_eq!(BudgetSettings::default().runtime(), BudgetLimits::BYTES);
        assert_eq!(
            StreamSettings::default().runtime(),
            StreamsConfig::default()
        );
    }

    #[test]
    fn a_zero_budget_or_stream_cap_is_named_by_its_key() {
        let budgets = BudgetSettings {
            tenant_bytes: 0,
            ..BudgetSettings::default()
        };
        let streams = StreamSettings::default();
        assert_eq!(zero_key(&budgets, &streams), Some("budgets.tenant_bytes"));
        let idle = StreamSettings {
            listen_idle_secs: 0,
            ..StreamSettings::default()
        };
        let defaults = BudgetSettings::default();
        assert_eq!(zero_key(&defaults, &idle), Some("streams.listen_idle_secs"));
        assert_eq!(zero_key(&defaults, &streams), None);
    }

    #[test]
    fn the_address_header_is_named_in_lower_case_and_blank_is_none() {
        let clients = ClientSettings {
            address_header: Some("X-Forwarded-For".into()),
            trusted_proxies: Vec::new(),
        };
        assert_eq!(
            clients.runtime().address_header.as_deref(),
            Some("x-forwarded-for")
        );
        let blank = ClientSettings {
            address_header: Some(" ".into()),
            ..clients
        };
        assert_eq!(blank.runtime().address_header, None);
    }
}
