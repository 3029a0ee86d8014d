//! Streamable HTTP, both eras: each message is a POST to the one endpoint; the answer is a
//! JSON body or an SSE stream scoped to the request.
//!
//! On a stream, notifications go to the sink, and a legacy server's own requests are answered
//! by the handlers and POSTed back (SEP-2260 puts them on the originating request's stream),
//! while the stream is still read. A stream whose events carry ids (the legacy wire's
//! resumability) and ends before the response is resumed with a GET and `Last-Event-ID`
//! after the `retry` the server asked for; a modern stream has no ids, and ending early loses
//! the request (`StreamEnded`). A legacy session opens the optional standalone GET stream
//! right after `initialize` and answers the server's requests on it too (older servers send
//! their elicitations there); a server that offers none, or does not answer the GET within
//! 5 s, is used without it, and a stream that ends is not reopened.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::future::BoxFuture;
use futures_util::stream::{BoxStream, FuturesUnordered};
use futures_util::{FutureExt, StreamExt};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE, WWW_AUTHENTICATE};
use reqwest::{Response, StatusCode, Url};
use serde_json::Value;

use super::sse::{Event, Parser, TooLong};
use super::{serve, Answer, Outgoing};
use crate::error::Error;
use crate::handler::{Handlers, InputContext};
use crate::protocol::headers;
use crate::protocol::jsonrpc::{self, Incoming, RequestId};
use crate::protocol::version::ProtocolVersion;
use crate::protocol::Malformed;

/// How long to wait before resuming a stream whose server named no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_secs(1);
/// How long a legacy session's standalone GET stream may take to answer before the client
/// goes on without it.
const STREAM_OPEN_TIMEOUT: Duration = Duration::from_secs(5);
/// Resumptions in a row that bring no event before the request is given up.
const MAX_IDLE_RESUMPTIONS: u32 = 3;
const ACCEPT_BOTH: &str = "application/json, text/event-stream";

/// The HTTP settings a client is built with.
#[derive(Debug, Clone, Default)]
pub(crate) struct HttpOptions {
    /// Headers sent with every request (the caller's, and `Authorization` for a bearer).
    pub(crate) headers: Vec<(String, String)>,
    /// The TCP/TLS connect timeout.
    pub(crate) connect_timeout: Option<Duration>,
}

/// A Streamable HTTP endpoint.
#[derive(Debug)]
pub(crate) struct Http {
    endpoint: Arc<Endpoint>,
    handlers: Handlers,
    /// The legacy session's standalone GET stream, while it is open.
    listening: Mutex<Option<tokio::task::JoinHandle<()>>>,
}

/// Where requests go and what each carries: shared with the standalone stream's task.
#[derive(Debug)]
struct Endpoint {
    client: reqwest::Client,
    url: Url,
    extra: HeaderMap,
    /// The legacy session's `Mcp-Session-Id`, once `initialize` named one.
    session: Mutex<Option<HeaderValue>>,
}

type Events = BoxStream<'static, Result<Event, Broken>>;

/// Why a response stream broke.
#[derive(Debug)]
enum Broken {
    /// The connection failed.
    Network(reqwest::Error),
    /// An event went past the client's limit.
    TooLong(TooLong),
}

/// Our answers to a server's requests, on their way.
type Answering = FuturesUnordered<BoxFuture<'static, ()>>;

