//! Protocol versions and the era they belong to. Versions are compared here and nowhere else.

use serde::de::value::MapAccessDeserializer;
use serde::de::{MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

use super::other_json::other_json_is;

/// Every protocol revision Roundtrip knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProtocolVersion {
    /// `2026-07-28`: modern, stateless.
    V2026_07_28,
    /// `2025-11-25`: legacy; what an `initialize` asking for anything unknown gets.
    V2025_11_25,
    /// `2025-06-18`: legacy.
    V2025_06_18,
    /// `2025-03-26`: legacy, the oldest served (the first with Streamable HTTP).
    V2025_03_26,
}

/// Modern revisions carry version and capabilities on every request; legacy ones set up a
/// session with `initialize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// Stateless: every request carries its `_meta` envelope; results carry `resultType`.
    Modern,
    /// Sessions begun by `initialize`; results carry no `resultType`.
    Legacy,
}

impl ProtocolVersion {
    /// The modern versions served statelessly, newest first: what `server/discover` and
    /// `-32022` advertise.
    pub const MODERN: &'static [ProtocolVersion] = &[ProtocolVersion::V2026_07_28];
    /// [`ProtocolVersion::MODERN`] as wire strings, as `server/discover` and error `data` list
    /// them.
    pub const MODERN_STRS: &'static [&'static str] = &["2026-07-28"];
    /// The legacy versions an `initialize` may negotiate, newest first.
    pub const LEGACY: &'static [ProtocolVersion] = &[
        ProtocolVersion::V2025_11_25,
        ProtocolVersion::V2025_06_18,
        ProtocolVersion::V2025_03_26,
    ];

    /// The version an `initialize` asking for `requested` gets: the same one when it is a
    /// legacy version served here, otherwise the newest legacy version (the client then
    /// decides whether it can speak it). A modern version is never reached by `initialize`.
    pub fn negotiate_legacy(requested: &str) -> ProtocolVersion {
        Self::parse(requested)
            .filter(|v| v.era() == Era::Legacy)
            .unwrap_or(ProtocolVersion::V2025_11_25)
    }

    /// The version whose wire string is `s`; `None` for one not known here.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "2026-07-28" => Self::V2026_07_28,
            "2025-11-25" => Self::V2025_11_25,
            "2025-06-18" => Self::V2025_06_18,
            "2025-03-26" => Self::V2025_03_26,
            _ => return None,
        })
    }

    /// The wire string, e.g. `2026-07-28`.
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
}

/// A `_meta` protocol version as the request parse reads it: a version known here, held as
/// such (no key or string is allocated for it), or any other value, kept as the JSON it is
/// for the envelope check to judge.
pub(crate) struct ParsedVersion(pub(crate) Result<ProtocolVersion, Value>);

impl ParsedVersion {
    fn json(value: Value) -> ParsedVersion {
        ParsedVersion(Err(value))
    }
}

impl<'de> Deserialize<'de> for ParsedVersion {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ParsedVersionVisitor)
    }
}

struct ParsedVersionVisitor;

impl<'de> Visitor<'de> for ParsedVersionVisitor {
    type Value = ParsedVersion;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a protocol version")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ParsedVersion, E> {
        Ok(ParsedVersion(
            ProtocolVersion::parse(v).ok_or_else(|| Value::from(v)),
        ))
    }

    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<ParsedVersion, E> {
        Ok(ParsedVersion(
            ProtocolVersion::parse(&v).ok_or(Value::String(v)),
        ))
    }

    other_json_is!(ParsedVersion::json, but strings);

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ParsedVersion, A::Error> {
        let value = Value::deserialize(MapAccessDeserializer::new(map))?;
        Ok(ParsedVersion::json(value))
    }
}
