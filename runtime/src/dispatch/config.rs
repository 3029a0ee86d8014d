//! Runtime settings that dispatch acts on.

use std::time::Duration;

use crate::legacy::LegacyConfig;
use crate::sealing::SealPolicy;

#[derive(Debug, Clone)]
pub struct RuntimeConfig {
    /// A handler run longer than this is abandoned with an internal error.
    pub request_timeout: Duration,
    /// How long a cancelled handler may go on (after `Context::cancelled` resolves) to clean
    /// up before it is dropped.
    pub cancel_grace: Duration,
    /// Input-required rounds one flow may take before the runtime stops it.
    pub max_rounds: u32,
    /// `None`: `requestState` passes through exactly as the handler wrote it (library users
    /// who configure no security). The `roundtrip` binary always seals.
    pub sealing: Option<SealPolicy>,
    /// Legacy sessions and their shim.
    pub legacy: LegacyConfig,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self {
            request_timeout: Duration::from_secs(60),
            cancel_grace: Duration::from_secs(1),
            max_rounds: 8,
            sealing: None,
            legacy: LegacyConfig::default(),
        }
    }
}
