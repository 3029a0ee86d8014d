//! The handlers a user registers to answer a server's questions: elicitation (form and URL
//! mode), sampling (with or without tools) and roots.
//!
//! Each is an async trait object, so a terminal client, a GUI or a test can plug in its own;
//! the `*_with` functions make one from a closure. The same handlers answer both eras: the
//! questions of a modern input-required result and the requests of a legacy session. What a
//! client declares (`_meta` client capabilities, `initialize` capabilities) is derived from
//! what is registered, and from nothing else.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use crate::error::HandlerError;
use crate::protocol::input::{
    CreateMessageResult, ElicitRequest, ElicitResult, InputRequest, InputResponse, ListRootsResult,
    Root, SamplingRequest,
};

/// Where a question comes from: the call that led to it, and its key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct InputContext {
    /// The method of the call (`tools/call`, ...), when known.
    pub method: Option<String>,
    /// The tool or prompt name, or the resource URI, when known.
    pub target: Option<String>,
    /// The question's key in the input-required result (`None` on a legacy session).
    pub key: Option<String>,
}

/// The elicitation modes a handler answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElicitationModes {
    /// Forms (`elicitation.form`).
    pub form: bool,
    /// URLs (`elicitation.url`).
    pub url: bool,
}

impl ElicitationModes {
    /// Forms only.
    pub const FORM: Self = Self {
        form: true,
        url: false,
    };
    /// URLs only.
    pub const URL: Self = Self {
        form: false,
        url: true,
    };
    /// Both.
    pub const BOTH: Self = Self {
        form: true,
        url: true,
    };
}

/// Answers `elicitation/create`.
#[async_trait]
pub trait ElicitationHandler: Send + Sync {
    /// The modes declared (with neither, `elicitation` is not declared at all); a question in
    /// another mode is a missing handler.
    fn modes(&self) -> ElicitationModes {
        ElicitationModes::FORM
    }

    /// Asks the user. Declining and cancelling are answers, not errors.
    async fn elicit(
        &self,
        request: ElicitRequest,
        context: &InputContext,
    ) -> Result<ElicitResult, HandlerError>;
}

/// Answers `sampling/createMessage`.
#[async_trait]
pub trait SamplingHandler: Send + Sync {
    /// Declares `sampling.tools`: the model may be offered tools.
    fn supports_tools(&self) -> bool {
        false
    }

    /// Samples the client's model.
    async fn sample(
        &self,
        request: SamplingRequest,
        context: &InputContext,
    ) -> Result<CreateMessageResult, HandlerError>;
}

/// Answers `roots/list`.
#[async_trait]
pub trait RootsHandler: Send + Sync {
    /// The client's roots.
    async fn roots(&self, context: &InputContext) -> Result<Vec<Root>, HandlerError>;
}

/// A fixed list of roots.
#[async_trait]
impl RootsHandler for Vec<Root> {
    async fn roots(&self, _context: &InputContext) -> Result<Vec<Root>, HandlerError> {
        Ok(self.clone())
    }
}

/// An [`ElicitationHandler`] made from a closure; see [`elicit_with`].
pub struct ElicitWith<F> {
    modes: ElicitationModes,
    f: F,
}

/// An elicitation handler answering `modes` with `f`.
pub fn elicit_with<F, Fut>(modes: ElicitationModes, f: F) -> ElicitWith<F>
where
    F: Fn(ElicitRequest, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ElicitResult, HandlerError>> + Send,
{
    ElicitWith { modes, f }
}

#[async_trait]
impl<F, Fut> ElicitationHandler for ElicitWith<F>
where
    F: Fn(ElicitRequest, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<ElicitResult, HandlerError>> + Send,
{
    fn modes(&self) -> ElicitationModes {
        self.modes
    }

    async fn elicit(
        &self,
        request: ElicitRequest,
        context: &InputContext,
    ) -> Result<ElicitResult, HandlerError> {
        (self.f)(request, context.clone()).await
    }
}

/// A [`SamplingHandler`] made from a closure; see [`sample_with`].
pub struct SampleWith<F> {
    tools: bool,
    f: F,
}

/// A sampling handler answering with `f`; `tools` declares `sampling.tools`.
pub fn sample_with<F, Fut>(tools: bool, f: F) -> SampleWith<F>
where
    F: Fn(SamplingRequest, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<CreateMessageResult, HandlerError>> + Send,
{
    SampleWith { tools, f }
}

#[async_trait]
impl<F, Fut> SamplingHandler for SampleWith<F>
where
    F: Fn(SamplingRequest, InputContext) -> Fut + Send + Sync,
    Fut: Future<Output = Result<CreateMessageResult, HandlerError>> + Send,
{
    fn supports_tools(&self) -> bool {
        self.tools
    }

    async fn sample(
        &self,
        request: SamplingRequest,
        context: &InputContext,
    ) -> Result<CreateMessageResult, HandlerError> {
        (self.f)(request, context.clone()).await
    }
}

impl<F> fmt::Debug for ElicitWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElicitWith")
            .field("modes", &self.modes)
            .finish()
    }
}

impl<F> fmt::Debug for SampleWith<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SampleWith")
            .field("tools", &self.tools)
            .finish()
    }
}

