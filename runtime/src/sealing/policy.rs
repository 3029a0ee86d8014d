//! Sealing and opening `requestState` under a tenant's ring: limits, expiry and clock skew.
//!
//! [`open`] runs on attacker-controlled input, so its checks go cheapest first:
//! 1. **Size, before anything else.** A multi-megabyte token costs nothing to refuse by
//!    length, and base64-decoding or hashing it first would hand the client a lever on our CPU
//!    and memory.
//! 2. Format and kid (no crypto yet), then one AES-GCM open, whose tag covers the ciphertext
//!    and the whole binding.
//! 3. Only authenticated bytes are decoded as claims, then the timestamps are checked.
//!
//! Every failure is an [`OpenError`] reason for the log; the client always gets the same
//! fixed error, built by the caller.
//!
//! State is re-sealed every round with a fresh `iat`/`exp`, so the TTL bounds the client's
//! think time per round, not the whole flow. The clock is passed in (`now`), never read here.

use std::time::{Duration, SystemTime};

use super::binding::{associated_data, Binding};
use super::claims::{self, unix_secs, Claims, Header, HEADER_LEN};
use super::codec::{open_bytes, seal_bytes, split_token, token_len};
use super::error::{OpenError, SealError};
use super::keyring::KeyRing;

/// How long state lives and how large it may be.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SealPolicy {
    /// How long a sealed state opens after it is issued. Default 300 s.
    pub ttl: Duration,
    /// How far apart the clocks of the sealing and the opening worker may be. Default 30 s.
    pub clock_skew: Duration,
    /// The longest token `open` will look at, and `seal` will produce. Default 65536.
    pub max_token_bytes: usize,
    /// The largest handler state `seal` accepts, counted together with the answer schemas
    /// sealed beside it (the compiled requested schemas of the round's form elicitations,
    /// usually a few dozen bytes). Default 32768: its token (about 4/3 of the state and the
    /// schemas, plus 60 bytes, 5 more with schemas) stays well inside the default token cap,
    /// whatever the state's bytes are.
    pub max_state_bytes: usize,
}

impl Default for SealPolicy {
    fn default() -> Self {
        SealPolicy {
            ttl: Duration::from_secs(300),
            clock_skew: Duration::from_secs(30),
            max_token_bytes: 65_536,
            max_state_bytes: 32_768,
        }
    }
}

/// What a token carries besides its times.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Payload<'a> {
    /// The input-required round the state belongs to.
    pub round: u32,
    /// The handler's own state.
    pub state: Option<&'a str>,
    /// The runtime's compiled requested schemas for the retry's answers; empty for none.
    /// Opaque here.
    pub answer_schemas: &'a [u8],
}

/// Seals `payload` under the ring's active key, bound to `binding`, issued at `now` and
/// expiring `policy.ttl` later.
///
/// # Errors
///
/// [`SealError::StateTooLarge`] if the state and the answer schemas together exceed
/// `max_state_bytes`; [`SealError::TokenTooLarge`] if the token would exceed
/// `max_token_bytes`, which only a `max_state_bytes` near `max_token_bytes` allows. The other
/// variant cannot happen with sane limits.
pub fn seal(
    ring: &KeyRing,
    policy: &SealPolicy,
    binding: &Binding<'_>,
    payload: &Payload<'_>,
    now: SystemTime,
) -> Result<String, SealError> {
    let state = payload.state.map_or(&[][..], str::as_bytes);
    let schemas = payload.answer_schemas;
    let counted = state.len() + schemas.len();
    if counted > policy.max_state_bytes {
        return Err(SealError::StateTooLarge {
            len: counted,
            max: policy.max_state_bytes,
        });
    }
    let schemas_len = u32::try_from(schemas.len()).map_err(|_| SealError::StateTooLarge {
        len: counted,
        max: policy.max_state_bytes,
    })?;
    let key = ring.active();
    let iat = unix_secs(now);
    let exp = iat.saturating_add(policy.ttl.as_secs());
    let header = Header {
        iat,
        exp,
        round: payload.round,
        has_state: payload.state.is_some(),
        has_answer_schemas: !schemas.is_empty(),
    }
    .encode();
    let schemas_len = schemas_len.to_be_bytes();
    let schemas_len: &[u8] = if schemas.is_empty() {
        &[]
    } else {
        &schemas_len
    };

    let len = token_len(key.kid().len(), HEADER_LEN + schemas_len.len() + counted);
    if len > policy.max_token_bytes {
        return Err(SealError::TokenTooLarge {
            len,
            max: policy.max_token_bytes,
        });
    }
    let aad = associated_data(key.kid(), binding);
    seal_bytes(key, &aad, &[&header, schemas_len, schemas, state]).map_err(|_| SealError::Encrypt)
}