impl Http {
    pub(crate) fn new(url: &str, options: &HttpOptions, handlers: Handlers) -> Result<Self, Error> {
        let url = Url::parse(url).map_err(|e| Error::Malformed {
            method: "connect".into(),
            source: Malformed::new("the endpoint URL", e),
        })?;
        let mut extra = HeaderMap::new();
        for (name, value) in &options.headers {
            let invalid = || Error::InvalidHeader { name: name.clone() };
            let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| invalid())?;
            let value = HeaderValue::from_str(value).map_err(|_| invalid())?;
            extra.append(header, value);
        }
        let mut builder = reqwest::Client::builder();
        if let Some(timeout) = options.connect_timeout {
            builder = builder.connect_timeout(timeout);
        }
        let client = builder.build().map_err(|source| Error::Network {
            method: "connect".into(),
            url: url.to_string(),
            source,
        })?;
        Ok(Self {
            endpoint: Arc::new(Endpoint {
                client,
                url,
                extra,
                session: Mutex::new(None),
            }),
            handlers,
            listening: Mutex::new(None),
        })
    }

    /// The endpoint.
    pub(crate) fn url(&self) -> &Url {
        &self.endpoint.url
    }

    pub(crate) async fn request(&self, out: &Outgoing) -> Result<Answer, Error> {
        self.endpoint.request(out, &self.handlers).await
    }

    pub(crate) async fn notify(
        &self,
        method: &str,
        message: Value,
        mcp: &[(String, String)],
    ) -> Result<(), Error> {
        self.endpoint.notify(method, message, mcp).await
    }

    /// Opens the legacy session's standalone GET stream, on which a server sends what
    /// belongs to no request: notifications, and (older servers) requests of its own. A
    /// server that offers none (405) is fine. Returns once the stream is open, so that a
    /// request sent next finds it there.
    pub(crate) async fn listen(&self, version: ProtocolVersion) {
        let Some(events) = self.endpoint.open_stream(version).await else {
            return;
        };
        let endpoint = self.endpoint.clone();
        let task = tokio::spawn(listen(endpoint, self.handlers.clone(), events, version));
        if let Some(old) = self
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .replace(task)
        {
            old.abort();
        }
    }

    /// Ends a legacy session (DELETE); a server that does not allow it (405) is fine.
    pub(crate) async fn close(&self) {
        self.stop_listening();
        self.endpoint.close().await;
    }

    fn stop_listening(&self) {
        let task = self
            .listening
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(task) = task {
            task.abort();
        }
    }
}

impl Drop for Http {
    fn drop(&mut self) {
        self.stop_listening();
    }
}

impl Endpoint {
    fn session(&self) -> Option<HeaderValue> {
        self.session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// A POST of `message` with the MCP headers `headers`, the session and the extras.
    async fn post(
        &self,
        method: &str,
        message: &Value,
        mcp: &[(String, String)],
    ) -> Result<Response, Error> {
        let mut request = self
            .client
            .post(self.url.clone())
            .headers(self.extra.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH);
        for (name, value) in mcp {
            request = request.header(name.as_str(), value.as_str());
        }
        if let Some(session) = self.session() {
            request = request.header(headers::SESSION_ID, session);
        }
        let body = serde_json::to_vec(message).map_err(|e| Error::Malformed {
            method: method.to_owned(),
            source: Malformed::new("the request", e),
        })?;
        request
            .body(body)
            .send()
            .await
            .map_err(|source| self.network(method, source))
    }

    fn network(&self, method: &str, source: reqwest::Error) -> Error {
        Error::Network {
            method: method.to_owned(),
            url: self.url.to_string(),
            source,
        }
    }

    /// 401 and 403 are errors of their own, whatever the body.
    fn refused(method: &str, response: &Response) -> Option<Error> {
        let status = response.status();
        (status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN).then(|| {
            Error::Unauthorized {
                method: method.to_owned(),
                status: status.as_u16(),
                www_authenticate: response
                    .headers()
                    .get(WWW_AUTHENTICATE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned),
            }
        })
    }

    async fn request(
        self: &Arc<Self>,
        out: &Outgoing,
        handlers: &Handlers,
    ) -> Result<Answer, Error> {
        let response = self.post(&out.method, &out.message, &out.headers).await?;
        if let Some(refused) = Self::refused(&out.method, &response) {
            return Err(refused);
        }
        if out.method == "initialize" {
            if let Some(session) = response.headers().get(headers::SESSION_ID) {
                *self.session.lock().unwrap_or_else(|p| p.into_inner()) = Some(session.clone());
            }
        }
        if is_event_stream(&response) {
            let events = events(response);
            return self.read_stream(events, out, handlers).await;
        }
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|source| self.network(&out.method, source))?;
        match serde_json::from_slice::<Value>(&body)
            .ok()
            .map(Incoming::parse)
        {
            Some(Ok(Incoming::Response { outcome, .. })) => Ok(outcome),
            _ if !status.is_success() => Err(Error::Http {
                method: out.method.clone(),
                status: status.as_u16(),
            }),
            _ => Err(Error::Malformed {
                method: out.method.clone(),
                source: Malformed::new("the response", "no JSON-RPC response in the body"),
            }),
        }
    }

    /// Reads a request's SSE stream until its response, answering the server's requests and
    /// resuming the stream where the server allows it. Answers still under way when the
    /// response comes (a server need not wait for them) or the stream fails go out all the
    /// same, on a task of their own.
    async fn read_stream(
        self: &Arc<Self>,
        events: Events,
        out: &Outgoing,
        handlers: &Handlers,
    ) -> Result<Answer, Error> {
        let mut answering = Answering::new();
        let result = self
            .read_events(events, out, handlers, &mut answering)
            .await;
        if !answering.is_empty() {
            tokio::spawn(async move { while answering.next().await.is_some() {} });
        }
        result
    }

