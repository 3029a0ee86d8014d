//! The LegacyBridge actor: one per process. It holds, per session, the server-to-client
//! requests still waiting for the client, and hands each answer to the flow that asked.
//!
//! An answer nobody waits for (a stray id, a duplicate, a leg already timed out or
//! cancelled) is refused and changes nothing. An answer is kept by its flow until the flow
//! ends, so it is charged to the session's caller ([`figures::LEG_ANSWER`] and its size); one
//! that would pass a budget is refused and the leg goes on waiting.

use std::collections::HashMap;
use std::sync::Arc;

use actix::prelude::*;
use serde_json::Value;
use tokio::sync::oneshot;

use super::SessionId;
use crate::budget::{figures, Account, BudgetLimits, Charge, Ledger, Refusal};
use crate::protocol::jsonrpc::Response;
use crate::protocol::RequestId;

/// The client's answer to one leg: its `result`, or its `error` object.
pub type LegAnswer = Result<Value, Value>;

/// An answer as its leg receives it: with its charge, which the flow keeps until it ends.
pub(crate) type Delivered = (LegAnswer, Charge);

/// A leg waiting for its answer: where the answer goes, and who it is charged to.
#[derive(Debug)]
struct Waiting {
    answer: oneshot::Sender<Delivered>,
    account: Account,
}

/// The actor: per session, the legs still waiting for the client's answer, each with the
/// channel of the flow that sent it.
#[derive(Debug)]
pub struct LegacyBridge {
    pending: HashMap<SessionId, HashMap<RequestId, Waiting>>,
    ledger: Arc<Ledger>,
}

impl LegacyBridge {
    /// A bridge charging answers to `ledger`.
    pub fn new(ledger: Arc<Ledger>) -> Self {
        Self {
            pending: HashMap::new(),
            ledger,
        }
    }
}

impl Default for LegacyBridge {
    /// A bridge whose answers are charged to a ledger of their own, without limits.
    fn default() -> Self {
        Self::new(Ledger::new("bytes", BudgetLimits::UNLIMITED))
    }
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
    pub(crate) answer: oneshot::Sender<Delivered>,
    /// Who the answer is charged to: the session's caller.
    pub(crate) account: Account,
}

/// A response the client POSTed in `session`.
#[derive(Message)]
#[rtype(result = "Result<(), Unanswered>")]
pub(crate) struct Answer {
    pub(crate) session: SessionId,
    pub(crate) response: Response,
}

/// No leg with this id is waiting in this session.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("no request with id {0} is awaiting a response in this session")]
pub struct Stray(pub RequestId);

/// Why an answer reached no leg.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unanswered {
    /// No leg waits for it; nothing changes.
    #[error(transparent)]
    Stray(#[from] Stray),
    /// Keeping it would pass a budget; the leg goes on waiting.
    #[error("the answer was refused: {0}")]
    Budget(#[from] Refusal),
}

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
        self.pending.entry(msg.session).or_default().insert(
            msg.id,
            Waiting {
                answer: msg.answer,
                account: msg.account,
            },
        );
    }
}

impl Handler<Answer> for LegacyBridge {
    type Result = Result<(), Unanswered>;

    fn handle(&mut self, msg: Answer, _: &mut Self::Context) -> Self::Result {
        let Response { id, outcome } = msg.response;
        let Some(legs) = self.pending.get_mut(&msg.session) else {
            return Err(Stray(id).into());
        };
        let Some(waiting) = legs.get(&id) else {
            return Err(Stray(id).into());
        };
        let size = match &outcome {
            Ok(v) | Err(v) => figures::LEG_ANSWER + figures::json_size(v),
        };
        let charge = self.ledger.charge(&waiting.account, size)?;
        let waiting = legs.remove(&id).map(|w| w.answer);
        self.prune(&msg.session);
        match waiting {
            // The flow may have stopped since; the answer then reached no one.
            Some(tx) => tx.send((outcome, charge)).map_err(|_| Stray(id).into()),
            None => Err(Stray(id).into()),
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
    use crate::handler::Principal;
    use serde_json::json;

    fn account() -> Account {
        Account::new("t", &Principal::anonymous(), None)
    }

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
                account: account(),
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
        assert_eq!(
            rx.await.expect("answered").0,
            Ok(json!({"action": "accept"}))
        );
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
    async fn an_answer_over_the_budget_is_refused_and_the_leg_goes_on_waiting() {
        let limits = BudgetLimits {
            per_caller: 600,
            per_tenant: 600,
            process: 600,
        };
        let bridge = LegacyBridge::new(Ledger::new("bytes", limits)).start();
        let (tx, rx) = oneshot::channel();
        let expect = Expect {
            session: "s1".into(),
            id: RequestId::String("l1".into()),
            answer: tx,
            account: account(),
        };
        bridge.send(expect).await.expect("mailbox");
        let big = Response {
            id: RequestId::String("l1".into()),
            outcome: Ok(json!({"pad": "x".repeat(200)})),
        };
        let refused = bridge
            .send(Answer {
                session: "s1".into(),
                response: big,
            })
            .await
            .expect("mailbox");
        assert!(matches!(refused, Err(Unanswered::Budget(_))), "{refused:?}");
        assert_eq!(bridge.send(PendingLegs).await.expect("mailbox"), 1);
        let small = bridge
            .send(Answer {
                session: "s1".into(),
                response: response("l1"),
            })
            .await
            .expect("mailbox");
        assert_eq!(small, Ok(()));
        let (answer, charge) = rx.await.expect("answered");
        assert_eq!(answer, Ok(json!({"action": "accept"})));
        assert!(charge.amount() > figures::LEG_ANSWER);
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
                account: account(),
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
