//! [`Client`] and its builder: connect once (deciding the era), then call.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::process::Command;

use crate::era;
use crate::error::Error;
use crate::handler::{
    ElicitationHandler, Handlers, InputContext, Notification, RootsHandler, SamplingHandler,
};
use crate::mrtr::{self, Retry, DEFAULT_MAX_ROUNDS};
use crate::protocol::results::{
    CallToolResult, Completion, DiscoverResult, GetPromptResult, Outcome, Page, Prompt,
    ReadResourceResult, Resource,
};
use crate::protocol::tools::Tool;
use crate::protocol::version::{Era, EraChoice, ProtocolVersion};
use crate::protocol::{parse, Malformed};
use crate::session::{ServerInfo, Session};
use crate::simple::{self, malformed};
use crate::transport::http::{Http, HttpOptions};
use crate::transport::stdio::Stdio;
use crate::transport::Transport;

/// How long a stdio probe waits for `server/discover` before taking the server for legacy.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// What `completion/complete` completes an argument of.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompletionRef {
    /// A prompt, by name.
    Prompt(String),
    /// A resource template, by URI template.
    Resource(String),
}

/// Configures and connects a [`Client`].
#[derive(Debug)]
pub struct ClientBuilder {
    client_info: Value,
    era: EraChoice,
    http: HttpOptions,
    max_rounds: u32,
    probe_timeout: Duration,
    handlers: Handlers,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            client_info: json!({"name": "roundtrip-client", "version": env!("CARGO_PKG_VERSION")}),
            era: EraChoice::Auto,
            http: HttpOptions {
                connect_timeout: Some(Duration::from_secs(10)),
                ..HttpOptions::default()
            },
            max_rounds: DEFAULT_MAX_ROUNDS,
            probe_timeout: DEFAULT_PROBE_TIMEOUT,
            handlers: Handlers::default(),
        }
    }
}

impl ClientBuilder {
    /// The name and version the client gives in `_meta` and `initialize`.
    pub fn client_info(mut self, name: &str, version: &str) -> Self {
        self.client_info = json!({"name": name, "version": version});
        self
    }

    /// How the era is chosen (default: [`EraChoice::Auto`]).
    pub fn era(mut self, era: EraChoice) -> Self {
        self.era = era;
        self
    }

    /// A header sent with every HTTP request.
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.http.headers.push((name.to_owned(), value.to_owned()));
        self
    }

    /// `Authorization: Bearer {token}` on every HTTP request.
    pub fn bearer(self, token: &str) -> Self {
        self.header("authorization", &format!("Bearer {token}"))
    }

    /// The TCP/TLS connect timeout (default 10 s).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.http.connect_timeout = Some(timeout);
        self
    }

    /// The input-required results a call fulfils before it fails with
    /// [`Error::RoundsExceeded`] (default [`DEFAULT_MAX_ROUNDS`]).
    pub fn max_rounds(mut self, rounds: u32) -> Self {
        self.max_rounds = rounds;
        self
    }

    /// How long a stdio `server/discover` probe waits before the server is taken for legacy
    /// (default 5 s).
    pub fn probe_timeout(mut self, timeout: Duration) -> Self {
        self.probe_timeout = timeout;
        self
    }

    /// Answers elicitations; declares `elicitation` with the handler's modes (nothing for a
    /// handler of no mode).
    pub fn elicitation(mut self, handler: impl ElicitationHandler + 'static) -> Self {
        self.handlers.elicitation = Some(Arc::new(handler));
        self
    }

    /// Answers sampling; declares `sampling` (and `sampling.tools` if the handler does).
    pub fn sampling(mut self, handler: impl SamplingHandler + 'static) -> Self {
        self.handlers.sampling = Some(Arc::new(handler));
        self
    }

    /// Answers `roots/list`; declares `roots`.
    pub fn roots(mut self, handler: impl RootsHandler + 'static) -> Self {
        self.handlers.roots = Some(Arc::new(handler));
        self
    }

    /// Receives the server's notifications (progress, logs, ...).
    pub fn on_notification(mut self, sink: impl Fn(&Notification) + Send + Sync + 'static) -> Self {
        self.handlers.notifications = Some(Arc::new(sink));
        self
    }

    /// Connects to a Streamable HTTP endpoint and decides its era.
    pub async fn connect_http(self, url: &str) -> Result<Client, Error> {
        let http = Http::new(url, &self.http, self.handlers.clone())?;
        let key = era::cache_key(http.url());
        self.establish(Transport::Http(http), Some(key)).await
    }

    /// Starts `command` as a stdio server (its stdin and stdout become the connection) and
    /// decides its era.
    pub async fn connect_stdio(self, command: Command) -> Result<Client, Error> {
        let stdio = Stdio::spawn(command, self.handlers.clone())?;
        self.establish(Transport::Stdio(stdio), None).await
    }

    async fn establish(self, transport: Transport, cache: Option<String>) -> Result<Client, Error> {
        let session = Session::new(transport, self.handlers, self.client_info);
        match self.era {
            EraChoice::Modern => era::modern(&session, ProtocolVersion::MODERN[0], None),
            EraChoice::Legacy => era::initialize(&session).await?,
            EraChoice::Auto => era::detect(&session, cache.as_deref(), self.probe_timeout).await?,
        }
        Ok(Client {
            session: Arc::new(session),
            max_rounds: self.max_rounds,
        })
    }
}

