//! Settings: embedded defaults, then the optional `roundtrip.toml` (or `--config`), then
//! `ROUNDTRIP_*` environment variables, then command-line flags. Nothing else reads the
//! environment.

use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use serde::Deserialize;

use crate::cli::ServeArgs;

#[derive(Clone, Deserialize)]
#[serde(default)]
pub struct Config {
    /// `host:port` to listen on.
    pub listen: String,
    /// HTTP workers; `None` = one per CPU.
    pub workers: Option<usize>,
    /// The demo tenant's API key; generated (and printed once) when unset.
    pub demo_api_key: Option<String>,
    /// Log filter (tracing `EnvFilter` syntax); `RUST_LOG` wins.
    pub log: String,
    pub http: HttpSettings,
    pub mcp: McpSettings,
    pub state: StateSettings,
}

impl std::fmt::Debug for Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Config")
            .field("listen", &self.listen)
            .field("workers", &self.workers)
            .field(
                "demo_api_key",
                &self.demo_api_key.as_ref().map(|_| "<redacted>"),
            )
            .field("http", &self.http)
            .field("mcp", &self.mcp)
            .field("state", &self.state)
            .finish()
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct HttpSettings {
    pub max_body_bytes: usize,
    pub body_timeout_ms: u64,
    pub sse_keepalive_ms: u64,
    /// Host names accepted in `Host` and `Origin` (DNS-rebinding protection); `*` = any.
    pub allowed_hosts: Vec<String>,
    /// Further full origins accepted in `Origin`.
    pub allowed_origins: Vec<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct McpSettings {
    pub request_timeout_ms: u64,
    /// How long a handler whose client went away may go on cleaning up.
    pub cancel_grace_ms: u64,
    /// Input-required rounds one flow may take.
    pub max_rounds: u32,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(default)]
pub struct StateSettings {
    /// Lifetime of a sealed `requestState`, per round.
    pub ttl_secs: u64,
    pub clock_skew_secs: u64,
    /// Largest `requestState` token accepted (checked before decoding).
    pub max_token_bytes: usize,
    /// Largest handler state sealed.
    pub max_state_bytes: usize,
}

impl Default for Config {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8080".into(),
            workers: None,
            demo_api_key: None,
            log: "info".into(),
            http: HttpSettings::default(),
            mcp: McpSettings::default(),
            state: StateSettings::default(),
        }
    }
}

impl Default for HttpSettings {
    fn default() -> Self {
        Self {
            max_body_bytes: 1024 * 1024,
            body_timeout_ms: 10_000,
            sse_keepalive_ms: 15_000,
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "[::1]".into()],
            allowed_origins: Vec::new(),
        }
    }
}

impl Default for McpSettings {
    fn default() -> Self {
        Self {
            request_timeout_ms: 60_000,
            cancel_grace_ms: 1_000,
            max_rounds: 8,
        }
    }
}

impl Default for StateSettings {
    fn default() -> Self {
        Self {
            ttl_secs: 300,
            clock_skew_secs: 30,
            max_token_bytes: 64 * 1024,
            max_state_bytes: 32 * 1024,
        }
    }
}

impl Config {
    /// Defaults, then `path` (or `./roundtrip.toml` if present), then `ROUNDTRIP_*`.
    pub fn load(path: Option<&Path>) -> anyhow::Result<Config> {
        let mut builder = config::Config::builder();
        match path {
            Some(p) => builder = builder.add_source(config::File::from(p).required(true)),
            None => {
                builder =
                    builder.add_source(config::File::with_name("roundtrip.toml").required(false))
            }
        }
        let env = config::Environment::with_prefix("ROUNDTRIP")
            .prefix_separator("_")
            .separator("__")
            .list_separator(",")
            .with_list_parse_key("http.allowed_hosts")
            .with_list_parse_key("http.allowed_origins")
            .try_parsing(true);
        builder
            .add_source(env)
            .build()
            .and_then(|c| c.try_deserialize())
            .context("reading roundtrip.toml and ROUNDTRIP_* variables")
    }

    /// Applies `serve`'s flags over the loaded settings.
    pub fn with_serve_args(mut self, args: &ServeArgs) -> Config {
        if let Some(listen) = &args.listen {
            self.listen = listen.clone();
        }
        if args.workers.is_some() {
            self.workers = args.workers;
        }
        self
    }

    pub fn request_timeout(&self) -> Duration {
        Duration::from_millis(self.mcp.request_timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_listen_on_loopback_8080() {
        let c = Config::default();
        assert_eq!(c.listen, "127.0.0.1:8080");
        assert_eq!(c.state.ttl_secs, 300);
        assert_eq!(c.mcp.max_rounds, 8);
    }

    #[test]
    fn debug_redacts_the_demo_key() {
        let c = Config {
            demo_api_key: Some("secret-key".into()),
            ..Config::default()
        };
        assert!(!format!("{c:?}").contains("secret-key"));
    }
}
