//! What a running request writes besides its answer: the messages it sends while pending
//! (progress, logs, the legacy shim's server-to-client requests), and a `subscriptions/listen`
//! stream's notifications.

use serde_json::Value;
use tokio::sync::{broadcast, mpsc};

use super::lines::Permit;
use crate::dispatch::{Listen, Reply};
use crate::handler::Cancellation;
use crate::handler::{OutgoingMessage, Tenant};
use crate::protocol::jsonrpc::notification_bytes;

/// Writes the request's messages until its reply is ready, then the ones queued before it.
///
/// The first server-to-client request (a legacy shim's elicitation or sampling) gives the
/// request's slot back: the call now waits for the client's answer, which is only read if the
/// reader goes on. Without it, `max_in_flight` such calls would stop the reader for good. The
/// session's own `legacy.max_requests_per_session` still bounds them.
pub(super) async fn pump(
    reply: impl std::future::Future<Output = Reply>,
    rx: Option<mpsc::Receiver<Box<OutgoingMessage>>>,
    out: &mpsc::Sender<Vec<u8>>,
    permit: &mut Option<Permit>,
) -> Reply {
    let Some(mut rx) = rx else {
        return reply.await;
    };
    let mut reply = std::pin::pin!(reply);
    loop {
        tokio::select! {
            biased;
            Some(message) = rx.recv() => {
                if message.id.is_some() {
                    permit.take();
                }
                let _ = out.send(message.to_bytes()).await;
            }
            r = &mut reply => {
                while let Ok(message) = rx.try_recv() {
                    let _ = out.send(message.to_bytes()).await;
                }
                return r;
            }
        }
    }
}

/// `subscriptions/listen` on stdio: the acknowledgement, then each honoured change, until
/// the client cancels it (then `None`: a cancelled request gets no response) or the input
/// ends (then its closing result).
pub(super) async fn follow(
    mut listen: Listen,
    tenant: &Tenant,
    cancel: &Cancellation,
    close: &Cancellation,
    out: &mpsc::Sender<Vec<u8>>,
) -> Option<Value> {
    let (method, params) = listen.acknowledgement();
    let _ = out.send(notification_bytes(method, &params)).await;
    loop {
        tokio::select! {
            _ = cancel.cancelled() => return None,
            _ = close.cancelled() => break,
            event = listen.events.recv() => match event {
                Ok(event) => {
                    if let Some((method, params)) = listen.render(&event) {
                        let _ = out.send(notification_bytes(method, &params)).await;
                    }
                }
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => break,
            },
        }
    }
    Some(Value::Object(
        listen.closing_result(tenant.view().server_info()),
    ))
}
