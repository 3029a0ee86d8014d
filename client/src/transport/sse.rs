//! A Server-Sent Events parser, fed the bytes of a response as they arrive.
//!
//! Only what MCP uses: `data` (joined with newlines), `id` (the legacy wire's resumption
//! point), `retry` (how long to wait before resuming). Lines may end in LF, CRLF or CR;
//! comment lines (`:` keep-alives) are skipped. A block with an `id` or `retry` but no data
//! is still handed out, so the reader can record where the stream stands (the 2025-11-25
//! priming event is exactly that).
//!
//! The bytes held for one event (its current line and the data lines so far) are capped at
//! the parser's limit ([`MAX_MESSAGE_BYTES`] by default): a server that never ends a line or
//! an event gets [`TooLong`] instead of the client's memory.

use super::MAX_MESSAGE_BYTES;

/// One event held more bytes than the parser's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("an SSE event longer than {limit} bytes")]
pub(crate) struct TooLong {
    /// The limit.
    pub(crate) limit: usize,
}

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Event {
    /// The event's `data` lines, joined.
    pub(crate) data: String,
    /// Its `id`, if it set one.
    pub(crate) id: Option<String>,
    /// Its `retry`, in milliseconds.
    pub(crate) retry: Option<u64>,
}

/// The parser's state between chunks.
#[derive(Debug)]
pub(crate) struct Parser {
    /// The most bytes one event may hold.
    limit: usize,
    /// The bytes the current event holds: its data lines and the line being read.
    held: usize,
    line: Vec<u8>,
    /// The previous byte was a CR: a following LF belongs to the same line end.
    after_cr: bool,
    data: Vec<String>,
    id: Option<String>,
    retry: Option<u64>,
    started: bool,
}

impl Default for Parser {
    fn default() -> Self {
        Self::with_limit(MAX_MESSAGE_BYTES)
    }
}

impl Parser {
    /// A parser holding at most `limit` bytes for one event.
    pub(crate) fn with_limit(limit: usize) -> Self {
        Self {
            limit,
            held: 0,
            line: Vec::new(),
            after_cr: false,
            data: Vec::new(),
            id: None,
            retry: None,
            started: false,
        }
    }

    /// Feeds `chunk`; returns the events it completes, or [`TooLong`] once an event holds
    /// more than the limit (the stream is then beyond use: the parser stays failed).
    pub(crate) fn push(&mut self, chunk: &[u8]) -> Result<Vec<Event>, TooLong> {
        let mut events = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' | b'\r' => {
                    self.after_cr = byte == b'\r';
                    let line = std::mem::take(&mut self.line);
                    if let Some(event) = self.line_done(&line) {
                        events.push(event);
                    }
                }
                _ => {
                    if self.held >= self.limit {
                        return Err(TooLong { limit: self.limit });
                    }
                    self.held += 1;
                    self.line.push(byte);
                }
            }
        }
        Ok(events)
    }

    fn line_done(&mut self, line: &[u8]) -> Option<Event> {
        if line.is_empty() {
            self.held = 0;
            if !self.started {
                return None;
            }
            self.started = false;
            return Some(Event {
                data: std::mem::take(&mut self.data).join("\n"),
                id: self.id.take(),
                retry: self.retry.take(),
            });
        }
        if line[0] == b':' {
            // A comment holds nothing for the event.
            self.held -= line.len();
            return None;
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = text.split_once(':').unwrap_or((&text, ""));
        let value = value.strip_prefix(' ').unwrap_or(value);
        match field {
            "data" => self.data.push(value.to_owned()),
            "id" if !value.contains('\0') => self.id = Some(value.to_owned()),
            "retry" => match value.parse() {
                Ok(ms) => self.retry = Some(ms),
                Err(_) => return None,
            },
            // `event` names the type; MCP sends only messages.
            _ => {}
        }
        self.started = true;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<Event> {
        Parser::default().push(input).expect("within the limit")
    }

    #[test]
    fn events_split_across_chunks_are_put_together() {
        let mut p = Parser::default();
        assert_eq!(p.push(b"data: {\"a\":"), Ok(Vec::new()));
        let events = p.push(b"1}\n\n").expect("within the limit");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "{\"a\":1}");
    }

    #[test]
    fn a_priming_event_carries_its_id_and_retry() {
        let events = all(b"id: event-1\nretry: 500\ndata: \n\n");
        assert_eq!(
            events,
            vec![Event {
                data: String::new(),
                id: Some("event-1".into()),
                retry: Some(500)
            }]
        );
    }

    #[test]
    fn comments_and_event_types_are_skipped_and_crlf_ends_lines() {
        let events = all(b": keep-alive\r\n\r\nevent: message\r\ndata: x\r\ndata: y\r\n\r\n");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "x\ny");
    }

    #[test]
    fn a_lone_cr_ends_a_line_too() {
        let events = all(b"data: z\r\r");
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].data, "z");
    }

    #[test]
    fn an_event_longer_than_the_limit_is_refused() {
        let mut p = Parser::with_limit(16);
        assert_eq!(p.push(b"data: 0123456789\n"), Ok(Vec::new()));
        assert_eq!(p.push(b"data: 0123456789\n\n"), Err(TooLong { limit: 16 }));
    }

    #[test]
    fn a_line_that_never_ends_is_refused_at_the_limit() {
        let mut p = Parser::with_limit(16);
        assert_eq!(p.push(&[b'x'; 16]), Ok(Vec::new()));
        assert_eq!(p.push(b"x"), Err(TooLong { limit: 16 }));
    }

    #[test]
    fn the_limit_is_per_event_not_per_stream() {
        let mut p = Parser::with_limit(16);
        let events: Vec<Event> = (0..4)
            .flat_map(|_| p.push(b"data: 0123456789\n\n").expect("each event fits"))
            .collect();
        assert_eq!(events.len(), 4);
    }
}
