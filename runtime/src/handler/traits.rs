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
    fn descriptor(&self) -> ToolDescriptor;
    async fn call(&self, ctx: Context, args: Arguments) -> ToolOutcome;
}

/// A prompt (`prompts/get`). May return input-required.
#[async_trait(?Send)]
pub trait Prompt: Send + Sync + 'static {
    fn descriptor(&self) -> PromptDescriptor;
    async fn get(&self, ctx: Context, args: Arguments) -> PromptOutcome;
    /// Suggestions for `completion/complete` on one argument.
    fn complete(&self, _argument: &str, _value: &str) -> Completion {
        Completion::default()
    }
}

/// A concrete resource (`resources/read` of its URI). May return input-required.
#[async_trait(?Send)]
pub trait Resource: Send + Sync + 'static {
    fn descriptor(&self) -> ResourceDescriptor;
    async fn read(&self, ctx: Context) -> ResourceOutcome;
}

/// A family of resources whose URIs match a template (RFC 6570 level 1: `{var}` matches one
/// path segment). May return input-required.
#[async_trait(?Send)]
pub trait ResourceTemplate: Send + Sync + 'static {
    fn descriptor(&self) -> TemplateDescriptor;
    async fn read(&self, ctx: Context, uri: &str, vars: TemplateVars) -> ResourceOutcome;
    fn complete(&self, _argument: &str, _value: &str) -> Completion {
        Completion::default()
    }
}

/// A custom (extension) method. Only `tools/call`, `prompts/get` and `resources/read` may
/// answer input-required; a custom method that tries is answered with an internal error.
#[async_trait(?Send)]
pub trait MethodHandler: Send + Sync + 'static {
    fn method(&self) -> &str;
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