/// A connection to one MCP server. Cheap to clone; clones share the connection.
#[derive(Debug, Clone)]
pub struct Client {
    session: Arc<Session>,
    max_rounds: u32,
}

impl Client {
    /// A builder with the defaults: era `auto`, 10 rounds, no handlers.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// What the connection knows about the server.
    pub fn server(&self) -> ServerInfo {
        self.session.server().unwrap_or(ServerInfo {
            era: Era::Modern,
            protocol_version: ProtocolVersion::MODERN[0],
            capabilities: None,
            server_info: None,
            instructions: None,
        })
    }

    /// The era the connection speaks.
    pub fn era(&self) -> Era {
        self.server().era
    }

    /// `server/discover`: the server's versions and capabilities.
    pub async fn discover(&self) -> Result<DiscoverResult, Error> {
        const METHOD: &str = "server/discover";
        let result = simple::call(&self.session, METHOD, Map::new()).await?;
        DiscoverResult::parse(result).map_err(|source| malformed(METHOD, source))
    }

    /// Every tool the server lists, over all pages. Tools whose `x-mcp-header` annotations
    /// are invalid are left out (and refused by [`Client::call_tool`]).
    pub async fn list_tools(&self) -> Result<Vec<Tool>, Error> {
        simple::all_tools(&self.session).await
    }

    /// One page of `tools/list`.
    pub async fn list_tools_page(&self, cursor: Option<&str>) -> Result<Page<Tool>, Error> {
        simple::tools_page(&self.session, cursor).await
    }

    /// Every prompt, over all pages.
    pub async fn list_prompts(&self) -> Result<Vec<Prompt>, Error> {
        simple::all(&self.session, "prompts/list", "prompts").await
    }

    /// One page of `prompts/list`.
    pub async fn list_prompts_page(&self, cursor: Option<&str>) -> Result<Page<Prompt>, Error> {
        simple::page(&self.session, "prompts/list", "prompts", cursor).await
    }

    /// Every resource, over all pages.
    pub async fn list_resources(&self) -> Result<Vec<Resource>, Error> {
        simple::all(&self.session, "resources/list", "resources").await
    }

    /// One page of `resources/list`.
    pub async fn list_resources_page(&self, cursor: Option<&str>) -> Result<Page<Resource>, Error> {
        simple::page(&self.session, "resources/list", "resources", cursor).await
    }

