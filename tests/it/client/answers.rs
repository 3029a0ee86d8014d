//! Handlers for the client tests: every kind registered, each answering the same way every
//! time and recording what it was asked.

use std::sync::{Arc, Mutex};

use roundtrip_client::handler::{elicit_with, sample_with, ElicitationModes, InputContext};
use roundtrip_client::protocol::input::{
    CreateMessageResult, ElicitRequest, ElicitResult, FormElicitation, Root,
};
use roundtrip_client::{Client, ClientBuilder};
use serde_json::{json, Value};

/// What the handlers were asked, in order: `(kind, context)`, kind being `form`, `url`,
/// `sampling`, `sampling+tools` or `roots`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Asked(Arc<Mutex<Vec<(&'static str, InputContext)>>>);

impl Asked {
    fn record(&self, kind: &'static str, context: InputContext) {
        self.0
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push((kind, context));
    }

    /// The kinds asked, in order.
    pub(crate) fn kinds(&self) -> Vec<&'static str> {
        self.all().into_iter().map(|(k, _)| k).collect()
    }

    pub(crate) fn all(&self) -> Vec<(&'static str, InputContext)> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// The text every sampling answer carries.
pub(crate) const SAMPLED: &str = "Paris";
/// The root every roots answer lists.
pub(crate) const ROOT: &str = "file:///work/project";

/// An accepted form with `content`.
pub(crate) fn accept(content: Value) -> ElicitResult {
    ElicitResult::accept(content.as_object().cloned().unwrap_or_default())
}

/// A builder with every handler registered: forms answered by `form`, URLs accepted,
/// sampling answered [`SAMPLED`] (tools declared), roots [`ROOT`].
pub(crate) fn answering(
    asked: &Asked,
    form: impl Fn(&FormElicitation) -> ElicitResult + Send + Sync + 'static,
) -> ClientBuilder {
    let (a, s, r) = (asked.clone(), asked.clone(), asked.clone());
    Client::builder()
        .client_info("roundtrip-it", "0.0.0")
        .elicitation(elicit_with(
            ElicitationModes::BOTH,
            move |request, context| {
                let answer = match &request {
                    ElicitRequest::Form(f) => {
                        a.record("form", context);
                        form(f)
                    }
                    ElicitRequest::Url(_) => {
                        a.record("url", context);
                        ElicitResult::accept_url()
                    }
                };
                async move { Ok(answer) }
            },
        ))
        .sampling(sample_with(true, move |request, context| {
            s.record(
                if request.uses_tools() {
                    "sampling+tools"
                } else {
                    "sampling"
                },
                context,
            );
            async move { Ok(CreateMessageResult::text("test-model", SAMPLED)) }
        }))
        .roots(RecordedRoots(r))
}

/// A form answer: accept with `{"name": name}`.
pub(crate) fn named(name: &'static str) -> impl Fn(&FormElicitation) -> ElicitResult {
    move |_| accept(json!({"name": name}))
}

#[derive(Debug)]
struct RecordedRoots(Asked);

#[async_trait::async_trait]
impl roundtrip_client::handler::RootsHandler for RecordedRoots {
    async fn roots(
        &self,
        context: &InputContext,
    ) -> Result<Vec<Root>, roundtrip_client::HandlerError> {
        self.0.record("roots", context.clone());
        Ok(vec![Root::new(ROOT, Some("project".into()))])
    }
}
