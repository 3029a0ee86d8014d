//! The sealed plaintext: when the state was issued, when it lapses, which round it belongs
//! to, and the handler's own state.
//!
//! Compact JSON with short names (`iat`, `exp`, `r`, `s`) because the token travels in every
//! retry. The binding (tenant, principal, request) is deliberately *not* here: it is in the
//! associated data (see `binding`), recomputed by the server and never carried.
//!
//! Only our own code writes these bytes, and only authenticated bytes are parsed, so unknown
//! fields are ignored rather than refused; a change of meaning bumps the token version
//! instead.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

/// What a `requestState` token carries, once opened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    /// Issued at, unix seconds.
    pub iat: u64,
    /// Expires at, unix seconds.
    pub exp: u64,
    /// The input-required round that produced this state (the runtime caps rounds with it).
    #[serde(rename = "r")]
    pub round: u32,
    /// The handler's own state, exactly as it wrote it.
    #[serde(rename = "s", default, skip_serializing_if = "Option::is_none")]
    pub state: Option<String>,
}

/// The same shape as [`Claims`], borrowing the state so sealing never copies it.
#[derive(Serialize)]
struct ClaimsRef<'a> {
    iat: u64,
    exp: u64,
    r: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'a str>,
}

/// The plaintext for a token: compact JSON of the claims.
pub(crate) fn encode(
    iat: u64,
    exp: u64,
    round: u32,
    state: Option<&str>,
) -> Result<Vec<u8>, serde_json::Error> {
    serde_json::to_vec(&ClaimsRef {
        iat,
        exp,
        r: round,
        s: state,
    })
}

/// Parses an opened plaintext.
pub(crate) fn decode(plaintext: &[u8]) -> Result<Claims, serde_json::Error> {
    serde_json::from_slice(plaintext)
}

/// Unix seconds for `t`; times before 1970 count as 0.
pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // tests: a panic is the failure report
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn encoded_claims_are_compact_json_with_short_names() {
        let bytes = encode(10, 20, 3, Some("st")).unwrap();
        assert_eq!(bytes, br#"{"iat":10,"exp":20,"r":3,"s":"st"}"#);
        assert_eq!(
            encode(10, 20, 3, None).unwrap(),
            br#"{"iat":10,"exp":20,"r":3}"#
        );
    }

    #[test]
    fn encoded_claims_decode_to_the_same_values() {
        let bytes = encode(10, 20, 3, Some("a\"b")).unwrap();
        let claims = decode(&bytes).unwrap();
        assert_eq!(
            claims,
            Claims {
                iat: 10,
                exp: 20,
                round: 3,
                state: Some("a\"b".to_owned())
            }
        );
        assert_eq!(serde_json::to_vec(&claims).unwrap(), bytes);
        assert_eq!(decode(&encode(1, 2, 0, None).unwrap()).unwrap().state, None);
    }

    #[test]
    fn plaintext_that_is_not_our_json_does_not_decode() {
        for bad in [
            &b""[..],
            b"{}",
            b"null",
            br#"{"iat":"1","exp":2,"r":0}"#,
            b"\xff",
        ] {
            assert!(decode(bad).is_err());
        }
    }

    #[test]
    fn unix_secs_counts_from_the_epoch_and_clamps_before_it() {
        assert_eq!(unix_secs(UNIX_EPOCH + Duration::from_millis(5_999)), 5);
        assert_eq!(unix_secs(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }
}
