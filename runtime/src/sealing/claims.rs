//! The sealed plaintext: when the state was issued, when it lapses, which round it belongs
//! to, and the handler's own state.
//!
//! A fixed binary frame, because the token travels in every retry and is opened on every
//! one: `iat` (u64), `exp` (u64) and the round (u32), all big-endian, a flag byte saying
//! whether a state follows (1) or not (0), then the state's UTF-8 bytes as they are. No
//! escaping, so the plaintext is the state plus [`HEADER_LEN`] bytes, whatever the state
//! holds, and decoding is a bounds check and a UTF-8 check, with no copy of the state.
//!
//! The binding (tenant, principal, request) is deliberately *not* here: it is in the
//! associated data (see `binding`), recomputed by the server and never carried. Only our own
//! code writes these bytes, and only authenticated bytes are decoded; a change of layout
//! bumps the token version (see `codec`).

use std::time::{SystemTime, UNIX_EPOCH};

/// The bytes in front of the state: `iat`, `exp`, round and the state flag.
pub(crate) const HEADER_LEN: usize = 8 + 8 + 4 + 1;

/// What a `requestState` token carries, once opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// Issued at, unix seconds.
    pub iat: u64,
    /// Expires at, unix seconds.
    pub exp: u64,
    /// The input-required round that produced this state (the runtime caps rounds with it).
    pub round: u32,
    /// The handler's own state, exactly as it wrote it.
    pub state: Option<String>,
}

/// The fixed part of the plaintext; the state's bytes follow it unchanged, so sealing never
/// copies the state into a plaintext buffer of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) iat: u64,
    pub(crate) exp: u64,
    pub(crate) round: u32,
    pub(crate) has_state: bool,
}

impl Header {
    /// The header's bytes, in frame order.
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(&self.iat.to_be_bytes());
        out[8..16].copy_from_slice(&self.exp.to_be_bytes());
        out[16..20].copy_from_slice(&self.round.to_be_bytes());
        out[20] = u8::from(self.has_state);
        out
    }
}

/// Why an opened plaintext is not a frame we wrote. Authenticated bytes should never fail;
/// if one does, the token is refused as malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("plaintext is shorter than the claims header")]
    Short,
    #[error("state flag is neither 0 nor 1, or bytes follow a frame without state")]
    BadFlag,
    #[error("state is not UTF-8")]
    NotUtf8,
}

/// Decodes an opened plaintext, taking its buffer so the state is not copied.
pub(crate) fn decode(mut plaintext: Vec<u8>) -> Result<Claims, DecodeError> {
    if plaintext.len() < HEADER_LEN {
        return Err(DecodeError::Short);
    }
    let iat = u64::from_be_bytes(bytes_at(&plaintext, 0));
    let exp = u64::from_be_bytes(bytes_at(&plaintext, 8));
    let round = u32::from_be_bytes(bytes_at(&plaintext, 16));
    let state = match plaintext[20] {
        0 if plaintext.len() == HEADER_LEN => None,
        1 => {
            plaintext.drain(..HEADER_LEN);
            Some(String::from_utf8(plaintext).map_err(|_| DecodeError::NotUtf8)?)
        }
        _ => return Err(DecodeError::BadFlag),
    };
    Ok(Claims {
        iat,
        exp,
        round,
        state,
    })
}

/// The `N` bytes of `bytes` from `at`; the caller has checked the length.
fn bytes_at<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0u8; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

/// Unix seconds for `t`; times before 1970 count as 0.
pub(crate) fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn frame(header: Header, state: &[u8]) -> Vec<u8> {
        let mut bytes = header.encode().to_vec();
        bytes.extend_from_slice(state);
        bytes
    }

    const HEADER: Header = Header {
        iat: 10,
        exp: 20,
        round: 3,
        has_state: true,
    };

    #[test]
    fn the_header_is_big_endian_times_round_and_a_state_flag() {
        let mut expected = vec![
            0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 3, 1,
        ];
        assert_eq!(HEADER.encode().to_vec(), expected);
        expected[20] = 0;
        let without = Header {
            has_state: false,
            ..HEADER
        };
        assert_eq!(without.encode().to_vec(), expected);
    }

    #[test]
    fn a_frame_decodes_to_the_same_values_with_the_state_unchanged() {
        let state = "a\"b\u{1}é😀";
        let claims = decode(frame(HEADER, state.as_bytes())).unwrap();
        assert_eq!(
            claims,
            Claims {
                iat: 10,
                exp: 20,
                round: 3,
                state: Some(state.to_owned())
            }
        );
    }

    #[test]
    fn no_state_and_an_empty_state_stay_distinct() {
        let without = Header {
            has_state: false,
            ..HEADER
        };
        assert_eq!(decode(frame(without, b"")).unwrap().state, None);
        assert_eq!(
            decode(frame(HEADER, b"")).unwrap().state,
            Some(String::new())
        );
    }

    #[test]
    fn a_plaintext_shorter_than_the_header_does_not_decode() {
        for len in [0, 1, HEADER_LEN - 1] {
            let bytes = HEADER.encode()[..len].to_vec();
            assert_eq!(decode(bytes), Err(DecodeError::Short), "{len}");
        }
    }

    #[test]
    fn an_unknown_flag_or_bytes_after_a_stateless_frame_do_not_decode() {
        let mut bad_flag = frame(HEADER, b"x");
        bad_flag[20] = 2;
        assert_eq!(decode(bad_flag), Err(DecodeError::BadFlag));
        let without = Header {
            has_state: false,
            ..HEADER
        };
        assert_eq!(decode(frame(without, b"x")), Err(DecodeError::BadFlag));
    }

    #[test]
    fn a_state_that_is_not_utf8_does_not_decode() {
        assert_eq!(decode(frame(HEADER, b"\xff")), Err(DecodeError::NotUtf8));
    }

    #[test]
    fn unix_secs_counts_from_the_epoch_and_clamps_before_it() {
        assert_eq!(unix_secs(UNIX_EPOCH + Duration::from_millis(5_999)), 5);
        assert_eq!(unix_secs(UNIX_EPOCH - Duration::from_secs(1)), 0);
    }
}
