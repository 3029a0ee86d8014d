//! The tenant model as the store keeps it and the admin API shows it: a validated slug, the
//! settings an operator sets ([`TenantSpec`]), the status, and the record that carries them.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::error::TenantError;
use crate::wire::{object_only, whole, ListedName};

/// A tenant slug: what appears in `/t/{slug}/mcp`, matching `^[a-z0-9][a-z0-9-]{1,62}$`.
/// Parsed once, at the edge.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Slug(String);

impl Slug {
    /// `s` as a slug: 2 to 63 lowercase letters, digits and `-`, starting with a letter or a
    /// digit.
    pub fn parse(s: &str) -> Result<Self, TenantError> {
        if Self::is_slug(s) {
            Ok(Self(s.to_owned()))
        } else {
            Err(TenantError::InvalidSlug(s.to_owned()))
        }
    }

    /// Whether `s` is a slug, checked without making one.
    pub fn is_slug(s: &str) -> bool {
        let bytes = s.as_bytes();
        (2..=63).contains(&bytes.len())
            && bytes[0] != b'-'
            && bytes
                .iter()
                .all(|&b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }

    /// The slug as it appears in `/t/{slug}/mcp`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl<'de> Deserialize<'de> for Slug {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Slug::parse(&s).map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Slug {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A moment, as milliseconds since the Unix epoch (UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Millis(pub i64);

impl Millis {
    /// Now, by the system clock.
    pub fn now() -> Millis {
        Millis::of(SystemTime::now())
    }

    /// `at`, by the system clock (the epoch for a time before it).
    pub fn of(at: SystemTime) -> Millis {
        let since = at.duration_since(UNIX_EPOCH).unwrap_or_default();
        Millis(i64::try_from(since.as_millis()).unwrap_or(i64::MAX))
    }
}

/// How a tenant's MCP endpoint authenticates callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum AuthMode {
    /// Anyone may call; the principal is `anonymous`.
    Anonymous,
    /// A bearer API key of the tenant, with the `mcp` scope, is required.
    ApiKey,
}

impl AuthMode {
    /// The name the store and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::Anonymous => "anonymous",
            AuthMode::ApiKey => "api_key",
        }
    }

    /// The mode named `s`.
    pub fn parse(s: &str) -> Option<AuthMode> {
        match s {
            "anonymous" => Some(AuthMode::Anonymous),
            "api_key" => Some(AuthMode::ApiKey),
            _ => None,
        }
    }
}

/// Whether a tenant serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It serves.
    Active,
    /// Every MCP request gets 403; its admin API still answers.
    Suspended,
}

impl Status {
    /// The name the store and the API use.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Active => "active",
            Status::Suspended => "suspended",
        }
    }

    /// The status named `s`.
    pub fn parse(s: &str) -> Option<Status> {
        match s {
            "active" => Some(Status::Active),
            "suspended" => Some(Status::Suspended),
            _ => None,
        }
    }
}

/// Names of tools and prompts, and URIs (or URI templates) of resources: what a tenant
/// disables of its catalogs, or what a key is allowed to see.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct Names {
    /// Tool names (at most 1024; a repeated name counts once).
    #[serde(default)]
    #[schema(value_type = Vec<ListedName>, max_items = 1024)]
    pub tools: BTreeSet<String>,
    /// Prompt names (at most 1024).
    #[serde(default)]
    #[schema(value_type = Vec<ListedName>, max_items = 1024)]
    pub prompts: BTreeSet<String>,
    /// Resource URIs and resource-template URI templates (at most 1024).
    #[serde(default)]
    #[schema(value_type = Vec<ListedName>, max_items = 1024)]
    pub resources: BTreeSet<String>,
}

impl Names {
    /// No names at all.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty() && self.prompts.is_empty() && self.resources.is_empty()
    }

    /// How many names in all.
    pub fn len(&self) -> usize {
        self.tools.len() + self.prompts.len() + self.resources.len()
    }

    fn each(&self) -> impl Iterator<Item = &String> {
        self.tools
            .iter()
            .chain(&self.prompts)
            .chain(&self.resources)
    }
}

/// A token bucket: `per_second` requests on average, up to `burst` at once.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RateLimit {
    /// The sustained rate, requests per second: above 0, at most 1000000.
    #[schema(exclusive_minimum = 0, maximum = 1000000)]
    pub per_second: f64,
    /// The most requests allowed at once (≥ 1).
    #[serde(deserialize_with = "whole")]
    #[schema(minimum = 1, maximum = 4294967295_u64)]
    pub burst: u32,
}

/// A tenant's rate limits, enforced by each serving process, or by the fleet together when
/// its buckets are in Redis.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(remote = "Self", deny_unknown_fields)]
pub struct RateLimits {
    /// Every request to the tenant's MCP endpoint, all callers together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tenant: Option<RateLimit>,
    /// Each caller (API key, or on an anonymous tenant each anonymous caller together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<RateLimit>,
    /// `tools/call` of a tool, by name, all callers together (at most 256 tools).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    #[schema(schema_with = crate::wire::tool_rate_limits)]
    pub tools: BTreeMap<String, RateLimit>,
}

