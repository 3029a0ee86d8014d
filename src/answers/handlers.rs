//! The answer sources as the client's handlers: every input request a server sends, in either
//! era, goes to [`AnswerSources::answer`] under its key, and the answer is read back as the
//! typed result the client sends.
//!
//! The client fulfils a round's requests concurrently; the sources take them one at a time
//! (one terminal, one question at a time), each on a thread that may block while a person
//! types. A legacy server's request has no key: there the method's name stands for it, so
//! `--answer elicitation/create=...` answers a legacy session's elicitation.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use roundtrip_client::handler::{
    ElicitationHandler, ElicitationModes, InputContext, RootsHandler, SamplingHandler,
};
use roundtrip_client::protocol::input::{
    CreateMessageResult, ElicitRequest, ElicitResult, ListRootsResult, Root, SamplingRequest,
};
use roundtrip_client::HandlerError;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::method::InputMethod;
use super::sources::AnswerSources;
use crate::terminal::Ask;

/// One [`AnswerSources`] shared by the three handlers of a client.
#[derive(Debug)]
pub struct Answering<A> {
    sources: Arc<Mutex<AnswerSources<A>>>,
    sampling_tools: bool,
}

impl<A> Clone for Answering<A> {
    fn clone(&self) -> Self {
        Answering {
            sources: Arc::clone(&self.sources),
            sampling_tools: self.sampling_tools,
        }
    }
}

/// The answer parsed as the result its method has; a mismatch is the handler's error.
#[derive(Debug, thiserror::Error)]
#[error("the answer to '{key}' is not a {method} result: {problem}")]
struct NotAResult {
    key: String,
    method: InputMethod,
    problem: serde_json::Error,
}

impl<A: Ask + Send + 'static> Answering<A> {
    /// Handlers answering from `sources`. `sampling_tools` declares `sampling.tools`: set it
    /// when whoever answers sampling can be offered tools (a sampling command can; a person
    /// typing a reply ignores them, which a model may also do).
    pub fn new(sources: AnswerSources<A>, sampling_tools: bool) -> Answering<A> {
        Answering {
            sources: Arc::new(Mutex::new(sources)),
            sampling_tools,
        }
    }

    /// See [`AnswerSources::can_answer`].
    pub fn can_answer(&self, method: InputMethod) -> bool {
        self.lock().can_answer(method)
    }

    // A panic while a person was asked poisons the lock; the sources hold no half-made
    // state across one answer, so the next request may still use them.
    fn lock(&self) -> std::sync::MutexGuard<'_, AnswerSources<A>> {
        self.sources
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    async fn answer<T: DeserializeOwned>(
        &self,
        context: &InputContext,
        method: InputMethod,
        params: Value,
    ) -> Result<T, HandlerError> {
        let key = context
            .key
            .clone()
            .unwrap_or_else(|| method.name().to_owned());
        let this = self.clone();
        let asked = key.clone();
        let answer =
            tokio::task::spawn_blocking(move || this.lock().answer(&asked, method.name(), &params))
                .await
                .map_err(HandlerError::new)?
                .map_err(HandlerError::new)?;
        serde_json::from_value(answer).map_err(|problem| {
            HandlerError::new(NotAResult {
                key,
                method,
                problem,
            })
        })
    }
}

#[async_trait]
impl<A: Ask + Send + 'static> ElicitationHandler for Answering<A> {
    fn modes(&self) -> ElicitationModes {
        ElicitationModes::BOTH
    }

    async fn elicit(
        &self,
        request: ElicitRequest,
        context: &InputContext,
    ) -> Result<ElicitResult, HandlerError> {
        self.answer(context, InputMethod::Elicitation, request.params())
            .await
    }
}

#[async_trait]
impl<A: Ask + Send + 'static> SamplingHandler for Answering<A> {
    fn supports_tools(&self) -> bool {
        self.sampling_tools
    }

    async fn sample(
        &self,
        request: SamplingRequest,
        context: &InputContext,
    ) -> Result<CreateMessageResult, HandlerError> {
        self.answer(context, InputMethod::Sampling, request.params)
            .await
    }
}

