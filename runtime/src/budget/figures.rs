//! How many bytes each kept item is charged: the size of its bounded, parsed form (as
//! compact JSON; a multiple of it for a held flow's params, [`kept_request`], and a listen
//! stream's URIs, [`listen_uri`], which measured more than one copy) plus a fixed overhead for what holding it costs besides (the actor, its
//! mailbox, channels, map entries, the task of a flow, the connection of a stream).
//!
//! Measured: the session, flow and listen-stream figures are upper bounds of what the
//! process's RSS grew by per item, tiny and large, on 2026-12-04 (`bench/budget_memory.py`,
//! BENCHMARKS.md, "2026-12-04: memory per kept item (issue 15)"). Estimates, not measured:
//! [`SUBSCRIPTION`], [`SESSION_STREAM`], [`LEG_ANSWER`]. docs/ARCHITECTURE.md (Budgets)
//! repeats the table.

use std::io;

use serde::Serialize;

/// A legacy session besides its capabilities: its actor, mailbox, registry entry and state.
/// Measured 2026-12-04: 2.2–2.3 KiB per session declaring `{}`, 33.4 KiB per session
/// declaring the largest capabilities accepted (28 KiB of them), so up to 5.4 KiB besides.
pub const SESSION: u64 = 8 * 1024;

/// One resource a legacy session follows, besides its URI (a set entry). Estimate.
pub const SUBSCRIPTION: u64 = 128;

/// A legacy session's GET stream: its channel (64 messages), the stream's body and the
/// connection it holds. Estimate.
pub const SESSION_STREAM: u64 = 8 * 1024;

/// A request a legacy session runs (a held shim flow among them) besides its params (charged
/// as [`kept_request`]): its task, cancellation, relay and the stream it holds open.
/// Measured 2026-12-04: 17.6 KiB per held flow with tiny arguments, each on an HTTP/1.1
/// connection of its own (9.4 KiB over h2c on 2026-12-02).
pub const FLOW: u64 = 24 * 1024;

/// A client's answer to a shim leg, held by its flow until the flow ends, besides the
/// answer itself. Estimate.
pub const LEG_ANSWER: u64 = 512;

/// A `subscriptions/listen` stream besides its URIs: its body, its place in the tenant's
/// change feed, its timers and the connection it holds. Measured 2026-12-04: 12.8 KiB per
/// stream following no resources, on an HTTP/1.1 connection of its own.
pub const LISTEN_STREAM: u64 = 16 * 1024;

/// One URI a listen stream follows, besides four times its length ([`listen_uri`]).
pub const LISTEN_URI: u64 = 128;

/// What a listen stream is charged for one URI of `len` bytes: [`LISTEN_URI`] and four times
/// its length. Measured 2026-12-04, per URI of streams following 16 to 256 URIs: 152 bytes
/// for 32-byte URIs, 834 for 256-byte ones, up to 6,508 for 2048-byte ones (3.2 times; 2,749
/// when 256 of them make a 512 KiB request). Which copies those are was not traced.
pub const fn listen_uri(len: u64) -> u64 {
    LISTEN_URI.saturating_add(len.saturating_mul(4))
}

/// What a request a legacy session runs (a held shim flow) is charged for the `bytes` of its
/// params: 2¼ times their size. Measured 2026-12-04 besides the 17.6 KiB of a flow with tiny
/// arguments, each flow on an HTTP/1.1 connection of its own: 1.9–2.14 times the arguments'
/// size from 4 to 126 KiB (287 KiB per flow with 126 KiB of them), 1.1–1.6 times from 128 to
/// 768 KiB, 1.15 at 1 MiB. The parsed params are one copy; where the other lives (the request's
/// bytes in the connection's buffers, most likely) was not traced.
pub const fn kept_request(bytes: u64) -> u64 {
    bytes.saturating_mul(9) / 4
}

/// The length of `value` as compact JSON, counted without building the text.
pub fn json_size(value: &impl Serialize) -> u64 {
    struct Count(u64);
    impl io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0 += buf.len() as u64;
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail; a JSON value always serializes.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn json_size_is_the_compact_texts_length() {
        let v = json!({"a": [1, 2, "x"], "b": null});
        assert_eq!(
            json_size(&v),
            serde_json::to_string(&v).expect("json").len() as u64
        );
    }
}
