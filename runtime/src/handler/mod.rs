//! The handler API: what a tool, prompt or resource author writes against.
//!
//! Handlers are pure functions of (arguments, input responses, request state, tenant): they
//! never see HTTP, actors or sealing. A handler that needs input from the user returns
//! [`InputRequired`]; the runtime gates, seals and stamps it, the client answers and retries,
//! and the handler runs again from the start with the answers in its [`Context`].
//!
//! ```
//! use roundtrip_runtime::handler::{Arguments, Context, InputRequired, ToolOutcome};
//! use roundtrip_runtime::protocol::result::CallToolResult;
//! use serde_json::json;
//!
//! async fn greet(ctx: Context, _args: Arguments) -> ToolOutcome {
//!     let Some(name) = ctx.input_response("user_name").and_then(|a| a.content_str("name")) else {
//!         return InputRequired::new()
//!             .elicit("user_name", "What is your name?", json!({
//!                 "type": "object",
//!                 "properties": { "name": { "type": "string" } },
//!                 "required": ["name"]
//!             }))
//!             .into();
//!     };
//!     CallToolResult::text(format!("Hello, {name}!")).into()
//! }
//! ```

mod arguments;
mod cancellation;
mod catalog;
mod context;
mod descriptor;
mod outcome;
mod principal;
mod tenant;
mod traits;

pub use arguments::Arguments;
pub use cancellation::Cancellation;
pub use catalog::{Catalog, CatalogBuilder};
pub use context::{Context, ContextBuilder, Notifier, OutgoingMessage};
pub use descriptor::{
    HeaderKind, HeaderParam, PromptDescriptor, ResourceDescriptor, TemplateDescriptor,
    ToolDescriptor,
};
pub use outcome::{
    HandlerError, InputRequired, MethodOutcome, Outcome, PromptOutcome, ResourceOutcome,
    ToolOutcome,
};
pub(crate) use principal::ANONYMOUS;
pub use principal::{Allow, Grants, Principal};
pub use tenant::{ListChanged, Tenant, TenantConfig, TenantSettings, TenantView};
pub use traits::{
    fn_prompt, fn_tool, MethodHandler, Prompt, Resource, ResourceTemplate, TemplateVars, Tool,
};
