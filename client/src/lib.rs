//! Roundtrip's MCP client: one API for both eras of the protocol, over Streamable HTTP or a
//! child process's stdio, that drives multi round-trip (input-required) results to the end.
//!
//! ```no_run
//! # async fn run() -> Result<(), roundtrip_client::Error> {
//! use roundtrip_client::handler::{elicit_with, ElicitationModes};
//! use roundtrip_client::protocol::input::{ElicitRequest, ElicitResult};
//! use roundtrip_client::Client;
//! use serde_json::json;
//!
//! let client = Client::builder()
//!     .elicitation(elicit_with(ElicitationModes::FORM, |request, _context| async move {
//!         let ElicitRequest::Form(_form) = request else {
//!             return Ok(ElicitResult::decline());
//!         };
//!         let mut answer = serde_json::Map::new();
//!         answer.insert("name".into(), json!("Ada"));
//!         Ok(ElicitResult::accept(answer))
//!     }))
//!     .connect_http("http://127.0.0.1:8080/t/demo/mcp")
//!     .await?;
//! let greeting = client.call_tool("greet", json!({})).await?;
//! println!("{}", greeting.text());
//! # Ok(()) }
//! ```
//!
//! Layers, each using only those after it:
//! - [`Client`] (`client.rs`): the calls; `mrtr.rs` drives input-required rounds, `simple.rs`
//!   the one-round methods;
//! - `era.rs`: decides the era once per connection (probe, fallback, cache); `session.rs`
//!   frames each request for it (envelope, headers);
//! - `transport`: Streamable HTTP and stdio, which also answer a legacy server's own requests
//!   with the [`handler`]s;
//! - [`protocol`]: the wire types.
//!
//! Futures are `Send`; the client runs on any tokio runtime, `actix_rt`'s included.

#![warn(missing_docs, missing_debug_implementations)]

mod client;
mod era;
pub mod error;
pub mod handler;
mod mrtr;
pub mod protocol;
mod session;
mod simple;
mod transport;

/// Entry points for the fuzz targets (`fuzz/`): the client's framing of what a server sends,
/// fed arbitrary bytes. Not part of the API.
#[doc(hidden)]
pub mod fuzzing {
    use futures_util::FutureExt;
    use tokio::io::BufReader;

    use crate::transport::{sse, stdio};

    /// Feeds `data` to the SSE parser whole and again in chunks cut where `cuts` says
    /// (each a chunk length), and checks that the cut makes no difference; each event's data
    /// is then read as a JSON-RPC message, as the HTTP transport reads it.
    pub fn sse_framing(cuts: &[u8], data: &[u8]) {
        let whole = sse::Parser::default().push(data);
        let mut chunked = Ok(Vec::new());
        let mut parser = sse::Parser::default();
        let mut rest = data;
        for &cut in cuts.iter().cycle().take(data.len()) {
            if rest.is_empty() {
                break;
            }
            let (chunk, tail) = rest.split_at(usize::from(cut).clamp(1, rest.len()));
            chunked = chunked.and_then(|mut events: Vec<_>| {
                events.extend(parser.push(chunk)?);
                Ok(events)
            });
            rest = tail;
        }
        chunked = chunked.and_then(|mut events| {
            events.extend(parser.push(rest)?);
            Ok(events)
        });
        assert_eq!(
            whole, chunked,
            "the SSE events depend on how the bytes were cut"
        );
        for event in whole.unwrap_or_default() {
            if let Ok(value) = serde_json::from_str(&event.data) {
                let _ = crate::protocol::jsonrpc::Incoming::parse(value);
            }
        }
    }

    /// Reads `data` as a server's stdout: lines as the stdio transport frames them (an
    /// over-long line dropped, one that is not UTF-8 skipped), each read as a message.
    pub fn stdio_framing(data: &[u8]) {
        // A small limit, so that the fuzzer reaches the over-long lines as well.
        const LIMIT: usize = 256;
        let mut reader = BufReader::new(data);
        let mut line = Vec::new();
        // A slice never waits: every read is ready at once.
        while let Some(Ok(read)) = stdio::next_line(&mut reader, &mut line, LIMIT).now_or_never() {
            match read {
                stdio::Line::Whole => {
                    assert!(line.len() <= LIMIT, "a line past the limit was kept");
                    let _ = stdio::message_of(&line);
                }
                stdio::Line::TooLong => {}
                stdio::Line::End => break,
            }
        }
    }
}

pub use client::{Client, ClientBuilder, CompletionRef};
pub use error::{Error, HandlerError};
pub use mrtr::{Retry, DEFAULT_MAX_ROUNDS};
pub use protocol::version::{Era, EraChoice, ProtocolVersion};
pub use session::ServerInfo;
pub use transport::MAX_MESSAGE_BYTES;
