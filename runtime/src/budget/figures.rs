//! How many bytes each kept item is charged: the size of its bounded, parsed form (as
//! compact JSON) plus a fixed overhead for what holding it costs besides (the actor, its
//! mailbox, channels, map entries, the task of a flow). The overheads are rounded up from
//! what the process's RSS grows by per item (BENCHMARKS.md, memory per item); the table in
//! docs/ARCHITECTURE.md (Budgets) repeats them.

use std::io;

use serde::Serialize;

/// A legacy session: its actor, mailbox, registry entry and state, besides its capabilities.
pub const SESSION: u64 = 16 * 1024;

/// One resource a legacy session follows, besides its URI.
pub const SUBSCRIPTION: u64 = 128;

/// A legacy session's GET stream: its channel (64 messages) and the stream's body.
pub const SESSION_STREAM: u64 = 8 * 1024;

/// A request a legacy session runs (a held shim flow among them): its task, cancellation
/// token and relay, besides its params.
pub const FLOW: u64 = 8 * 1024;

/// A client's answer to a shim leg, held by its flow until the flow ends, besides the answer.
pub const LEG_ANSWER: u64 = 512;

/// A `subscriptions/listen` stream: its body, its place in the tenant's change feed and its
/// keep-alive timer, besides its resource URIs.
pub const LISTEN_STREAM: u64 = 8 * 1024;

/// One URI a listen stream follows, besides the URI itself.
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
