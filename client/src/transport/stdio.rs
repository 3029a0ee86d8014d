//! stdio: the server is a child process; one JSON-RPC message per line on its stdin and
//! stdout. Its stderr is left to the caller's `Command` (inherited by default).
//!
//! A reader task owns stdout: it hands each response to the request waiting for it, gives
//! notifications to the sink, and answers a legacy server's own requests with the handlers.
//! Nothing on the wire ties such a request to one of ours (SEP-2260 on stdio is timing), so
//! the handler is told the originating call only when exactly one is pending. When stdout
//! ends, every pending request fails with `Closed`.
//!
//! A line that is not UTF-8 or not a JSON-RPC message is logged and skipped, as is a line
//! longer than [`MAX_MESSAGE_BYTES`] (read to its end and thrown away, never held whole):
//! reading goes on, so the requests waiting are still answered.

use std::collections::HashMap;
use std::process::Stdio as Piped;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::oneshot;

use super::{serve, Answer, Outgoing, MAX_MESSAGE_BYTES};
use crate::error::Error;
use crate::handler::{Handlers, InputContext};
use crate::protocol::jsonrpc::{self, Incoming, RequestId};

/// Requests waiting for their answer.
#[derive(Debug, Default)]
struct Pending {
    waiting: HashMap<RequestId, (oneshot::Sender<Answer>, InputContext)>,
    /// stdout ended: nothing more will be answered.
    closed: bool,
}

type Shared = Arc<Mutex<Pending>>;

fn lock(pending: &Shared) -> std::sync::MutexGuard<'_, Pending> {
    pending.lock().unwrap_or_else(|p| p.into_inner())
}

/// A server running as a child process.
#[derive(Debug)]
pub(crate) struct Stdio {
    child: tokio::sync::Mutex<Child>,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    pending: Shared,
    reader: tokio::task::JoinHandle<()>,
}

impl Stdio {
    /// Starts `command` with piped stdin and stdout, and its reader task.
    pub(crate) fn spawn(mut command: Command, handlers: Handlers) -> Result<Self, Error> {
        let program = format!("{:?}", command.as_std().get_program());
        command
            .stdin(Piped::piped())
            .stdout(Piped::piped())
            .kill_on_drop(true);
        let mut child = command.spawn().map_err(|source| Error::Io {
            what: format!("cannot start {program}"),
            source,
        })?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(Error::Io {
                what: format!("{program} has no stdin or stdout"),
                source: std::io::Error::other("pipes not available"),
            });
        };
        let stdin = Arc::new(tokio::sync::Mutex::new(Some(stdin)));
        let pending = Shared::default();
        let reader = tokio::spawn(read(stdout, pending.clone(), stdin.clone(), handlers));
        Ok(Self {
            child: tokio::sync::Mutex::new(child),
            stdin,
            pending,
            reader,
        })
    }

    pub(crate) async fn request(&self, out: &Outgoing) -> Result<Answer, Error> {
        let closed = || Error::Closed {
            method: out.method.clone(),
        };
        let (tx, rx) = oneshot::channel();
        {
            let mut pending = lock(&self.pending);
            if pending.closed {
                return Err(closed());
            }
            pending
                .waiting
                .insert(out.id.clone(), (tx, out.context.clone()));
        }
        let _forget = Forget(&self.pending, &out.id);
        write_line(&self.stdin, &out.message)
            .await
            .map_err(|_| closed())?;
        rx.await.map_err(|_| closed())
    }

    pub(crate) async fn notify(&self, method: &str, message: Value) -> Result<(), Error> {
        write_line(&self.stdin, &message)
            .await
            .map_err(|_| Error::Closed {
                method: method.to_owned(),
            })
    }

    /// Closes stdin (a server exits on EOF), then waits briefly for the child before
    /// killing it.
    pub(crate) async fn close(&self) {
        self.stdin.lock().await.take();
        let mut child = self.child.lock().await;
        let exited = tokio::time::timeout(std::time::Duration::from_secs(2), child.wait()).await;
        if exited.is_err() {
            let _ = child.kill().await;
        }
    }
}

impl Drop for Stdio {
    fn drop(&mut self) {
        self.reader.abort();
    }
}

/// Removes a request from the pending map when its future ends, answered or not.
struct Forget<'a>(&'a Shared, &'a RequestId);

impl Drop for Forget<'_> {
    fn drop(&mut self) {
        lock(self.0).waiting.remove(self.1);
    }
}

async fn write_line(
    stdin: &tokio::sync::Mutex<Option<ChildStdin>>,
    message: &Value,
) -> std::io::Result<()> {
    let mut line = serde_json::to_vec(message)?;
    line.push(b'\n');
    let mut stdin = stdin.lock().await;
    let stdin = stdin
        .as_mut()
        .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::BrokenPipe))?;
    stdin.write_all(&line).await?;
    stdin.flush().await
}

/// What [`next_line`] read.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line, now in the buffer (without its line end).
    Whole,
    /// A line longer than the limit, read to its end and dropped.
    TooLong,
    /// The end of the stream.
    End,
}

