//! Wire types of the MCP revisions Roundtrip serves, and the checks that need nothing but
//! them: `answers` checks an elicitation answer against the form schema that asked for it
//! (`form_schema` compiles the schema, `string_format` knows its string formats).
//!
//! This is the bottom layer: it imports nothing from the rest of the crate. Handlers, dispatch
//! and transports all speak in these types; JSON shapes that are open-ended in the spec
//! (schemas, `_meta`, capability objects) stay `serde_json::Value` on purpose, so the runtime
//! never drops a field a client or handler put there. (Capabilities declared as `{}` are held
//! as bits, which read back as the same object.)

mod answers;
pub mod capabilities;
pub mod content;
pub mod error;
mod form_schema;
pub mod input;
pub mod jsonrpc;
mod key;
pub mod meta;
pub mod method;
mod other_json;
pub mod result;
mod string_format;
pub mod version;

pub(crate) use answers::{AnswerSchemas, CheckError, Mismatch};
pub use capabilities::ClientCapabilities;
pub use error::{ErrorCode, McpError};
pub use input::{
    ElicitAction, InputRequest, InputRequests, InputResponse, InputResponses, Sampling,
};
pub use jsonrpc::{Incoming, Notification, Request, RequestId};
pub use meta::{LogLevel, RequestMeta};
pub use method::Method;
pub use result::ResultType;
pub use version::{Era, ProtocolVersion};
