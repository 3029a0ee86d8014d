//! The legacy shim flow of the load driver: a 2025-11-25 session per client, and per
//! iteration a `tools/call` of `greet` without the modern envelope. The server's shim sends the
//! elicitation on the call's own SSE stream; the client answers it with a POST (202) and reads
//! the greeting from the same stream. Every step is checked: the leg's method, the 202, the
//! final response's id, its text, and that it carries no `resultType` (legacy results never
//! do).

use std::time::{Duration, Instant};

use actix_web::web::Bytes;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::flow::{
    self, CheckError, ResultTypeCheck, MRTR_GREETING, MRTR_KEY, MRTR_NAME, MRTR_TOOL,
};

/// The legacy revision the driver's sessions negotiate.
pub const LEGACY_VERSION: &str = "2025-11-25";

/// A legacy client's requests, through `awc` (it reads streamed SSE bodies).
pub(crate) struct LegacyHttp {
    http: awc::Client,
    url: String,
    authorization: Option<String>,
    timeout: Duration,
}

impl LegacyHttp {
    pub(crate) fn new(url: &str, authorization: Option<&str>, timeout: Duration) -> LegacyHttp {
        let http = awc::Client::builder()
            .timeout(timeout)
            .disable_redirects()
            .finish();
        LegacyHttp {
            http,
            url: url.to_owned(),
            authorization: authorization.map(str::to_owned),
            timeout,
        }
    }

    /// A POST to the endpoint with the headers every request carries (JSON in, JSON or SSE
    /// out, the credentials).
    pub(crate) fn post(&self) -> awc::ClientRequest {
        let request = self
            .http
            .post(&self.url)
            .insert_header(("content-type", "application/json"))
            .insert_header(("accept", "application/json, text/event-stream"));
        match &self.authorization {
            Some(authorization) => request.insert_header(("authorization", authorization.as_str())),
            None => request,
        }
    }

    /// A POST in `session` (`None`: the `initialize` that opens it).
    fn in_session(&self, session: Option<&str>) -> awc::ClientRequest {
        match session {
            Some(session) => self
                .post()
                .insert_header(("mcp-session-id", session))
                .insert_header(("mcp-protocol-version", LEGACY_VERSION)),
            None => self.post(),
        }
    }

    /// Opens a session: its `Mcp-Session-Id`.
    pub(crate) async fn initialize(&self) -> Result<String, CheckError> {
        let response = self
            .in_session(None)
            .send_body(initialize_body())
            .await
            .map_err(|e| CheckError::Transport(e.to_string()))?;
        if response.status().as_u16() != 200 {
            return Err(CheckError::Status(response.status().as_u16()));
        }
        response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
            .ok_or_else(|| CheckError::Body("initialize without an Mcp-Session-Id".to_owned()))
    }

    /// One shim flow of `greet` (request `id`) in `session`, its elicitation answered after
    /// `hold`, every step checked; how long the call (up to its elicitation) and the answer
    /// each took.
    pub(crate) async fn call(
        &self,
        session: &str,
        id: u64,
        hold: Duration,
    ) -> Result<(Duration, Duration), CheckError> {
        let started = Instant::now();
        let response = self
            .in_session(Some(session))
            .timeout(self.timeout + hold)
            .send_body(call_body(id))
            .await
            .map_err(|e| CheckError::Transport(e.to_string()))?;
        if response.status().as_u16() != 200 {
            return Err(CheckError::Status(response.status().as_u16()));
        }
        let mut stream = SseReader::new(response);
        let leg_id = check_leg(&stream.next().await?)?;
        let call = started.elapsed();
        if !hold.is_zero() {
            actix_rt::time::sleep(hold).await;
        }
        let started = Instant::now();
        let answer = self
            .in_session(Some(session))
            .send_body(answer_body(&leg_id))
            .await
            .map_err(|e| CheckError::Transport(e.to_string()))?;
        if answer.status().as_u16() != 202 {
            return Err(CheckError::Status(answer.status().as_u16()));
        }
        let answered = started.elapsed();
        let last = stream.next().await?;
        flow::check_complete(200, &last, id, MRTR_GREETING, ResultTypeCheck::Absent)?;
        Ok((call, answered))
    }
}

pub fn initialize_body() -> String {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": LEGACY_VERSION,
        "capabilities": {"elicitation": {}},
        "clientInfo": {"name": "roundtrip-bench", "version": env!("CARGO_PKG_VERSION")}
    }})
    .to_string()
}

pub fn call_body(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{MRTR_TOOL}","arguments":{{}}}}}}"#
    )
}

pub fn answer_body(leg_id: &Value) -> String {
    json!({"jsonrpc": "2.0", "id": leg_id, "result": {"action": "accept", "content": {"name": MRTR_NAME}}})
        .to_string()
}

/// The id of the shim's elicitation, after checking it is one.
pub fn check_leg(data: &[u8]) -> Result<Value, CheckError> {
    let message: Value =
        serde_json::from_slice(data).map_err(|e| CheckError::Body(e.to_string()))?;
    if message.get("method").and_then(Value::as_str) != Some("elicitation/create") {
        return Err(CheckError::Body(format!(
            "expected the shim's elicitation/create for {MRTR_KEY}, got {message}"
        )));
    }
    message
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .cloned()
        .ok_or_else(|| CheckError::Body(format!("a server request without an id: {message}")))
}

/// Reads the JSON-RPC messages of an SSE body as they arrive.
pub struct SseReader<S> {
    body: S,
    buf: Vec<u8>,
}

impl<S, E> SseReader<S>
where
    S: futures_util::Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    pub fn new(body: S) -> Self {
        Self {
            body,
            buf: Vec::new(),
        }
    }

    /// The next message's `data` (keep-alive comments skipped); an error if the stream ends
    /// first.
    pub async fn next(&mut self) -> Result<Vec<u8>, CheckError> {
        loop {
            if let Some(end) = find(&self.buf, b"\n\n") {
                let event: Vec<u8> = self.buf.drain(..end + 2).collect();
                let data: Vec<&[u8]> = event
                    .split(|b| *b == b'\n')
                    .filter_map(|line| line.strip_prefix(b"data:"))
                    .map(<[u8]>::trim_ascii)
                    .collect();
                if data.is_empty() {
                    continue;
                }
                return Ok(data.join(&b'\n'));
            }
            match self.body.next().await {
                Some(Ok(chunk)) => self.buf.extend_from_slice(&chunk),
                Some(Err(e)) => return Err(CheckError::Transport(e.to_string())),
                None => {
                    return Err(CheckError::Body(
                        "the stream ended before the message".to_owned(),
                    ))
                }
            }
        }
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_util::stream;

    #[actix_rt::test]
    async fn the_reader_skips_comments_and_joins_split_chunks() {
        let chunks: Vec<Result<Bytes, std::convert::Infallible>> = vec![
            Ok(Bytes::from_static(
                b": ping\n\nevent: message\ndata: {\"a\"",
            )),
            Ok(Bytes::from_static(b":1}\n\n")),
        ];
        let mut reader = SseReader::new(stream::iter(chunks));
        assert_eq!(reader.next().await.expect("a message"), br#"{"a":1}"#);
        assert!(reader.next().await.is_err(), "the stream ended");
    }
}
