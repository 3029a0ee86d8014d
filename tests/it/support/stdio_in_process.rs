//! The stdio server (`transport::stdio::serve`) run in the test's own process, for a tenant
//! handle and a principal the test holds: what the `roundtrip stdio` binary cannot give a
//! test (a tenant changed while it serves, a grant-limited caller). Lines in through a
//! channel, lines out through an in-memory pipe.

use std::sync::Arc;
use std::time::Duration;

use roundtrip_runtime::dispatch::RuntimeConfig;
use roundtrip_runtime::handler::{Principal, Tenant};
use roundtrip_runtime::transport::stdio::{self, Stdio};
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader, DuplexStream, Lines};
use tokio::sync::mpsc;

/// A stdio server serving `tenant` to `principal`, and its client's ends.
pub(crate) struct StdioInProcess {
    input: Option<mpsc::Sender<Vec<u8>>>,
    output: Lines<BufReader<DuplexStream>>,
}

impl StdioInProcess {
    /// Starts the server on the current actix System.
    pub(crate) fn start(tenant: Arc<Tenant>, principal: Principal) -> StdioInProcess {
        let (input, lines) = mpsc::channel(64);
        let (server_end, client_end) = tokio::io::duplex(1 << 16);
        let server = Stdio {
            tenant,
            principal,
            runtime: Arc::new(RuntimeConfig::default()),
            keys: None,
        };
        actix_rt::spawn(stdio::serve(server, lines, server_end));
        StdioInProcess {
            input: Some(input),
            output: BufReader::new(client_end).lines(),
        }
    }

    /// Sends one message, as one line.
    pub(crate) async fn send(&self, message: &Value) {
        let input = self.input.as_ref().expect("input open");
        let line = serde_json::to_vec(message).expect("serialisable");
        input.send(line).await.expect("the server reads its input");
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
}