impl RateLimits {
    /// No limits.
    pub fn is_empty(&self) -> bool {
        self.tenant.is_none() && self.key.is_none() && self.tools.is_empty()
    }

    fn each(&self) -> impl Iterator<Item = &RateLimit> {
        self.tenant
            .iter()
            .chain(&self.key)
            .chain(self.tools.values())
    }
}

object_only!(serialize: Names, RateLimit, RateLimits);

/// Bounds on what an operator may store, so that a tenant record stays small.
pub mod bounds {
    /// Characters of a tenant's name.
    pub const NAME_CHARS: usize = 200;
    /// Characters of a tenant's instructions.
    pub const INSTRUCTIONS_CHARS: usize = 16 * 1024;
    /// Catalogs a tenant may serve.
    pub const CATALOGS: usize = 16;
    /// Names in each list (tools, prompts, resources) of a disabled or allowed set.
    pub const NAMES: usize = 1024;
    /// Characters of one name or URI in such a list.
    pub const NAME_LEN: usize = 512;
    /// Per-tool rate limits of a tenant.
    pub const TOOL_LIMITS: usize = 256;
    /// The longest requestState TTL, seconds (one day).
    pub const MAX_STATE_TTL_SECS: u64 = 86_400;
    /// The largest memory budget a tenant may be given, bytes (1 PiB; below 2^53, so any
    /// JSON reader keeps it exact).
    pub const MAX_MEMORY_BUDGET_BYTES: u64 = 1 << 50;
}

/// What an operator sets for a tenant: everything but its slug, status and times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TenantSpec {
    /// The operator's name for it; also the server's `title`.
    pub name: String,
    /// What `server/discover` and `initialize` tell clients.
    pub instructions: Option<String>,
    /// The compiled-in catalogs it serves, by name, merged in this order (first name wins).
    pub catalogs: Vec<String>,
    /// What it does not serve of those catalogs.
    pub disabled: Names,
    /// Lifetime of its sealed `requestState`; `None` uses the server's default.
    pub state_ttl_secs: Option<u64>,
    /// Whether legacy sessions get the shim (input requests relayed as real requests).
    pub legacy_shim: bool,
    /// What its callers may keep together past their requests, bytes; `None`: the server's
    /// `budgets.tenant_bytes`.
    pub memory_budget_bytes: Option<u64>,
    /// Its rate limits.
    pub rate_limits: RateLimits,
    /// How its callers authenticate.
    pub auth: AuthMode,
}

impl TenantSpec {
    /// A spec with the defaults: no instructions, nothing disabled, the server's TTL, the
    /// shim on, no rate limits.
    pub fn new(name: impl Into<String>, catalogs: Vec<String>, auth: AuthMode) -> TenantSpec {
        TenantSpec {
            name: name.into(),
            instructions: None,
            catalogs,
            disabled: Names::default(),
            state_ttl_secs: None,
            legacy_shim: true,
            memory_budget_bytes: None,
            rate_limits: RateLimits::default(),
            auth,
        }
    }

    /// Checks the spec against [`bounds`]; catalog names are checked by whoever knows them.
    pub fn validate(&self) -> Result<(), TenantError> {
        let invalid = |what: String| Err(TenantError::Invalid(what));
        // No control characters: the name is a title people read (and a terminal shows),
        // and PostgreSQL cannot keep U+0000 in a text column.
        if self.name.trim().is_empty()
            || self.name.chars().count() > bounds::NAME_CHARS
            || self.name.chars().any(char::is_control)
        {
            return invalid(format!(
                "name: 1 to {} characters, not only spaces, no control characters",
                bounds::NAME_CHARS
            ));
        }
        if self
            .instructions
            .as_ref()
            .is_some_and(|i| i.chars().count() > bounds::INSTRUCTIONS_CHARS)
        {
            return invalid(format!(
                "instructions: at most {} characters",
                bounds::INSTRUCTIONS_CHARS
            ));
        }
        if self.catalogs.is_empty() || self.catalogs.len() > bounds::CATALOGS {
            return invalid(format!("catalogs: 1 to {} names", bounds::CATALOGS));
        }
        validate_names("disabled", &self.disabled)?;
        if let Some(ttl) = self.state_ttl_secs {
            if !(1..=bounds::MAX_STATE_TTL_SECS).contains(&ttl) {
                return invalid(format!(
                    "state_ttl_secs: 1 to {}",
                    bounds::MAX_STATE_TTL_SECS
                ));
            }
        }
        if let Some(bytes) = self.memory_budget_bytes {
            if !(1..=bounds::MAX_MEMORY_BUDGET_BYTES).contains(&bytes) {
                return invalid(format!(
                    "memory_budget_bytes: 1 to {}",
                    bounds::MAX_MEMORY_BUDGET_BYTES
                ));
            }
        }
        if self.rate_limits.tools.len() > bounds::TOOL_LIMITS {
            return invalid(format!(
                "rate_limits.tools: at most {} tools",
                bounds::TOOL_LIMITS
            ));
        }
        let sane = |l: &RateLimit| {
            l.per_second.is_finite() && l.per_second > 0.0 && l.per_second <= 1e6 && l.burst >= 1
        };
        if !self.rate_limits.each().all(sane) {
            return invalid(
                "rate_limits: per_second above 0 and at most 1000000, burst at least 1".into(),
            );
        }
        Ok(())
    }
}

