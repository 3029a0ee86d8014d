//! Opening and sealing `requestState` for one request: the dispatcher's bridge to the
//! sealing module. Two implementations, chosen by configuration: pass-through (the state is
//! the handler's string, untouched) and sealed (AES-256-GCM under the tenant's key ring).
//!
//! Every failure to open maps to the one fixed `-32602`; the reason is logged here and never
//! sent.

use std::rc::Rc;
use std::sync::Arc;
use std::time::SystemTime;

use actix::Recipient;

use crate::handler::TenantSettings;
use crate::protocol::{AnswerSchemas, ErrorCode, InputRequests, McpError};
use crate::sealing::{
    self, Binding, Claim, ClaimRefused, Claims, KeyRing, OpenError, Payload, Refresh,
    RefreshReason, ReplayCache, Rotate, SealError, SealPolicy,
};

/// Where a sealed request reaches the KeyManager, without waiting on it on the usual path: to
/// ask for a rotation once its key has sealed enough, or to reload a ring that lacks the kid
/// a token was sealed under (the one time a request waits on it). Made once per worker.
#[derive(Debug)]
pub(crate) struct KeyRequests {
    pub(crate) rotate: Recipient<Rotate>,
    pub(crate) refresh: Recipient<Refresh>,
}

/// How this request's state is protected.
#[derive(Debug, Clone)]
pub(crate) enum Protection {
    /// The state is the handler's string, untouched.
    PassThrough,
    /// AES-256-GCM under the tenant's ring.
    Sealed {
        policy: SealPolicy,
        ring: Arc<KeyRing>,
        /// Told when the ring's active key has sealed enough to be rotated, and asked for
        /// the ring again when it lacks a kid.
        keys: Rc<KeyRequests>,
    },
}

/// What a retry's state recovers: the handler's state, the round counter, and the schemas
/// the previous round's form elicitations asked with (empty when nothing is to be checked,
/// which is always so when the state passes through unsealed).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Opened {
    pub(crate) state: Option<String>,
    pub(crate) round: u32,
    pub(crate) answer_schemas: AnswerSchemas,
    /// The last unix second the token still opens (its expiry plus the clock skew); 0 when
    /// the state passes through unsealed.
    pub(crate) open_until: u64,
}

impl Protection {
    /// Sealing under a tenant's ring, with the tenant's own state lifetime if its settings
    /// give one.
    pub(crate) fn sealed(
        policy: &SealPolicy,
        settings: &TenantSettings,
        ring: Arc<KeyRing>,
        keys: Rc<KeyRequests>,
    ) -> Protection {
        let mut policy = policy.clone();
        if let Some(ttl) = settings.state_ttl {
            policy.ttl = ttl;
        }
        Protection::Sealed { policy, ring, keys }
    }

    /// Opens `token` for `binding`, as of `now` (the request's time). A token under a kid the
    /// held ring lacks (sealed by another worker just after a rotation this one has not heard
    /// of yet) has the KeyManager reload the ring once, and is opened with what it finds.
    pub(crate) async fn open(
        &self,
        binding: &Binding<'_>,
        token: &str,
        now: SystemTime,
    ) -> Result<Opened, McpError> {
        match self {
            Protection::PassThrough => Ok(Opened {
                state: Some(token.to_owned()),
                ..Opened::default()
            }),
            Protection::Sealed { policy, ring, keys } => {
                let opened = match sealing::open(ring, policy, binding, token, now) {
                    Err(OpenError::UnknownKey) => {
                        open_after_refresh(keys, policy, binding, token, now).await
                    }
                    opened => opened,
                };
                match opened {
                    Ok(claims) => Ok(Opened {
                        state: claims.state,
                        round: claims.round,
                        answer_schemas: AnswerSchemas::from_bytes(claims.answer_schemas),
                        open_until: claims.exp.saturating_add(policy.clock_skew.as_secs()),
                    }),
                    Err(reason) => {
                        tracing::warn!(%reason, tenant = binding.tenant, method = binding.method, "rejected requestState");
                        Err(McpError::invalid_request_state())
                    }
                }
            }
        }
    }

    /// The wire `requestState` for an input-required result asking `requests`, or `None`
    /// when there is nothing to send, issued at `now`. A sealed state
    /// also carries the schemas of `requests`' form elicitations, for checking the retry's
    /// answers; a pass-through state cannot.
    pub(crate) fn seal(
        &self,
        binding: &Binding<'_>,
        round: u32,
        state: Option<&str>,
        requests: &InputRequests,
        now: SystemTime,
    ) -> Result<Option<String>, McpError> {
        match self {
            Protection::PassThrough => Ok(state.map(str::to_owned)),
            Protection::Sealed { policy, ring, keys } => {
                let schemas = AnswerSchemas::of(requests);
                let payload = Payload {
                    round,
                    state,
                    answer_schemas: schemas.as_bytes(),
                };
                let sealed =
                    sealing::seal(ring, policy, binding, &payload, now).map_err(seal_error)?;
                if ring.needs_rotation() && ring.active().claim_rotation_request() {
                    // Random nonces are safe for a bounded number of seals per key: the first
                    // worker to see the limit asks once (and `if_kid` makes a late ask a
                    // no-op). The grace covers this tenant's own state lifetime.
                    keys.rotate.do_send(Rotate {
                        tenant: binding.tenant.to_owned(),
                        if_kid: Some(ring.active().kid().to_owned()),
                        grace: Some(policy.ttl + policy.clock_skew),
                    });
                }
                Ok(Some(sealed))
            }
        }
    }

