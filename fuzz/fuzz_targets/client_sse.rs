//! The client's SSE parser on any bytes, cut into chunks anywhere: the events must not
//! depend on the cuts, and nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first bytes say where to cut; the rest is the stream.
    let split = usize::from(data.first().copied().unwrap_or(0) % 8).min(data.len());
    let (cuts, stream) = data.split_at(split);
    roundtrip_client::fuzzing::sse_framing(cuts, stream);
});