#[async_trait]
impl<A: Ask + Send + 'static> RootsHandler for Answering<A> {
    async fn roots(&self, context: &InputContext) -> Result<Vec<Root>, HandlerError> {
        let result: ListRootsResult = self
            .answer(context, InputMethod::Roots, Value::Null)
            .await?;
        Ok(result.roots)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answers::preset::{parse_preset, PresetAnswers};
    use crate::terminal::scripted::{Scripted, Step};
    use serde_json::json;

    fn answering(presets: &[&str], person: Option<Scripted>) -> Answering<Scripted> {
        let presets = presets
            .iter()
            .map(|p| parse_preset(p).expect("a preset"))
            .collect();
        let presets = PresetAnswers::new(presets).expect("presets");
        Answering::new(AnswerSources::new(presets, person), false)
    }

    fn keyed(key: &str) -> InputContext {
        InputContext {
            key: Some(key.into()),
            ..InputContext::default()
        }
    }

    fn form() -> ElicitRequest {
        let params = json!({"message": "Name?", "requestedSchema": {"type": "object",
            "properties": {"name": {"type": "string"}}, "required": ["name"]}});
        match roundtrip_client::protocol::input::InputRequest::from_method(
            "elicitation/create",
            Some(params),
        ) {
            Ok(Some(roundtrip_client::protocol::input::InputRequest::Elicitation(e))) => e,
            other => panic!("an elicitation: {other:?}"),
        }
    }

    #[tokio::test]
    async fn an_elicitation_is_answered_by_the_preset_under_its_key() {
        let handlers = answering(
            &[r#"user={"action":"accept","content":{"name":"Ada"}}"#],
            None,
        );
        let result = handlers
            .elicit(form(), &keyed("user"))
            .await
            .expect("an answer");
        assert_eq!(
            result,
            ElicitResult::accept(
                json!({"name": "Ada"})
                    .as_object()
                    .cloned()
                    .unwrap_or_default()
            )
        );
    }

    #[tokio::test]
    async fn a_legacy_request_without_a_key_is_answered_under_its_method_name() {
        let handlers = answering(&[r#"elicitation/create={"action":"decline"}"#], None);
        let result = handlers
            .elicit(form(), &InputContext::default())
            .await
            .expect("an answer");
        assert_eq!(result, ElicitResult::decline());
    }

    #[tokio::test]
    async fn the_person_is_asked_when_no_preset_answers() {
        let person = Scripted::new(vec![Step::Choose("Decline")]);
        let handlers = answering(&[], Some(person));
        let result = handlers
            .elicit(form(), &keyed("user"))
            .await
            .expect("an answer");
        assert_eq!(result, ElicitResult::decline());
    }

    #[tokio::test]
    async fn an_unanswerable_request_is_a_handler_error_naming_its_key() {
        let error = answering(&[], None)
            .elicit(form(), &keyed("user"))
            .await
            .expect_err("nobody answers");
        assert!(error.to_string().contains("'user'"), "{error}");
    }

    #[tokio::test]
    async fn a_preset_of_the_wrong_kind_is_a_handler_error() {
        let handlers = answering(&[r#"r={"roots":"none"}"#], None);
        let error = handlers.roots(&keyed("r")).await.expect_err("not roots");
        assert!(error.to_string().contains("roots/list"), "{error}");
    }

    #[tokio::test]
    async fn roots_come_from_the_root_uris() {
        let sources = AnswerSources::<Scripted>::new(PresetAnswers::default(), None)
            .with_roots(vec!["file:///work".into()]);
        let roots = Answering::new(sources, false)
            .roots(&keyed("roots"))
            .await
            .expect("roots");
        assert_eq!(roots, vec![Root::new("file:///work", None)]);
    }
}