    async fn read_events(
        self: &Arc<Self>,
        mut events: Events,
        out: &Outgoing,
        handlers: &Handlers,
        answering: &mut Answering,
    ) -> Result<Answer, Error> {
        let mut last_id: Option<String> = None;
        let mut retry = DEFAULT_RETRY;
        let mut idle_resumptions = 0;
        loop {
            let event = tokio::select! {
                event = events.next() => event,
                Some(()) = answering.next(), if !answering.is_empty() => continue,
            };
            let event = match event {
                Some(Ok(event)) => event,
                // Resuming would only replay the same event.
                Some(Err(Broken::TooLong(TooLong { limit }))) => {
                    return Err(Error::EventTooLong {
                        method: out.method.clone(),
                        limit,
                    })
                }
                ended => {
                    // The stream ended, or broke, before the response.
                    let Some(resume_from) = last_id.clone() else {
                        return Err(match ended {
                            Some(Err(Broken::Network(source))) => self.network(&out.method, source),
                            _ => Error::StreamEnded {
                                method: out.method.clone(),
                            },
                        });
                    };
                    if idle_resumptions == MAX_IDLE_RESUMPTIONS {
                        return Err(Error::StreamEnded {
                            method: out.method.clone(),
                        });
                    }
                    idle_resumptions += 1;
                    tokio::time::sleep(retry).await;
                    events = self.resume(out, &resume_from).await?;
                    continue;
                }
            };
            idle_resumptions = 0;
            if let Some(id) = event.id {
                last_id = Some(id);
            }
            if let Some(ms) = event.retry {
                retry = Duration::from_millis(ms);
            }
            if event.data.trim().is_empty() {
                continue;
            }
            let message = serde_json::from_str::<Value>(&event.data)
                .map_err(|e| Malformed::new("an SSE event", e))
                .and_then(Incoming::parse)
                .map_err(|source| Error::Malformed {
                    method: out.method.clone(),
                    source,
                })?;
            match message {
                Incoming::Response { id, outcome } if id.as_ref() == Some(&out.id) => {
                    return Ok(outcome)
                }
                Incoming::Response { id, .. } => {
                    tracing::debug!(?id, "a response for another request on the stream");
                }
                Incoming::Request { id, method, params } => {
                    let version = protocol_version(&out.headers);
                    answering.push(
                        self.clone()
                            .answer_server(
                                handlers.clone(),
                                id,
                                method,
                                params,
                                out.context.clone(),
                                version,
                            )
                            .boxed(),
                    );
                }
                Incoming::Notification { method, params } => handlers.notified(method, params),
            }
        }
    }

    /// Resumes a stream with a GET from `last_id`.
    async fn resume(&self, out: &Outgoing, last_id: &str) -> Result<Events, Error> {
        tracing::debug!(last_id, "resuming the response stream");
        let mut request = self
            .client
            .get(self.url.clone())
            .headers(self.extra.clone())
            .header(ACCEPT, "text/event-stream")
            .header("last-event-id", last_id);
        for (name, value) in protocol_version(&out.headers) {
            request = request.header(name, value);
        }
        if let Some(session) = self.session() {
            request = request.header(headers::SESSION_ID, session);
        }
        let response = request
            .send()
            .await
            .map_err(|source| self.network(&out.method, source))?;
        if let Some(refused) = Self::refused(&out.method, &response) {
            return Err(refused);
        }
        if !response.status().is_success() || !is_event_stream(&response) {
            return Err(Error::Http {
                method: out.method.clone(),
                status: response.status().as_u16(),
            });
        }
        Ok(events(response))
    }

    /// Answers a legacy server's request with the handlers and POSTs the answer back.
    async fn answer_server(
        self: Arc<Self>,
        handlers: Handlers,
        id: RequestId,
        method: String,
        params: Option<Value>,
        context: InputContext,
        version: Vec<(String, String)>,
    ) {
        let outcome = serve(&handlers, &method, params, &context).await;
        let answer = jsonrpc::response(&id, outcome);
        match self.post(&method, &answer, &version).await {
            Ok(r) if r.status().is_success() => {}
            Ok(r) => {
                tracing::warn!(%method, status = r.status().as_u16(), "the server refused our answer")
            }
            Err(e) => tracing::warn!(%method, error = %e, "could not send our answer"),
        }
    }

