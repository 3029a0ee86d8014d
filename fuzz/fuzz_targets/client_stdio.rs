//! The client's stdio framing on any bytes, as a server's stdout: lines, each read as a
//! JSON-RPC message. Nothing may panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    roundtrip_client::fuzzing::stdio_framing(data);
});