/// Checks a list of names (disabled items, or a key's allow-list) against [`bounds`].
pub fn validate_names(field: &str, names: &Names) -> Result<(), TenantError> {
    for (kind, list) in [
        ("tools", &names.tools),
        ("prompts", &names.prompts),
        ("resources", &names.resources),
    ] {
        if list.len() > bounds::NAMES {
            return Err(TenantError::Invalid(format!(
                "{field}.{kind}: at most {} names",
                bounds::NAMES
            )));
        }
    }
    if names
        .each()
        .any(|n| n.is_empty() || n.chars().count() > bounds::NAME_LEN)
    {
        return Err(TenantError::Invalid(format!(
            "{field}: each name 1 to {} characters",
            bounds::NAME_LEN
        )));
    }
    Ok(())
}

/// A tenant as the store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantRecord {
    /// Where it is served: `/t/{slug}/mcp`.
    pub slug: Slug,
    /// What the operator set.
    pub spec: TenantSpec,
    /// Whether it serves.
    pub status: Status,
    /// When it was created.
    pub created_at: Millis,
    /// When it last changed.
    pub updated_at: Millis,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_rule() {
        for good in ["demo", "demo-1", "0x", "a-", &"x".repeat(63)] {
            assert!(Slug::parse(good).is_ok(), "{good:?}");
        }
        for bad in [
            "",
            "d",
            "Demo",
            "-x",
            "a/b",
            "a b",
            "a_b",
            "é1",
            &"x".repeat(64),
        ] {
            assert!(Slug::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_slug_is_checked_when_read_from_json() {
        assert!(serde_json::from_str::<Slug>("\"ok-1\"").is_ok());
        assert!(serde_json::from_str::<Slug>("\"Not OK\"").is_err());
    }

    #[test]
    fn a_default_spec_is_valid() {
        let spec = TenantSpec::new("Demo", vec!["examples".into()], AuthMode::ApiKey);
        assert_eq!(spec.validate(), Ok(()));
    }

    #[test]
    fn a_name_with_a_control_character_is_invalid() {
        for name in ["a\u{0}b", "tab\there", "bell\u{7}", "c1\u{85}"] {
            let spec = TenantSpec::new(name, vec!["examples".into()], AuthMode::ApiKey);
            assert!(spec.validate().is_err(), "{name:?}");
        }
    }

    #[test]
    fn an_empty_name_is_invalid() {
        let spec = TenantSpec::new("  ", vec!["examples".into()], AuthMode::ApiKey);
        assert!(matches!(spec.validate(), Err(TenantError::Invalid(m)) if m.starts_with("name")));
    }

    #[test]
    fn a_tenant_serves_at_least_one_catalog() {
        let spec = TenantSpec::new("Demo", vec![], AuthMode::ApiKey);
        assert!(
            matches!(spec.validate(), Err(TenantError::Invalid(m)) if m.starts_with("catalogs"))
        );
    }

    #[test]
    fn a_rate_limit_must_let_something_through() {
        let mut spec = TenantSpec::new("Demo", vec!["examples".into()], AuthMode::ApiKey);
        for (per_second, burst) in [(0.0, 1), (f64::NAN, 1), (1.0, 0), (2e6, 1)] {
            spec.rate_limits.tenant = Some(RateLimit { per_second, burst });
            assert!(spec.validate().is_err(), "{per_second} {burst}");
        }
        spec.rate_limits.tenant = Some(RateLimit {
            per_second: 0.5,
            burst: 1,
        });
        assert_eq!(spec.validate(), Ok(()));
    }

    #[test]
    fn a_memory_budget_is_1_byte_to_1_pib() {
        let mut spec = TenantSpec::new("T", vec!["examples".into()], AuthMode::Anonymous);
        spec.memory_budget_bytes = Some(0);
        assert!(spec.validate().is_err());
        spec.memory_budget_bytes = Some(bounds::MAX_MEMORY_BUDGET_BYTES + 1);
        assert!(spec.validate().is_err());
        spec.memory_budget_bytes = Some(64 << 20);
        assert_eq!(spec.validate(), Ok(()));
    }

    #[test]
    fn too_many_names_are_invalid() {
        let names = Names {
            tools: (0..=bounds::NAMES).map(|i| format!("t{i}")).collect(),
            ..Names::default()
        };
        assert!(validate_names("disabled", &names).is_err());
    }

    #[test]
    fn a_ttl_beyond_a_day_is_invalid() {
        let mut spec = TenantSpec::new("Demo", vec!["examples".into()], AuthMode::ApiKey);
        spec.state_ttl_secs = Some(bounds::MAX_STATE_TTL_SECS + 1);
        assert!(spec.validate().is_err());
        spec.state_ttl_secs = Some(0);
        assert!(spec.validate().is_err());
    }
}
