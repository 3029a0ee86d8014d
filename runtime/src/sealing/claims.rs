//! The sealed plaintext: when the state was issued, when it lapses, which round it belongs
//! to, the requested schemas the retry's answers will be checked against, and the handler's
//! own state.
//!
//! A fixed binary frame, because the token travels in every retry and is opened on every
//! one: `iat` (u64), `exp` (u64) and the round (u32), all big-endian, then a flag byte, then
//! what the flags say follows:
//! - bit 1 ([`ANSWER_SCHEMAS`]): the answer schemas, as a u32 big-endian length and that many
//!   bytes. They are opaque here: the dispatcher writes and reads them (the compiled
//!   `requestedSchema` of each form elicitation the round asked, by input key).
//! - bit 0 ([`STATE`]): the handler's state, to the end of the frame, its UTF-8 bytes as they
//!   are.
//!
//! No escaping, so the plaintext is the state plus the schemas plus [`HEADER_LEN`] bytes (and 4
//! for the schemas' length), whatever the state holds; decoding is bounds checks and a UTF-8
//! check, with no copy of the state.
//!
//! Frames with flags 0 and 1 are the frames written before the schemas existed, read as they
//! always were, so the tokens in flight across the upgrade keep opening and the token version
//! stays `v2`. A server that predates the schemas refuses a frame with bit 1 set as malformed.
//!
//! The binding (tenant, principal, request) is deliberately *not* here: it is in the
//! associated data (see `binding`), recomputed by the server and never carried. Only our own
//! code writes these bytes, and only authenticated bytes are decoded; a change of layout
//! bumps the token version (see `codec`).

use std::time::{SystemTime, UNIX_EPOCH};

/// The fixed bytes in front of everything else: `iat`, `exp`, round and the flags.
pub(crate) const HEADER_LEN: usize = 8 + 8 + 4 + 1;
/// The flag saying the handler's state follows (at the end of the frame).
pub(crate) const STATE: u8 = 1;
/// The flag saying answer schemas follow the header, behind their u32 length.
pub(crate) const ANSWER_SCHEMAS: u8 = 2;
/// The bytes of the answer schemas' length.
pub(crate) const SCHEMAS_LEN_LEN: usize = 4;

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
    /// The answer schemas the runtime sealed with the state, as it wrote them (empty if none).
    pub answer_schemas: Vec<u8>,
}

/// The fixed part of the plaintext; the schemas' and the state's bytes follow it unchanged,
/// so sealing never copies them into a plaintext buffer of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) iat: u64,
    pub(crate) exp: u64,
    pub(crate) round: u32,
    pub(crate) has_state: bool,
    pub(crate) has_answer_schemas: bool,
}

impl Header {
    /// The header's bytes, in frame order.
    pub(crate) fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..8].copy_from_slice(&self.iat.to_be_bytes());
        out[8..16].copy_from_slice(&self.exp.to_be_bytes());
        out[16..20].copy_from_slice(&self.round.to_be_bytes());
        out[20] = if self.has_state { STATE } else { 0 }
            | if self.has_answer_schemas {
                ANSWER_SCHEMAS
            } else {
                0
            };
        out
    }
}

/// Why an opened plaintext is not a frame we wrote. Authenticated bytes should never fail;
/// if one does, the token is refused as malformed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum DecodeError {
    #[error("plaintext is shorter than the claims header")]
    Short,
    #[error("unknown flag, or bytes follow a frame without state")]
    BadFlag,
    #[error("the answer schemas' length runs past the end of the plaintext")]
    BadSchemasLength,
    #[error("state is not UTF-8")]
    NotUtf8,
}

