//! The traits handlers implement, plus closure adapters for small catalogs.
//!
//! Handler futures are not `Send`: they run on the actix worker that received the request,
//! so they may hold `Rc`s and a `Context` across awaits. The handler objects themselves are
//! shared by all workers and so are `Send + Sync`.

use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::future::LocalBoxFuture;
use futures_util::FutureExt;
use serde_json::{Map, Value};

use super::arguments::Arguments;
use super::context::Context;
use super::descriptor::{PromptDescriptor, ResourceDescriptor, TemplateDescriptor, ToolDescriptor};
use super::outcome::{MethodOutcome, PromptOutcome, ResourceOutcome, ToolOutcome};
use crate::protocol::result::Completion;

/// Values of a URI template's variables, by name: what a [`ResourceTemplate`] reads with.
pub type TemplateVars = std::collections::BTreeMap<String, String>;

/// A tool (`tools/call`). May return input-required.
#[async_trait(?Send)]
pub trait Tool: Send + Sync + 'static {
    /// How `tools/list` shows the tool; read when the catalog is built, so a change needs a
    /// new catalog.
    fn descriptor(&self) -> ToolDescriptor;
    /// Runs the tool on the request's arguments; on a retry `ctx` carries the answers and the
    /// state of the previous round.
    async fn call(&self, ctx: Context, args: Arguments) -> ToolOutcome;
}

/// A prompt (`prompts/get`). May return input-required.
#[async_trait(?Send)]
pub trait Prompt: Send + Sync + 'static {
    /// How `prompts/list` shows the prompt; a `prompts/get` without one of its required
    /// arguments is refused before [`Prompt::get`] runs.
    fn descriptor(&self) -> PromptDescriptor;
    /// The prompt's messages for these arguments.
    async fn get(&self, ctx: Context, args: Arguments) -> PromptOutcome;
    /// Suggestions for `completion/complete` on one argument.
    fn complete(&self, _argument: &str, _value: &str) -> Completion {
        Completion::default()
    }
}

/// A concrete resource (`resources/read` of its URI). May return input-required.
#[async_trait(?Send)]
pub trait Resource: Send + Sync + 'static {
    /// How `resources/list` shows the resource; its `uri` is the one it serves.
    fn descriptor(&self) -> ResourceDescriptor;
    /// The resource's contents.
    async fn read(&self, ctx: Context) -> ResourceOutcome;
}

/// A family of resources whose URIs match a template (RFC 6570 level 1: `{var}` matches one
/// path segment). May return input-required.
#[async_trait(?Send)]
pub trait ResourceTemplate: Send + Sync + 'static {
    /// How `resources/templates/list` shows the template; its `uri_template` decides which
    /// URIs it serves.
    fn descriptor(&self) -> TemplateDescriptor;
    /// The contents at `uri`, which matched the template with the variable values `vars`.
    async fn read(&self, ctx: Context, uri: &str, vars: TemplateVars) -> ResourceOutcome;
    /// Suggestions for `completion/complete` on one template variable.
    fn complete(&self, _argument: &str, _value: &str) -> Completion {
        Completion::default()
    }
}

/// A custom (extension) method. Only `tools/call`, `prompts/get` and `resources/read` may
/// answer input-required; a custom method that tries is answered with an internal error.
#[async_trait(?Send)]
pub trait MethodHandler: Send + Sync + 'static {
    /// The JSON-RPC method it answers; a catalog refuses a name MCP defines or reserves.
    fn method(&self) -> &str;
    /// Answers one request, given its `params` (empty when absent). The result must be a JSON
    /// object; anything else is answered with an internal error. On a modern request the
    /// envelope has taken the protocol version and the declared capabilities out of
    /// `params._meta`: they are `ctx.era()` and `ctx.client_capabilities()`; the rest of
    /// `_meta` is as the client sent it.
    async fn handle(&self, ctx: Context, params: Map<String, Value>) -> MethodOutcome;
}

type ToolFn = dyn Fn(Context, Arguments) -> LocalBoxFuture<'static, ToolOutcome> + Send + Sync;
type PromptFn = dyn Fn(Context, Arguments) -> LocalBoxFuture<'static, PromptOutcome> + Send + Sync;

struct FnTool {
    descriptor: ToolDescriptor,
    f: Box<ToolFn>,
}

#[async_trait(?Send)]
impl Tool for FnTool {
    fn descriptor(&self) -> ToolDescriptor {
        self.descriptor.clone()
    }

    async fn call(&self, ctx: Context, args: Arguments) -> ToolOutcome {
        (self.f)(ctx, args).await
    }
}

/// A tool from a descriptor and an async closure.
pub fn fn_tool<F, Fut>(descriptor: ToolDescriptor, f: F) -> Arc<dyn Tool>
where
    F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ToolOutcome> + 'static,
{
    Arc::new(FnTool {
        descriptor,
        f: Box::new(move |ctx, args| f(ctx, args).boxed_local()),
    })
}

struct FnPrompt {
    descriptor: PromptDescriptor,
    f: Box<PromptFn>,
}

#[async_trait(?Send)]
impl Prompt for FnPrompt {
    fn descriptor(&self) -> PromptDescriptor {
        self.descriptor.clone()
    }

    async fn get(&self, ctx: Context, args: Arguments) -> PromptOutcome {
        (self.f)(ctx, args).await
    }
}

/// A prompt from a descriptor and an async closure.
pub fn fn_prompt<F, Fut>(descriptor: PromptDescriptor, f: F) -> Arc<dyn Prompt>
where
    F: Fn(Context, Arguments) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = PromptOutcome> + 'static,
{
    Arc::new(FnPrompt {
        descriptor,
        f: Box::new(move |ctx, args| f(ctx, args).boxed_local()),
    })
}