/// A notification from the server (progress, logs, list changes), as a
/// [`NotificationSink`] receives it.
#[derive(Debug, Clone, PartialEq)]
pub struct Notification {
    /// The method (`notifications/progress`, ...).
    pub method: String,
    /// Its params.
    pub params: Option<Value>,
}

/// Where notifications go. Called on the task reading the response, so it should return
/// quickly.
pub type NotificationSink = Arc<dyn Fn(&Notification) + Send + Sync>;

/// `elicitation/create` in URL mode, as a missing handler names it.
pub(crate) const URL_ELICITATION: &str = "elicitation/create (url mode)";
/// `elicitation/create` in form mode, as a missing handler names it.
pub(crate) const FORM_ELICITATION: &str = "elicitation/create (form mode)";

/// Why a question went unanswered.
#[derive(Debug)]
pub(crate) enum Unanswered {
    /// No handler takes it; the label names the kind.
    Missing(&'static str),
    /// The handler failed.
    Failed(&'static str, HandlerError),
}

/// The registered handlers.
#[derive(Clone, Default)]
pub(crate) struct Handlers {
    pub(crate) elicitation: Option<Arc<dyn ElicitationHandler>>,
    pub(crate) sampling: Option<Arc<dyn SamplingHandler>>,
    pub(crate) roots: Option<Arc<dyn RootsHandler>>,
    pub(crate) notifications: Option<NotificationSink>,
}

impl fmt::Debug for Handlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handlers")
            .field("elicitation", &self.elicitation.as_ref().map(|h| h.modes()))
            .field(
                "sampling",
                &self.sampling.as_ref().map(|h| h.supports_tools()),
            )
            .field("roots", &self.roots.is_some())
            .field("notifications", &self.notifications.is_some())
            .finish()
    }
}

impl Handlers {
    /// Hands a notification to the sink, if there is one.
    pub(crate) fn notified(&self, method: String, params: Option<Value>) {
        tracing::debug!(%method, "notification from the server");
        if let Some(sink) = &self.notifications {
            sink(&Notification { method, params });
        }
    }

    /// The client capabilities the registered handlers declare.
    pub(crate) fn capabilities(&self) -> Map<String, Value> {
        let mut caps = Map::new();
        // A handler of no mode declares nothing: a bare `elicitation` would claim forms.
        if let Some(modes) = self
            .elicitation
            .as_ref()
            .map(|h| h.modes())
            .filter(|m| m.form || m.url)
        {
            let mut elicitation = Map::new();
            if modes.form {
                elicitation.insert("form".into(), json!({}));
            }
            if modes.url {
                elicitation.insert("url".into(), json!({}));
            }
            caps.insert("elicitation".into(), Value::Object(elicitation));
        }
        if let Some(h) = &self.sampling {
            let sampling = if h.supports_tools() {
                json!({"tools": {}})
            } else {
                json!({})
            };
            caps.insert("sampling".into(), sampling);
        }
        if self.roots.is_some() {
            caps.insert("roots".into(), json!({}));
        }
        caps
    }

