//! The Roundtrip client (crate `roundtrip-client`) driven against real servers: ours on port
//! 0 in both eras over HTTP ([`modern`], [`legacy`]) and as a `roundtrip stdio` child
//! ([`stdio`]); small scripted servers ([`scripted`]) for what ours never does (state-only
//! rounds, unknown result types, questions a client did not declare, odd discovery answers);
//! and servers we did not write ([`interop`]).

mod answers;
mod era;
mod headers;
mod interop;
mod legacy;
mod modern;
mod rounds;
mod scripted;
mod stdio;
