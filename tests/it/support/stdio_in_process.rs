//! The stdio server (`transport::stdio::serve`) run in the test's own process, for a tenant
//! handle and a principal the test holds: what the `roundtrip stdio` binary cannot give a
//! test (a tenant changed while it serves, a grant-limited caller, a slow lab tool). Lines in
//! through a pipe of the test's own (read by the server's reader thread, as stdin is), lines
//! out through an in-memory pipe.

use std::io::Read;
use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Duration;

use roundtrip_runtime::dispatch::RuntimeConfig;
use roundtrip_runtime::handler::{Principal, Tenant};
use roundtrip_runtime::transport::stdio::{self, Served, Stdio, StdioLimits};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream, Lines};

/// A stdio server serving `tenant` to `principal`, and its client's ends.
pub(crate) struct StdioInProcess {
    input: Option<std_mpsc::Sender<Vec<u8>>>,
    output: Lines<BufReader<DuplexStream>>,
    served: Option<actix_rt::task::JoinHandle<Served>>,
}

impl StdioInProcess {
    /// Starts the server on the current actix System, with the default limits.
    pub(crate) fn start(tenant: Arc<Tenant>, principal: Principal) -> StdioInProcess {
        Self::start_with(tenant, principal, StdioLimits::default())
    }

    /// Starts the server with `limits`.
    pub(crate) fn start_with(
        tenant: Arc<Tenant>,
        principal: Principal,
        limits: StdioLimits,
    ) -> StdioInProcess {
        let (input, lines) = std_mpsc::channel();
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let server = Stdio {
            tenant,
            principal,
            runtime: Arc::new(RuntimeConfig::default()),
            keys: None,
            limits,
        };
        let served = actix_rt::spawn(stdio::serve(server, Pipe::new(lines), server_end));
        StdioInProcess {
            input: Some(input),
            output: BufReader::new(client_end).lines(),
            served: Some(served),
        }
    }

    /// Sends one message, as one line.
    pub(crate) async fn send(&self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("serialisable");
        line.push(b'\n');
        self.send_bytes(line);
    }

    /// Sends bytes as they are (no newline added).
    pub(crate) fn send_bytes(&self, bytes: Vec<u8>) {
        let input = self.input.as_ref().expect("input open");
        input.send(bytes).expect("the server reads its input");
    }

    /// The next line the server writes, which must be one JSON-RPC message.
    pub(crate) async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.output.next_line())
            .await
            .expect("a line within 10 s")
            .expect("output readable")
            .expect("output open");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// No line is written within `wait`.
    pub(crate) async fn silent_for(&mut self, wait: Duration) -> bool {
        tokio::time::timeout(wait, self.output.next_line())
            .await
            .is_err()
    }

    /// Sends `request` and returns the message that answers its id (what comes before it,
    /// notifications, is skipped).
    pub(crate) async fn request(&mut self, request: &Value) -> Value {
        self.send(request).await;
        loop {
            let message = self.next().await;
            if message.get("id") == request.get("id") && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// Ends the input: the server drains and stops.
    pub(crate) fn close(&mut self) {
        self.input = None;
    }

    /// Ends the input and waits for the server to stop: how its run ended.
    pub(crate) async fn finish(&mut self) -> Served {
        self.close();
        let served = self.served.take().expect("not finished yet");
        tokio::time::timeout(Duration::from_secs(20), served)
            .await
            .expect("the server stops within 20 s")
            .expect("the server task completes")
    }
}

/// The test's end of the server's input: what is sent comes out as bytes, in order; the input
/// ends once the sender is dropped.
struct Pipe {
    chunks: std_mpsc::Receiver<Vec<u8>>,
    pending: Vec<u8>,
    at: usize,
}

impl Pipe {
    fn new(chunks: std_mpsc::Receiver<Vec<u8>>) -> Pipe {
        Pipe {
            chunks,
            pending: Vec::new(),
            at: 0,
        }
    }
}

impl Read for Pipe {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        while self.at == self.pending.len() {
            match self.chunks.recv() {
                Ok(chunk) => {
                    self.pending = chunk;
                    self.at = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.pending.len() - self.at);
        buf[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