    async fn notify(
        &self,
        method: &str,
        message: Value,
        mcp: &[(String, String)],
    ) -> Result<(), Error> {
        let response = self.post(method, &message, mcp).await?;
        if let Some(refused) = Self::refused(method, &response) {
            return Err(refused);
        }
        if response.status().is_success() {
            Ok(())
        } else {
            Err(Error::Http {
                method: method.to_owned(),
                status: response.status().as_u16(),
            })
        }
    }

    async fn close(&self) {
        let Some(session) = self
            .session
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
        else {
            return;
        };
        let result = self
            .client
            .delete(self.url.clone())
            .headers(self.extra.clone())
            .header(headers::SESSION_ID, session)
            .send()
            .await;
        if let Err(e) = result {
            tracing::debug!(error = %e, "DELETE of the session failed");
        }
    }
}

/// The `MCP-Protocol-Version` header among `mcp`, for the requests that carry only it.
fn protocol_version(mcp: &[(String, String)]) -> Vec<(String, String)> {
    mcp.iter()
        .filter(|(name, _)| name == headers::PROTOCOL_VERSION)
        .cloned()
        .collect()
}

impl Endpoint {
    /// The standalone GET stream, if the server offers one.
    async fn open_stream(&self, version: ProtocolVersion) -> Option<Events> {
        let mut request = self
            .client
            .get(self.url.clone())
            .headers(self.extra.clone())
            .header(ACCEPT, "text/event-stream")
            .header(headers::PROTOCOL_VERSION, version.as_str());
        if let Some(session) = self.session() {
            request = request.header(headers::SESSION_ID, session);
        }
        let Ok(sent) = tokio::time::timeout(STREAM_OPEN_TIMEOUT, request.send()).await else {
            tracing::debug!("the standalone stream did not answer in time");
            return None;
        };
        match sent {
            Ok(r) if r.status().is_success() && is_event_stream(&r) => Some(events(r)),
            Ok(r) => {
                tracing::debug!(status = r.status().as_u16(), "no standalone stream");
                None
            }
            Err(e) => {
                tracing::debug!(error = %e, "the standalone stream failed to open");
                None
            }
        }
    }
}

/// The standalone stream's task: answers the server's requests, hands notifications to the
/// sink, and ends with the stream (it is not reopened).
async fn listen(
    endpoint: Arc<Endpoint>,
    handlers: Handlers,
    mut events: Events,
    version: ProtocolVersion,
) {
    const METHOD: &str = "GET stream";
    let context = InputContext::default();
    let version = vec![(
        headers::PROTOCOL_VERSION.to_owned(),
        version.as_str().to_owned(),
    )];
    let mut answering = FuturesUnordered::new();
    loop {
        let event = tokio::select! {
            event = events.next() => event,
            Some(()) = answering.next(), if !answering.is_empty() => continue,
        };
        let Some(Ok(event)) = event else {
            if let Some(Err(Broken::TooLong(e))) = event {
                tracing::warn!(METHOD, error = %e, "the standalone stream is dropped");
            }
            // The stream is over; the answers already begun still go out.
            while answering.next().await.is_some() {}
            return;
        };
        let message = serde_json::from_str::<Value>(&event.data)
            .ok()
            .map(Incoming::parse);
        match message {
            Some(Ok(Incoming::Request { id, method, params })) => {
                answering.push(endpoint.clone().answer_server(
                    handlers.clone(),
                    id,
                    method,
                    params,
                    context.clone(),
                    version.clone(),
                ))
            }
            Some(Ok(Incoming::Notification { method, params })) => {
                handlers.notified(method, params)
            }
            Some(_) if !event.data.trim().is_empty() => {
                tracing::debug!(METHOD, data = %event.data, "ignored on the standalone stream")
            }
            _ => {}
        }
    }
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.trim_start().starts_with("text/event-stream"))
}

/// The response's body as SSE events; the stream ends after its first error.
fn events(response: Response) -> Events {
    let mut parser = Parser::default();
    response
        .bytes_stream()
        .map(move |chunk| {
            chunk
                .map_err(Broken::Network)
                .and_then(|bytes| parser.push(&bytes).map_err(Broken::TooLong))
        })
        .scan(false, |failed, chunk| {
            let step = match chunk {
                _ if *failed => None,
                Ok(events) => Some(futures_util::stream::iter(events.into_iter().map(Ok)).boxed()),
                Err(e) => {
                    *failed = true;
                    Some(futures_util::stream::once(async move { Err(e) }).boxed())
                }
            };
            futures_util::future::ready(step)
        })
        .flatten()
        .boxed()
}
