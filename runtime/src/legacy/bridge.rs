//! The LegacyBridge actor: one per process. It holds, per session, the server-to-client
//! requests still waiting for the client, and hands each answer to the flow that asked.
//!
//! An answer nobody waits for (a stray id, a duplicate, a leg already timed out or
//! cancelled) is refused and changes nothing.

use std::collections::HashMap;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use super::SessionId;
use crate::protocol::jsonrpc::Response;
use crate::protocol::RequestId;

/// The client's answer to one leg: its `result`, or its `error` object.
pub type LegAnswer = Result<Value, Value>;

/// The actor: per session, the legs still waiting for the client's answer, each with the
/// channel of the flow that sent it.
#[derive(Debug, Default)]
pub struct LegacyBridge {
    pending: HashMap<SessionId, HashMap<RequestId, oneshot::Sender<LegAnswer>>>,
}

impl Actor for LegacyBridge {
    type Context = Context<Self>;
}

/// Register a leg before it is sent, so its answer cannot arrive first.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Expect {
    pub(crate) session: SessionId,
    /// The id the leg is sent with, unique in its session.
    pub(crate) id: RequestId,
    /// Where the answer goes.
    pub(crate) answer: oneshot::Sender<LegAnswer>,
}

/// A response the client POSTed in `session`.
#[derive(Message)]
#[rtype(result = "Result<(), Stray>")]
pub(crate) struct Answer {
    pub(crate) session: SessionId,
    pub(crate) response: Response,
}

/// No leg with this id is waiting in this session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no request with id {0} is awaiting a response in this session")]
pub struct Stray(pub RequestId);

/// The leg is over (answered, timed out or cancelled): forget it.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct Forget {
    pub(crate) session: SessionId,
    pub(crate) id: RequestId,
}

/// The session ended: every leg it had waiting fails.
#[derive(Message)]
#[rtype(result = "()")]
pub(crate) struct ForgetSession(pub(crate) SessionId);

/// How many legs wait, in all sessions (for tests and metrics).
#[derive(Debug, Message)]
#[rtype(result = "usize")]
pub struct PendingLegs;

impl Handler<Expect> for LegacyBridge {
    type Result = ();

    fn handle(&mut self, msg: Expect, _: &mut Self::Context) {
        self.pending
            .entry(msg.session)
            .or_default()
            .insert(msg.id, msg.answer);
    }
}

impl Handler<Answer> for LegacyBridge {
    type Result = Result<(), Stray>;

    fn handle(&mut self, msg: Answer, _: &mut Self::Context) -> Self::Result {
        let Response { id, outcome } = msg.response;
        let waiting = self
            .pending
            .get_mut(&msg.session)
            .and_then(|legs| legs.remove(&id));
        self.prune(&msg.session);
        match waiting {
            // The flow may have stopped since; the answer then reached no one.
            Some(tx) => tx.send(outcome).map_err(|_| Stray(id)),
            None => Err(Stray(id)),
        }
    }
}

impl Handler<Forget> for LegacyBridge {
    type Result = ();

    fn handle(&mut self, msg: Forget, _: &mut Self::Context) {
        if let Some(legs) = self.pending.get_mut(&msg.session) {
            legs.remove(&msg.id);
        }
        self.prune(&msg.session);
    }
}

impl Handler<ForgetSession> for LegacyBridge {
    type Result = ();

    fn handle(&mut self, msg: ForgetSession, _: &mut Self::Context) {
        self.pending.remove(&msg.0);
    }
}

impl Handler<PendingLegs> for LegacyBridge {
    type Result = usize;

    fn handle(&mut self, _: PendingLegs, _: &mut Self::Context) -> usize {
        self.pending.values().map(HashMap::len).sum()
    }
}

impl LegacyBridge {
    fn prune(&mut self, session: &SessionId) {
        if self.pending.get(session).is_some_and(HashMap::is_empty) {
            self.pending.remove(session);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn response(id: &str) -> Response {
        Response {
            id: RequestId::String(id.into()),
            outcome: Ok(json!({"action": "accept"})),
        }
    }

    #[actix_rt::test]
    async fn an_answer_reaches_the_leg_that_waits_for_it_once() {
        let bridge = LegacyBridge::default().start();
        let session: SessionId = "s1".into();
        let (tx, rx) = oneshot::channel();
        bridge
            .send(Expect {
                session: session.clone(),
                id: RequestId::String("l1".into()),
                answer: tx,
            })
            .await
            .expect("mailbox");
        let first = bridge
            .send(Answer {
                session: session.clone(),
                response: response("l1"),
            })
            .await
            .expect("mailbox");
        assert_eq!(first, Ok(()));
        assert_eq!(rx.await.expect("answered"), Ok(json!({"action": "accept"})));
        let duplicate = bridge
            .send(Answer {
                session,
                response: response("l1"),
            })
            .await
            .expect("mailbox");
        assert!(duplicate.is_err());
    }

    #[actix_rt::test]
    async fn an_answer_in_another_session_is_stray() {
        let bridge = LegacyBridge::default().start();
        let (tx, _rx) = oneshot::channel();
        bridge
            .send(Expect {
                session: "s1".into(),
                id: RequestId::String("l1".into()),
                answer: tx,
            })
            .await
            .expect("mailbox");
        let other = bridge
            .send(Answer {
                session: "s2".into(),
                response: response("l1"),
            })
            .await
            .expect("mailbox");
        assert!(other.is_err());
        assert_eq!(bridge.send(PendingLegs).await.expect("mailbox"), 1);
    }
}