/// Decodes an opened plaintext, taking its buffer so the state is not copied (the schemas,
/// a few dozen bytes, are; when no state follows they keep the buffer instead).
pub(crate) fn decode(mut plaintext: Vec<u8>) -> Result<Claims, DecodeError> {
    if plaintext.len() < HEADER_LEN {
        return Err(DecodeError::Short);
    }
    let iat = u64::from_be_bytes(bytes_at(&plaintext, 0));
    let exp = u64::from_be_bytes(bytes_at(&plaintext, 8));
    let round = u32::from_be_bytes(bytes_at(&plaintext, 16));
    let flags = plaintext[20];
    if flags & !(STATE | ANSWER_SCHEMAS) != 0 {
        return Err(DecodeError::BadFlag);
    }
    let mut schemas = HEADER_LEN..HEADER_LEN;
    if flags & ANSWER_SCHEMAS != 0 {
        let start = HEADER_LEN + SCHEMAS_LEN_LEN;
        if plaintext.len() < start {
            return Err(DecodeError::BadSchemasLength);
        }
        let len = u32::from_be_bytes(bytes_at(&plaintext, HEADER_LEN)) as usize;
        let end = start.saturating_add(len);
        if end > plaintext.len() {
            return Err(DecodeError::BadSchemasLength);
        }
        schemas = start..end;
    }
    let (state, answer_schemas) = if flags & STATE != 0 {
        let answer_schemas = plaintext[schemas.clone()].to_vec();
        plaintext.drain(..schemas.end);
        let state = String::from_utf8(plaintext).map_err(|_| DecodeError::NotUtf8)?;
        (Some(state), answer_schemas)
    } else if schemas.end == plaintext.len() {
        plaintext.drain(..schemas.start);
        (None, plaintext)
    } else {
        return Err(DecodeError::BadFlag);
    };
    Ok(Claims {
        iat,
        exp,
        round,
        state,
        answer_schemas,
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
        has_answer_schemas: false,
    };

    /// A frame with answer schemas: the header, their length, them, then the state.
    fn frame_with_schemas(has_state: bool, schemas: &[u8], state: &[u8]) -> Vec<u8> {
        let header = Header {
            has_state,
            has_answer_schemas: true,
            ..HEADER
        };
        let mut bytes = header.encode().to_vec();
        bytes.extend_from_slice(&(schemas.len() as u32).to_be_bytes());
        bytes.extend_from_slice(schemas);
        bytes.extend_from_slice(state);
        bytes
    }

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
                state: Some(state.to_owned()),
                answer_schemas: Vec::new(),
            }
        );
    }

    #[test]
    fn the_answer_schemas_flag_is_bit_1_beside_the_state_flag() {
        let both = Header {
            has_answer_schemas: true,
            ..HEADER
        };
        assert_eq!(both.encode()[20], 3);
        let schemas_only = Header {
            has_state: false,
            ..both
        };
        assert_eq!(schemas_only.encode()[20], 2);
    }

    #[test]
    fn answer_schemas_decode_apart_from_the_state_that_follows_them() {
        let claims = decode(frame_with_schemas(true, b"\x01ab", b"state")).unwrap();
        assert_eq!(claims.answer_schemas, b"\x01ab");
        assert_eq!(claims.state.as_deref(), Some("state"));
        let claims = decode(frame_with_schemas(false, b"\x01ab", b"")).unwrap();
        assert_eq!(claims.answer_schemas, b"\x01ab");
        assert_eq!(claims.state, None);
    }

    #[test]
    fn a_frame_without_the_schemas_flag_has_no_answer_schemas() {
        assert!(decode(frame(HEADER, b"{}"))
            .unwrap()
            .answer_schemas
            .is_empty());
    }

    #[test]
    fn answer_schemas_longer_than_the_plaintext_do_not_decode() {
        let mut bytes = frame_with_schemas(false, b"abc", b"");
        bytes.pop();
        assert_eq!(decode(bytes), Err(DecodeError::BadSchemasLength));
        let header_only = Header {
            has_answer_schemas: true,
            ..HEADER
        };
        assert_eq!(
            decode(header_only.encode().to_vec()),
            Err(DecodeError::BadSchemasLength)
        );
    }

    #[test]
    fn bytes_after_the_schemas_of_a_frame_without_state_do_not_decode() {
        assert_eq!(
            decode(frame_with_schemas(false, b"abc", b"x")),
            Err(DecodeError::BadFlag)
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
        bad_flag[20] = 4;
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
