//! Protocol versions and the era each belongs to. Versions are compared here and nowhere else.

use std::fmt;

/// Every protocol revision this client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// 2026-07-28: stateless, `_meta` on every request, multi round-trip results.
    V2026_07_28,
    /// 2025-11-25: `initialize` sessions, server-to-client requests.
    V2025_11_25,
    /// 2025-06-18.
    V2025_06_18,
    /// 2025-03-26.
    V2025_03_26,
}

/// Modern revisions carry version and capabilities on every request; legacy ones set up a
/// session with `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Era {
    /// 2026-07-28 and later.
    Modern,
    /// 2025-11-25 and earlier.
    Legacy,
}

/// How the client picks the era of a server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EraChoice {
    /// Probe `server/discover`, fall back to `initialize` (protocol §4.5); cached per
    /// endpoint for the process.
    #[default]
    Auto,
    /// Speak 2026-07-28 without probing.
    Modern,
    /// Begin with `initialize` without probing.
    Legacy,
}

impl ProtocolVersion {
    /// The modern versions, newest first: what a probe and `_meta` offer.
    pub const MODERN: &'static [ProtocolVersion] = &[ProtocolVersion::V2026_07_28];
    /// The legacy versions `initialize` accepts, newest first (the first is the one asked for).
    pub const LEGACY: &'static [ProtocolVersion] = &[
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
    ];

    /// The version `s` names, if this client speaks it.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "2026-07-28" => Self::V2026_07_28,
            "2025-11-25" => Self::V2025_11_25,
            "2025-06-18" => Self::V2025_06_18,
            "2025-03-26" => Self::V2025_03_26,
            _ => return None,
        })
    }

    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::V2026_07_28 => "2026-07-28",
            Self::V2025_11_25 => "2025-11-25",
            Self::V2025_06_18 => "2025-06-18",
            Self::V2025_03_26 => "2025-03-26",
        }
    }

    /// The era the version belongs to.
    pub fn era(self) -> Era {
        match self {
            Self::V2026_07_28 => Era::Modern,
            _ => Era::Legacy,
        }
    }

    /// The newest modern version of ours that `offered` lists.
    pub fn shared_modern<'a>(offered: impl IntoIterator<Item = &'a str>) -> Option<Self> {
        let offered: Vec<&str> = offered.into_iter().collect();
        Self::MODERN
            .iter()
            .copied()
            .find(|v| offered.contains(&v.as_str()))
    }
}

impl fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_modern_version_is_found_among_others() {
        assert_eq!(
            ProtocolVersion::shared_modern(["2099-01-01", "2026-07-28"]),
            Some(ProtocolVersion::V2026_07_28)
        );
    }

    #[test]
    fn legacy_versions_are_not_shared_modern_versions() {
        assert_eq!(ProtocolVersion::shared_modern(["2025-11-25"]), None);
        assert_eq!(ProtocolVersion::V2025_06_18.era(), Era::Legacy);
    }
}