    /// Claims the sealed state `token`, opened as `opened`, for one run of a single-use tool
    /// at `now`: `None` when the state passes through unsealed (nothing to hold the client to).
    /// A state that already completed a call, or is running now, is -32602; a full record
    /// is -31429, retried when its earliest entry expires.
    pub(crate) async fn claim<'a>(
        &self,
        replay: &'a dyn ReplayCache,
        token: &str,
        opened: &Opened,
        now: SystemTime,
    ) -> Result<Option<Claim<'a>>, McpError> {
        if !self.counts_rounds() {
            return Ok(None);
        }
        let now = sealing::unix_secs(now);
        match Claim::take(replay, token, opened.open_until, now).await {
            Ok(claim) => Ok(Some(claim)),
            Err(ClaimRefused::Replayed) => {
                tracing::warn!("refused a replayed single-use requestState");
                Err(McpError::invalid_params(REPLAYED_STATE))
            }
            Err(ClaimRefused::Full { retry_after }) => {
                tracing::warn!("the replay record is full: single-use state refused");
                Err(McpError::rate_limited(retry_after))
            }
            Err(ClaimRefused::Unavailable) => {
                tracing::warn!("the shared replay record is unreachable: single-use state refused");
                Err(replay_unavailable())
            }
        }
    }

    /// Sealed states carry a round counter; pass-through ones cannot.
    pub(crate) fn counts_rounds(&self) -> bool {
        matches!(self, Protection::Sealed { .. })
    }
}

/// Opens `token`, whose kid the held ring lacks, with the tenant's ring as the KeyManager
/// reloads it (at most once a second per tenant: a forged kid costs a message, not a read of
/// the share).
async fn open_after_refresh(
    keys: &KeyRequests,
    policy: &SealPolicy,
    binding: &Binding<'_>,
    token: &str,
    now: SystemTime,
) -> Result<Claims, OpenError> {
    let kid = sealing::kid_of(token).ok_or(OpenError::Malformed)?;
    let refreshed = keys
        .refresh
        .send(Refresh {
            tenant: binding.tenant.to_owned(),
            reason: RefreshReason::UnknownKid,
            kid: Some(kid.to_owned()),
        })
        .await;
    match refreshed {
        Ok(Ok(Some(ring))) => sealing::open(&ring, policy, binding, token, now),
        _ => Err(OpenError::UnknownKey),
    }
}

/// The message of a single-use state presented again (-32602).
pub(crate) const REPLAYED_STATE: &str =
    "requestState already used: this tool completes each state once; start the call again";

/// -31503 (HTTP 503, `Retry-After: 1`): a single-use state cannot be claimed while the shared
/// record is unreachable; the client may retry, and nothing ran.
fn replay_unavailable() -> McpError {
    McpError::new(
        ErrorCode::OverCapacity,
        "Single-use requestState cannot be checked right now; try again shortly",
    )
    .with_data(serde_json::json!({ "retryAfterMs": 1000 }))
}

/// The wire error for a state that could not be sealed. A state over `max_state_bytes` is the
/// request's doing: what a handler carries forward comes from the arguments and answers it
/// was given (`notes_delete` carries the reason the user typed), and the runtime cannot tell
/// a client's large input from a handler's own growth, so it answers -32602 naming the cap
/// rather than blaming itself. Any other failure is the server's (-32603).
fn seal_error(e: SealError) -> McpError {
    match e {
        SealError::StateTooLarge { len, max } => {
            tracing::warn!(len, max, "requestState over state.max_state_bytes");
            McpError::invalid_params(format!(
                "The request's state is {len} bytes, over state.max_state_bytes ({max}): \
                 send smaller arguments or answers"
            ))
            .with_data(serde_json::json!({ "maxStateBytes": max }))
        }
        e => {
            tracing::error!(error = %e, "could not seal requestState");
            McpError::internal("Internal error: request state could not be sealed")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_over_the_cap_is_invalid_params_naming_the_cap() {
        let e = seal_error(SealError::StateTooLarge { len: 40, max: 32 });
        assert_eq!(e.code.code(), -32602);
        assert!(
            e.message.contains("state.max_state_bytes (32)"),
            "{}",
            e.message
        );
    }

    #[test]
    fn a_token_over_its_cap_is_the_servers_error() {
        let e = seal_error(SealError::TokenTooLarge { len: 40, max: 32 });
        assert_eq!(e.code.code(), -32603);
    }
}
