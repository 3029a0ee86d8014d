//! The answer to a request before a transport frames it: a [`Reply`], what became of it
//! ([`ReplyKind`]), and an accepted `subscriptions/listen` ([`Listen`]), which the transport
//! keeps open and renders each change through.

use std::collections::HashSet;
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::broadcast;

use super::stamp;
use crate::budget::{Account, Charge};
use crate::handler::{ListChanged, Tenant};
use crate::protocol::meta::SUBSCRIPTION_ID;
use crate::protocol::result::StampedResult;
use crate::protocol::{Era, McpError, Method, RequestId, ResultType};

/// The answer to a request, before the transport frames it.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A stamped result.
    Result(StampedResult),
    /// A JSON-RPC error answering the request.
    Error(McpError),
    /// `subscriptions/listen`: the transport streams. Boxed: a listen is rare and four times
    /// the size of a result, and every reply is moved several times on its way out.
    Listen(Box<Listen>),
    /// The client went away, or cancelled the request: nothing is sent.
    Cancelled,
}

/// What became of a request, as the span and the metrics count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReplyKind {
    Complete,
    InputRequired,
    Error,
    Listen,
    Cancelled,
}

impl ReplyKind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Complete => "complete",
            Self::InputRequired => "input_required",
            Self::Error => "error",
            Self::Listen => "listen",
            Self::Cancelled => "cancelled",
        }
    }
}

impl Reply {
    pub(crate) fn kind(&self) -> ReplyKind {
        match self {
            Reply::Result(r) if r.result_type() == ResultType::InputRequired => {
                ReplyKind::InputRequired
            }
            Reply::Result(_) => ReplyKind::Complete,
            Reply::Error(_) => ReplyKind::Error,
            Reply::Listen(_) => ReplyKind::Listen,
            Reply::Cancelled => ReplyKind::Cancelled,
        }
    }

    /// The work that was to produce the reply is gone (its task, or its session, stopped):
    /// an internal error.
    pub(crate) fn unavailable() -> Reply {
        Reply::Error(McpError::internal("Internal error: dispatcher unavailable"))
    }
}

/// An accepted `subscriptions/listen`: what was honoured and the tenant's change feed, with
/// whose stream it is. It carries its tenant and its account itself, so that a transport
/// keeps neither for every other request on the chance that it is a listen.
#[derive(Debug)]
pub(crate) struct Listen {
    pub(crate) subscription_id: RequestId,
    pub(crate) events: broadcast::Receiver<ListChanged>,
    /// The tenant whose changes it follows.
    pub(crate) tenant: Arc<Tenant>,
    /// Who the open stream is charged to.
    pub(crate) account: Account,
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: HashSet<String>,
    /// What the open stream is charged (its count, its bytes): given back when it closes.
    held: Vec<Charge>,
}

/// What a listen stream follows, as `subscriptions/listen` asked and the tenant honours.
#[derive(Debug, Default)]
pub(crate) struct Following {
    pub(crate) tools: bool,
    pub(crate) prompts: bool,
    pub(crate) resources: bool,
    pub(crate) uris: HashSet<String>,
}

impl Listen {
    pub(crate) fn new(
        subscription_id: RequestId,
        tenant: Arc<Tenant>,
        account: Account,
        following: Following,
    ) -> Self {
        let Following {
            tools,
            prompts,
            resources,
            uris,
        } = following;
        Self {
            subscription_id,
            events: tenant.subscribe(),
            tenant,
            account,
            tools,
            prompts,
            resources,
            uris,
            held: Vec::new(),
        }
    }

    /// The resource URIs the stream follows.
    pub(crate) fn uris(&self) -> impl Iterator<Item = &str> {
        self.uris.iter().map(String::as_str)
    }

    /// Keeps `charge` for as long as the stream: dropped with it.
    pub(crate) fn hold(&mut self, charge: Charge) {
        self.held.push(charge);
    }

    /// `notifications/subscriptions/acknowledged`, naming exactly what will be delivered.
    pub(crate) fn acknowledgement(&self) -> (&'static str, Value) {
        let mut honoured = Map::new();
        if self.tools {
            honoured.insert("toolsListChanged".into(), json!(true));
        }
        if self.prompts {
            honoured.insert("promptsListChanged".into(), json!(true));
        }
        if self.resources {
            honoured.insert("resourcesListChanged".into(), json!(true));
        }
        if !self.uris.is_empty() {
            let mut uris: Vec<_> = self.uris.iter().collect();
            uris.sort();
            honoured.insert("resourceSubscriptions".into(), json!(uris));
        }
        (
            "notifications/subscriptions/acknowledged",
            json!({ "notifications": honoured, "_meta": self.meta() }),
        )
    }

    /// The notification for `event`, if the subscriber asked for it.
    pub(crate) fn render(&self, event: &ListChanged) -> Option<(&'static str, Value)> {
        let params = match event {
            ListChanged::Tools if self.tools => json!({ "_meta": self.meta() }),
            ListChanged::Prompts if self.prompts => json!({ "_meta": self.meta() }),
            ListChanged::Resources if self.resources => json!({ "_meta": self.meta() }),
            ListChanged::ResourceUpdated(uri) if self.uris.contains(uri) => {
                json!({ "uri": uri, "_meta": self.meta() })
            }
            _ => return None,
        };
        Some((event.notification_method(), params))
    }

    /// The result that closes the stream gracefully (the server stops, or its input ended).
    pub(crate) fn closing_result(&self, server_info: &Value) -> Map<String, Value> {
        let mut out = Map::new();
        out.insert("_meta".into(), self.meta());
        let _ = stamp::stamp(
            &Method::SubscriptionsListen,
            &mut out,
            Era::Modern,
            server_info,
        );
        out
    }

    fn meta(&self) -> Value {
        json!({ SUBSCRIPTION_ID: self.subscription_id })
    }
}
