//! The `requestState` opener on attacker-controlled tokens. First byte 0: the rest is a
//! token, opened (it must be refused or open, never panic). Otherwise a state sealed from
//! the input must open to itself, and the same token with any byte changed must not open.
#![no_main]

use std::time::{Duration, UNIX_EPOCH};

use libfuzzer_sys::fuzz_target;
use roundtrip_runtime::sealing::{
    args_digest, open, seal, Binding, KeyRing, Payload, SealPolicy, StateKey,
};

fuzz_target!(|data: &[u8]| {
    let ring = KeyRing::new(StateKey::from_bytes("fuzz-key".into(), [7; 32]));
    let policy = SealPolicy::default();
    let binding = Binding {
        tenant: "t",
        principal: "p",
        method: "tools/call",
        target: "notes_delete",
        args_digest: args_digest(None),
    };
    let now = UNIX_EPOCH + Duration::from_secs(1_800_000_000);
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode == 0 {
        if let Ok(token) = std::str::from_utf8(rest) {
            let _ = open(&ring, &policy, &binding, token, now);
        }
        return;
    }
    // Sealed from the input: the state is its text, the schemas its first `mode` bytes.
    let split = usize::from(mode).min(rest.len());
    let (schemas, state) = rest.split_at(split);
    let state = String::from_utf8_lossy(state);
    let payload = Payload {
        round: u32::from(mode),
        state: Some(&state),
        answer_schemas: schemas,
    };
    let Ok(token) = seal(&ring, &policy, &binding, &payload, now) else {
        return;
    };
    let claims = open(&ring, &policy, &binding, &token, now).expect("a fresh state opens");
    assert_eq!(claims.state.as_deref(), Some(&*state));
    assert_eq!(claims.answer_schemas, schemas);
    assert_eq!(claims.round, u32::from(mode));
    // Flip one byte, chosen by the input, to another ASCII character.
    let mut tampered = token.into_bytes();
    let at = usize::from(schemas.first().copied().unwrap_or(0)) * 7 % tampered.len();
    tampered[at] = if tampered[at] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    assert!(
        open(&ring, &policy, &binding, &tampered, now).is_err(),
        "a changed token opened"
    );
});
