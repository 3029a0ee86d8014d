//! How many bytes each kept item is charged: the size of its bounded, parsed form (as
//! compact JSON) plus a fixed overhead for what holding it costs besides (the actor, its
//! mailbox, channels, map entries, the task of a flow, the connection of a stream). The
//! overheads round up what the process's RSS grew by per item where it was measured
//! (BENCHMARKS.md, legacy memory); the others are estimates until `bench/budget_memory.py`
//! measures them. docs/ARCHITECTURE.md (Budgets) repeats the table.

use std::io;

use serde::Serialize;

/// A legacy session besides its capabilities: its actor, mailbox, registry entry and state.
/// Measured: 2.0–2.2 KiB per idle session (10,000 on one worker).
pub const SESSION: u64 = 4 * 1024;

/// One resource a legacy session follows, besides its URI (a set entry). Estimate.
pub const SUBSCRIPTION: u64 = 128;

/// A legacy session's GET stream: its channel (64 messages), the stream's body and the
/// connection it holds. Estimate.
pub const SESSION_STREAM: u64 = 8 * 1024;

/// A request a legacy session runs (a held shim flow among them) besides its params: its
/// task, cancellation token, relay and the stream it holds open. Measured: 9.4 KiB per held
/// flow over h2c, 15.7 KiB over HTTP/1.1.
pub const FLOW: u64 = 16 * 1024;

/// A client's answer to a shim leg, held by its flow until the flow ends, besides the
/// answer itself. Estimate.
pub const LEG_ANSWER: u64 = 512;

/// A `subscriptions/listen` stream besides its URIs: its body, its place in the tenant's
/// change feed, its timers and the connection it holds. Estimate.
pub const LISTEN_STREAM: u64 = 8 * 1024;

/// One URI a listen stream follows, besides the URI itself (a set entry). Estimate.
pub const LISTEN_URI: u64 = 64;

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