    /// The label of `request`'s kind if no registered handler takes it.
    pub(crate) fn missing(&self, request: &InputRequest) -> Option<&'static str> {
        let taken = match request {
            InputRequest::Elicitation(ElicitRequest::Form(_)) => {
                self.elicitation.as_ref().is_some_and(|h| h.modes().form)
            }
            InputRequest::Elicitation(ElicitRequest::Url(_)) => {
                self.elicitation.as_ref().is_some_and(|h| h.modes().url)
            }
            InputRequest::Sampling(_) => self.sampling.is_some(),
            InputRequest::Roots => self.roots.is_some(),
        };
        (!taken).then(|| label(request))
    }

    /// Answers one question with its handler.
    pub(crate) async fn answer(
        &self,
        request: InputRequest,
        context: &InputContext,
    ) -> Result<InputResponse, Unanswered> {
        if let Some(kind) = self.missing(&request) {
            return Err(Unanswered::Missing(kind));
        }
        let kind = label(&request);
        let failed = |e| Unanswered::Failed(kind, e);
        match (request, &self.elicitation, &self.sampling, &self.roots) {
            (InputRequest::Elicitation(r), Some(h), _, _) => h
                .elicit(r, context)
                .await
                .map(InputResponse::Elicitation)
                .map_err(failed),
            (InputRequest::Sampling(r), _, Some(h), _) => h
                .sample(r, context)
                .await
                .map(InputResponse::Sampling)
                .map_err(failed),
            (InputRequest::Roots, _, _, Some(h)) => h
                .roots(context)
                .await
                .map(|roots| InputResponse::Roots(ListRootsResult { roots }))
                .map_err(failed),
            _ => Err(Unanswered::Missing(kind)),
        }
    }
}

fn label(request: &InputRequest) -> &'static str {
    match request {
        InputRequest::Elicitation(ElicitRequest::Form(_)) => FORM_ELICITATION,
        InputRequest::Elicitation(ElicitRequest::Url(_)) => URL_ELICITATION,
        other => other.method(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_all() -> Handlers {
        Handlers {
            elicitation: Some(Arc::new(elicit_with(
                ElicitationModes::BOTH,
                |_, _| async { Ok(ElicitResult::decline()) },
            ))),
            sampling: Some(Arc::new(sample_with(true, |_, _| async {
                Ok(CreateMessageResult::text("m", "t"))
            }))),
            roots: Some(Arc::new(vec![Root::new("file:///w", None)])),
            notifications: None,
        }
    }

    #[test]
    fn no_handlers_declare_no_capabilities() {
        assert!(Handlers::default().capabilities().is_empty());
    }

    #[test]
    fn capabilities_follow_the_registered_handlers() {
        assert_eq!(
            Value::Object(with_all().capabilities()),
            json!({"elicitation": {"form": {}, "url": {}}, "sampling": {"tools": {}}, "roots": {}})
        );
        let form_only = Handlers {
            elicitation: Some(Arc::new(elicit_with(
                ElicitationModes::FORM,
                |_, _| async { Ok(ElicitResult::cancel()) },
            ))),
            sampling: Some(Arc::new(sample_with(false, |_, _| async {
                Ok(CreateMessageResult::text("m", "t"))
            }))),
            ..Handlers::default()
        };
        assert_eq!(
            Value::Object(form_only.capabilities()),
            json!({"elicitation": {"form": {}}, "sampling": {}})
        );
    }

    #[test]
    fn an_elicitation_handler_of_no_mode_declares_no_elicitation() {
        let none = Handlers {
            elicitation: Some(Arc::new(elicit_with(
                ElicitationModes {
                    form: false,
                    url: false,
                },
                |_, _| async { Ok(ElicitResult::decline()) },
            ))),
            ..Handlers::default()
        };
        assert!(none.capabilities().is_empty(), "{:?}", none.capabilities());
    }

    #[test]
    fn a_url_question_for_a_form_only_handler_is_missing_its_handler() {
        let form_only = Handlers {
            elicitation: Some(Arc::new(elicit_with(
                ElicitationModes::FORM,
                |_, _| async { Ok(ElicitResult::cancel()) },
            ))),
            ..Handlers::default()
        };
        let url = InputRequest::from_method(
            "elicitation/create",
            Some(json!({"mode": "url", "message": "m", "url": "https://x.test"})),
        )
        .ok()
        .flatten()
        .expect("a URL elicitation");
        assert_eq!(form_only.missing(&url), Some(URL_ELICITATION));
        assert_eq!(form_only.missing(&InputRequest::Roots), Some("roots/list"));
    }

    #[tokio::test]
    async fn each_kind_reaches_its_handler() {
        let handlers = with_all();
        let roots = handlers
            .answer(InputRequest::Roots, &InputContext::default())
            .await
            .expect("answered");
        assert_eq!(
            roots,
            InputResponse::Roots(ListRootsResult {
                roots: vec![Root::new("file:///w", None)]
            })
        );
    }
}