    /// Calls a tool, answering every input request until the result is complete.
    /// `arguments`: a JSON object, or `null` for none.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<CallToolResult, Error> {
        let (base, context) = self.tool_params(name, arguments)?;
        let result =
            mrtr::drive(&self.session, "tools/call", base, &context, self.max_rounds).await?;
        typed("tools/call", result)
    }

    /// One round of `tools/call`, for a caller who drives the retries itself.
    pub async fn call_tool_once(
        &self,
        name: &str,
        arguments: Value,
        retry: &Retry,
    ) -> Result<Outcome<CallToolResult>, Error> {
        let (base, context) = self.tool_params(name, arguments)?;
        let outcome = mrtr::round(&self.session, "tools/call", &base, retry, &context).await?;
        typed_outcome("tools/call", outcome)
    }

    fn tool_params(
        &self,
        name: &str,
        arguments: Value,
    ) -> Result<(Map<String, Value>, InputContext), Error> {
        if let Some(refused) = self.session.refused_tool(name) {
            return Err(refused);
        }
        let mut base = Map::new();
        base.insert("name".into(), Value::String(name.to_owned()));
        match arguments {
            Value::Null => {}
            Value::Object(arguments) => {
                base.insert("arguments".into(), Value::Object(arguments));
            }
            _ => {
                return Err(malformed(
                    "tools/call",
                    Malformed::new("the arguments", "not a JSON object"),
                ))
            }
        }
        Ok((base, context("tools/call", name)))
    }

    /// Gets a prompt, answering every input request until the result is complete.
    pub async fn get_prompt(
        &self,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<GetPromptResult, Error> {
        let base = prompt_params(name, arguments);
        let context = context("prompts/get", name);
        let result = mrtr::drive(
            &self.session,
            "prompts/get",
            base,
            &context,
            self.max_rounds,
        )
        .await?;
        typed("prompts/get", result)
    }

    /// One round of `prompts/get`.
    pub async fn get_prompt_once(
        &self,
        name: &str,
        arguments: Map<String, Value>,
        retry: &Retry,
    ) -> Result<Outcome<GetPromptResult>, Error> {
        let base = prompt_params(name, arguments);
        let context = context("prompts/get", name);
        let outcome = mrtr::round(&self.session, "prompts/get", &base, retry, &context).await?;
        typed_outcome("prompts/get", outcome)
    }

    /// Reads a resource, answering every input request until the result is complete.
    pub async fn read_resource(&self, uri: &str) -> Result<ReadResourceResult, Error> {
        let base = resource_params(uri);
        let context = context("resources/read", uri);
        let result = mrtr::drive(
            &self.session,
            "resources/read",
            base,
            &context,
            self.max_rounds,
        )
        .await?;
        typed("resources/read", result)
    }

    /// One round of `resources/read`.
    pub async fn read_resource_once(
        &self,
        uri: &str,
        retry: &Retry,
    ) -> Result<Outcome<ReadResourceResult>, Error> {
        let base = resource_params(uri);
        let context = context("resources/read", uri);
        let outcome = mrtr::round(&self.session, "resources/read", &base, retry, &context).await?;
        typed_outcome("resources/read", outcome)
    }

    /// `completion/complete`: suggestions for `argument`, whose value so far is `value`.
    pub async fn complete(
        &self,
        reference: &CompletionRef,
        argument: &str,
        value: &str,
    ) -> Result<Completion, Error> {
        const METHOD: &str = "completion/complete";
        let reference = match reference {
            CompletionRef::Prompt(name) => json!({"type": "ref/prompt", "name": name}),
            CompletionRef::Resource(uri) => json!({"type": "ref/resource", "uri": uri}),
        };
        let params = json!({"ref": reference, "argument": {"name": argument, "value": value}});
        let params = params.as_object().cloned().unwrap_or_default();
        let mut result = simple::call(&self.session, METHOD, params).await?;
        let completion = result.remove("completion").unwrap_or(Value::Null);
        parse("a completion", completion).map_err(|source| malformed(METHOD, source))
    }

    /// Ends the connection: DELETE of a legacy HTTP session; for stdio, closes the child's
    /// stdin and waits briefly for it to exit.
    pub async fn close(&self) {
        self.session.transport.close().await;
    }
}

fn context(method: &str, target: &str) -> InputContext {
    InputContext {
        method: Some(method.to_owned()),
        target: Some(target.to_owned()),
        key: None,
    }
}

fn prompt_params(name: &str, arguments: Map<String, Value>) -> Map<String, Value> {
    let mut base = Map::new();
    base.insert("name".into(), Value::String(name.to_owned()));
    if !arguments.is_empty() {
        base.insert("arguments".into(), Value::Object(arguments));
    }
    base
}

fn resource_params(uri: &str) -> Map<String, Value> {
    let mut base = Map::new();
    base.insert("uri".into(), Value::String(uri.to_owned()));
    base
}

fn typed<T: serde::de::DeserializeOwned>(
    method: &'static str,
    result: Map<String, Value>,
) -> Result<T, Error> {
    parse(method, Value::Object(result)).map_err(|source| malformed(method, source))
}

fn typed_outcome<T: serde::de::DeserializeOwned>(
    method: &'static str,
    outcome: Outcome<Map<String, Value>>,
) -> Result<Outcome<T>, Error> {
    Ok(match outcome {
        Outcome::Complete(result) => Outcome::Complete(typed(method, result)?),
        Outcome::InputRequired(ir) => Outcome::InputRequired(ir),
    })
}