/// Opens a `requestState` token presented with the request described by `binding`.
///
/// # Errors
///
/// The first check that fails, in this order ([`OpenError`]; log it, never send it):
/// 1. longer than `max_token_bytes` ⇒ `Oversize`, before any decoding;
/// 2. empty, or not `v2.<kid>.<canonical base64url>` ⇒ `Malformed`;
/// 3. kid not in the ring ⇒ `UnknownKey`;
/// 4. AES-GCM failure: tampered, truncated, or any binding mismatch ⇒ `Rejected`;
/// 5. claims not our frame ⇒ `Malformed`;
/// 6. `iat` after `now + clock_skew` ⇒ `FromTheFuture`;
/// 7. `now` after `exp + clock_skew` ⇒ `Expired`.
pub fn open(
    ring: &KeyRing,
    policy: &SealPolicy,
    binding: &Binding<'_>,
    token: &str,
    now: SystemTime,
) -> Result<Claims, OpenError> {
    if token.len() > policy.max_token_bytes {
        return Err(OpenError::Oversize);
    }
    if token.is_empty() {
        return Err(OpenError::Malformed);
    }
    let (kid, blob) = split_token(token)?;
    let key = ring.find(kid).ok_or(OpenError::UnknownKey)?;
    let plaintext = open_bytes(key, &associated_data(kid, binding), blob)?;
    let claims = claims::decode(plaintext).map_err(|_| OpenError::Malformed)?;

    let now = unix_secs(now);
    let skew = policy.clock_skew.as_secs();
    if claims.iat > now.saturating_add(skew) {
        return Err(OpenError::FromTheFuture);
    }
    if now > claims.exp.saturating_add(skew) {
        return Err(OpenError::Expired);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sealing::binding::args_digest;
    use crate::sealing::codec::StateKey;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use serde_json::json;
    use std::time::UNIX_EPOCH;

    const T0: u64 = 1_800_000_000;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn ring() -> KeyRing {
        KeyRing::new(StateKey::generate())
    }

    fn bind() -> Binding<'static> {
        Binding {
            tenant: "acme",
            principal: "key_123",
            method: "tools/call",
            target: "book_flight",
            args_digest: args_digest(Some(&json!({"to": "LIS", "seats": 2}))),
        }
    }

    fn payload(round: u32, state: Option<&str>) -> Payload<'_> {
        Payload {
            round,
            state,
            answer_schemas: &[],
        }
    }

    fn sealed(ring: &KeyRing, state: &str) -> String {
        seal(
            ring,
            &SealPolicy::default(),
            &bind(),
            &payload(1, Some(state)),
            at(T0),
        )
        .unwrap()
    }

    fn open_now(ring: &KeyRing, b: &Binding<'_>, token: &str) -> Result<Claims, OpenError> {
        open(ring, &SealPolicy::default(), b, token, at(T0))
    }

    #[test]
    fn sealed_state_opens_with_its_claims() {
        let ring = ring();
        let token = sealed(&ring, "{\"step\":2}");
        assert!(token.starts_with(&format!("v2.{}.", ring.active().kid())));
        let claims = open_now(&ring, &bind(), &token).unwrap();
        assert_eq!(
            claims,
            Claims {
                iat: T0,
                exp: T0 + 300,
                round: 1,
                state: Some("{\"step\":2}".to_owned()),
                answer_schemas: Vec::new(),
            }
        );
    }

    #[test]
    fn answer_schemas_open_beside_the_state_they_were_sealed_with() {
        let ring = ring();
        let p = SealPolicy::default();
        for state in [Some("{}"), None] {
            let payload = Payload {
                round: 2,
                state,
                answer_schemas: b"\x04user\x06\x09\x04name",
            };
            let token = seal(&ring, &p, &bind(), &payload, at(T0)).unwrap();
            let claims = open_now(&ring, &bind(), &token).unwrap();
            assert_eq!(claims.answer_schemas, payload.answer_schemas);
            assert_eq!(claims.state.as_deref(), state);
        }
    }

    #[test]
    fn answer_schemas_count_toward_max_state_bytes() {
        let p = SealPolicy {
            max_state_bytes: 10,
            ..SealPolicy::default()
        };
        let payload = |state| Payload {
            round: 1,
            state: Some(state),
            answer_schemas: b"12345",
        };
        let got = seal(&ring(), &p, &bind(), &payload("123456"), at(T0));
        assert!(matches!(
            got,
            Err(SealError::StateTooLarge { len: 11, max: 10 })
        ));
        assert!(seal(&ring(), &p, &bind(), &payload("12345"), at(T0)).is_ok());
    }

    #[test]
    fn absent_state_round_trips_as_none() {
        let ring = ring();
        let token = seal(
            &ring,
            &SealPolicy::default(),
            &bind(),
            &payload(4, None),
            at(T0),
        )
        .unwrap();
        let claims = open_now(&ring, &bind(), &token).unwrap();
        assert_eq!((claims.round, claims.state), (4, None));
    }

    #[test]
    fn a_tampered_byte_anywhere_in_the_blob_is_rejected() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let (head, encoded) = token.rsplit_once('.').unwrap();
        let blob = URL_SAFE_NO_PAD.decode(encoded).unwrap();
        for i in 0..blob.len() {
            let mut bad = blob.clone();
            bad[i] = bad[i].wrapping_add(1);
            let forged = format!("{head}.{}", URL_SAFE_NO_PAD.encode(&bad));
            assert_eq!(
                open_now(&ring, &bind(), &forged),
                Err(OpenError::Rejected),
                "byte {i}"
            );
        }
    }

    #[test]
    fn a_truncated_token_is_rejected_or_malformed() {
        let ring = ring();
        let token = sealed(&ring, "state");
        for cut in 1..token.len() {
            let short = &token[..token.len() - cut];
            let got = open_now(&ring, &bind(), short);
            assert!(
                matches!(
                    got,
                    Err(OpenError::Rejected | OpenError::Malformed | OpenError::UnknownKey)
                ),
                "cut {cut}: {got:?}"
            );
        }
        let (head, encoded) = token.rsplit_once('.').unwrap();
        let blob = URL_SAFE_NO_PAD.decode(encoded).unwrap();
        let one_short = format!("{head}.{}", URL_SAFE_NO_PAD.encode(&blob[..blob.len() - 1]));
        assert_eq!(
            open_now(&ring, &bind(), &one_short),
            Err(OpenError::Rejected)
        );
    }

    #[test]
    fn state_sealed_for_one_request_is_rejected_on_any_other() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let b = bind();
        let others = [
            Binding {
                tenant: "other",
                ..b
            },
            Binding {
                principal: "key_456",
                ..b
            },
            Binding {
                method: "prompts/get",
                ..b
            },
            Binding {
                target: "cancel_flight",
                ..b
            },
            Binding {
                args_digest: args_digest(Some(&json!({"to": "LIS", "seats": 3}))),
                ..b
            },
            Binding {
                args_digest: args_digest(None),
                ..b
            },
        ];
        for other in others {
            assert_eq!(
                open_now(&ring, &other, &token),
                Err(OpenError::Rejected),
                "{other:?}"
            );
        }
    }

    #[test]
    fn argument_key_order_does_not_break_the_binding() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let reordered: serde_json::Value =
            serde_json::from_str(r#"{"seats":2,"to":"LIS"}"#).unwrap();
        let b = Binding {
            args_digest: args_digest(Some(&reordered)),
            ..bind()
        };
        assert!(open_now(&ring, &b, &token).is_ok());
    }

    #[test]
    fn expired_state_is_refused_but_opens_within_the_skew() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let p = SealPolicy::default();
        let last_ok = T0 + 300 + 30;
        assert!(open(&ring, &p, &bind(), &token, at(last_ok)).is_ok());
        assert_eq!(
            open(&ring, &p, &bind(), &token, at(last_ok + 1)),
            Err(OpenError::Expired)
        );
        assert_eq!(
            open(&ring, &p, &bind(), &token, at(T0 + 86_400)),
            Err(OpenError::Expired)
        );
    }

    #[test]
    fn state_issued_beyond_the_skew_in_the_future_is_refused() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let p = SealPolicy::default();
        assert!(open(&ring, &p, &bind(), &token, at(T0 - 30)).is_ok());
        assert_eq!(
            open(&ring, &p, &bind(), &token, at(T0 - 31)),
            Err(OpenError::FromTheFuture)
        );
    }

    #[test]
    fn a_kid_the_ring_does_not_hold_is_unknown_key() {
        let token = sealed(&ring(), "state");
        assert_eq!(
            open_now(&ring(), &bind(), &token),
            Err(OpenError::UnknownKey)
        );
    }

    #[test]
    fn an_oversize_token_is_refused_without_decoding() {
        let p = SealPolicy::default();
        // Garbage that would be Malformed if it were ever parsed.
        let garbage = "!".repeat(p.max_token_bytes + 1);
        assert_eq!(
            open_now(&ring(), &bind(), &garbage),
            Err(OpenError::Oversize)
        );
        let at_cap = "!".repeat(p.max_token_bytes);
        assert_eq!(
            open_now(&ring(), &bind(), &at_cap),
            Err(OpenError::Malformed)
        );
    }

    #[test]
    fn an_empty_token_is_malformed() {
        assert_eq!(open_now(&ring(), &bind(), ""), Err(OpenError::Malformed));
    }

    #[test]
    fn padded_or_non_canonical_base64_is_malformed() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let (head, encoded) = token.rsplit_once('.').unwrap();
        let blob = URL_SAFE_NO_PAD.decode(encoded).unwrap();
        let padded = format!(
            "{head}.{}",
            base64::engine::general_purpose::URL_SAFE.encode(&blob)
        );
        let standard = format!(
            "{head}.{}",
            base64::engine::general_purpose::STANDARD_NO_PAD.encode(&blob)
        );
        for bad in [padded, standard, format!("{token}="), format!(" {token}")] {
            if bad != token {
                assert_eq!(
                    open_now(&ring, &bind(), &bad),
                    Err(OpenError::Malformed),
                    "{bad}"
                );
            }
        }
    }

    #[test]
    fn a_tampered_suffix_on_a_valid_token_is_refused() {
        let ring = ring();
        let token = sealed(&ring, "state");
        let got = open_now(&ring, &bind(), &format!("{token}-TAMPERED"));
        assert!(
            matches!(got, Err(OpenError::Rejected | OpenError::Malformed)),
            "{got:?}"
        );
    }

    #[test]
    fn state_sealed_under_the_old_key_opens_after_rotation_until_pruned() {
        let ring = ring();
        let old_kid = ring.active().kid().to_owned();
        let old_token = sealed(&ring, "state");

        let rotated = ring.rotated(StateKey::generate(), T0 + 330);
        assert!(open_now(&rotated, &bind(), &old_token).is_ok());

        let new_token = sealed(&rotated, "state");
        assert!(new_token.starts_with(&format!("v2.{}.", rotated.active().kid())));
        assert_ne!(rotated.active().kid(), old_kid);

        let pruned = rotated.pruned(T0 + 331);
        assert_eq!(
            open_now(&pruned, &bind(), &old_token),
            Err(OpenError::UnknownKey)
        );
        assert!(open_now(&pruned, &bind(), &new_token).is_ok());
    }

    #[test]
    fn seal_refuses_state_larger_than_max_state_bytes() {
        let p = SealPolicy {
            max_state_bytes: 10,
            ..SealPolicy::default()
        };
        let got = seal(
            &ring(),
            &p,
            &bind(),
            &payload(1, Some("12345678901")),
            at(T0),
        );
        assert!(matches!(
            got,
            Err(SealError::StateTooLarge { len: 11, max: 10 })
        ));
        assert!(seal(
            &ring(),
            &p,
            &bind(),
            &payload(1, Some("1234567890")),
            at(T0)
        )
        .is_ok());
    }

    #[test]
    fn seal_refuses_a_token_that_open_would_refuse_as_oversize() {
        // A state cap as large as the token cap lets a state in that base64 then outgrows.
        let p = SealPolicy {
            max_state_bytes: 65_536,
            ..SealPolicy::default()
        };
        let state = "x".repeat(60_000);
        let got = seal(&ring(), &p, &bind(), &payload(1, Some(&state)), at(T0));
        assert!(matches!(
            got,
            Err(SealError::TokenTooLarge { max: 65_536, .. })
        ));
    }

    #[test]
    fn a_state_at_the_default_cap_seals_and_opens_whatever_its_bytes() {
        // Control characters, quotes and multi-byte text cost no escaping in the frame.
        let ring = ring();
        let p = SealPolicy::default();
        for unit in ["\u{1}", "\"", "é", "😀"] {
            let state = unit.repeat(p.max_state_bytes / unit.len());
            let token = seal(&ring, &p, &bind(), &payload(1, Some(&state)), at(T0)).unwrap();
            let claims = open_now(&ring, &bind(), &token).unwrap();
            assert_eq!(claims.state.as_deref(), Some(state.as_str()), "{unit:?}");
        }
    }

    #[test]
    fn a_token_at_exactly_max_token_bytes_seals_and_opens() {
        let ring = ring();
        let p = SealPolicy::default();
        let empty_len = sealed(&ring, "").len();
        // Grow the state until the token is as long as allowed, without going over.
        let kid_len = ring.active().kid().len();
        let fits = |n: usize| token_len(kid_len, HEADER_LEN + n) <= p.max_token_bytes;
        let mut n = (p.max_token_bytes - empty_len) * 3 / 4 - 4;
        assert!(fits(n));
        while fits(n + 1) {
            n += 1;
        }
        // The state cap is lifted here: this test is about the token cap alone.
        let p = SealPolicy {
            max_state_bytes: usize::MAX,
            ..p
        };
        let token = seal(
            &ring,
            &p,
            &bind(),
            &payload(1, Some(&"x".repeat(n))),
            at(T0),
        )
        .unwrap();
        assert!(token.len() <= p.max_token_bytes);
        assert!(open_now(&ring, &bind(), &token).is_ok());
    }
}