/// Reads the next line into `line`, holding at most `limit` bytes of it: a longer one is
/// consumed to its `\n` without being kept. A trailing CR is dropped with the LF.
pub(crate) async fn next_line<R: AsyncBufRead + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
    limit: usize,
) -> std::io::Result<Line> {
    line.clear();
    let (mut read_any, mut too_long) = (false, false);
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            break;
        }
        read_any = true;
        let end = available.iter().position(|&b| b == b'\n');
        let part = &available[..end.unwrap_or(available.len())];
        if !too_long && line.len() + part.len() > limit {
            too_long = true;
            line.clear();
        } else if !too_long {
            line.extend_from_slice(part);
        }
        let used = end.map_or(available.len(), |i| i + 1);
        reader.consume(used);
        if end.is_some() {
            break;
        }
    }
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Ok(match (read_any, too_long) {
        (false, _) => Line::End,
        (true, true) => Line::TooLong,
        (true, false) => Line::Whole,
    })
}

/// The message one line of the server's stdout carries: `None` for a blank line, or one that
/// is not UTF-8 or not a JSON-RPC message (logged and skipped).
pub(crate) fn message_of(line: &[u8]) -> Option<Incoming> {
    let Ok(line) = std::str::from_utf8(line) else {
        tracing::warn!(
            bytes = line.len(),
            "a line that is not UTF-8 on the server's stdout"
        );
        return None;
    };
    if line.trim().is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(line).map(Incoming::parse) {
        Ok(Ok(message)) => Some(message),
        _ => {
            tracing::warn!(%line, "not a JSON-RPC message on the server's stdout");
            None
        }
    }
}

/// The reader task: every line of the server's stdout, each of at most [`MAX_MESSAGE_BYTES`].
async fn read(
    stdout: impl AsyncRead + Unpin,
    pending: Shared,
    stdin: Arc<tokio::sync::Mutex<Option<ChildStdin>>>,
    handlers: Handlers,
) {
    let limit = MAX_MESSAGE_BYTES;
    let mut stdout = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        match next_line(&mut stdout, &mut line, limit).await {
            Ok(Line::Whole) => {}
            Ok(Line::TooLong) => {
                tracing::warn!(limit, "a line longer than the limit on the server's stdout");
                continue;
            }
            Ok(Line::End) | Err(_) => break,
        }
        let Some(message) = message_of(&line) else {
            continue;
        };
        match message {
            Incoming::Response {
                id: Some(id),
                outcome,
            } => {
                if let Some((tx, _)) = lock(&pending).waiting.remove(&id) {
                    let _ = tx.send(outcome);
                }
            }
            Incoming::Response { id: None, outcome } => {
                tracing::warn!(?outcome, "a response without an id on stdout");
            }
            Incoming::Request { id, method, params } => {
                let context = {
                    let pending = lock(&pending);
                    let mut waiting = pending.waiting.values();
                    match (waiting.next(), waiting.next()) {
                        (Some((_, only)), None) => only.clone(),
                        _ => InputContext::default(),
                    }
                };
                let (handlers, stdin) = (handlers.clone(), stdin.clone());
                tokio::spawn(async move {
                    let outcome = serve(&handlers, &method, params, &context).await;
                    if let Err(e) = write_line(&stdin, &jsonrpc::response(&id, outcome)).await {
                        tracing::warn!(%method, error = %e, "could not send our answer");
                    }
                });
            }
            Incoming::Notification { method, params } => handlers.notified(method, params),
        }
    }
    let mut pending = lock(&pending);
    pending.closed = true;
    // Dropping the senders fails every waiting request with `Closed`.
    pending.waiting.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], limit: usize) -> Vec<(Line, Vec<u8>)> {
        let mut reader = BufReader::with_capacity(4, input);
        let mut line = Vec::new();
        let mut read = Vec::new();
        loop {
            let what = next_line(&mut reader, &mut line, limit)
                .await
                .expect("reads");
            if what == Line::End {
                return read;
            }
            read.push((what, line.clone()));
        }
    }

    #[tokio::test]
    async fn lines_end_at_lf_and_lose_a_trailing_cr() {
        let read = lines(b"one\r\ntwo\nthree", 64).await;
        let texts: Vec<&[u8]> = read.iter().map(|(_, l)| l.as_slice()).collect();
        assert_eq!(texts, [&b"one"[..], b"two", b"three"]);
        assert!(read.iter().all(|(what, _)| *what == Line::Whole));
    }

    #[tokio::test]
    async fn a_line_longer_than_the_limit_is_dropped_and_the_next_one_read() {
        let read = lines(b"0123456789abcdef\nok\n", 8).await;
        assert_eq!(
            read,
            [(Line::TooLong, Vec::new()), (Line::Whole, b"ok".to_vec())]
        );
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_is_kept() {
        let read = lines(b"12345678\n", 8).await;
        assert_eq!(read, [(Line::Whole, b"12345678".to_vec())]);
    }

    #[test]
    fn a_line_that_is_not_utf8_carries_no_message() {
        assert!(message_of(b"\xff\xfe{\"jsonrpc\":\"2.0\"}").is_none());
        assert!(message_of(br#"{"jsonrpc":"2.0","method":"notifications/x"}"#).is_some());
    }
}
