//! The input side of stdio: lines read on a plain thread, each only once a slot for it is
//! free, and none longer than the cap.
//!
//! Back-pressure is a count of slots ([`Slots`]): the reader takes one *before* it reads the
//! next line and hands it over with the line; the server keeps it for as long as the line's
//! request runs. With every slot taken the reader stops, so stdin (and the client writing it)
//! waits, and the server holds at most `max_in_flight` requests and as many lines.
//!
//! A line is read in the reader's buffer-sized chunks, never whole: past `max_line_bytes` its
//! bytes are counted and dropped up to its newline, and the server is told the line was too
//! long ([`Input::TooLong`]), so one huge line costs no memory and the next line is read as
//! usual.
//!
//! Why a thread: a tokio stdin read cannot be cancelled, and would hold the process open at
//! exit; a blocking read on a thread of its own costs nothing when the process ends.

use std::io::{BufRead, BufReader, ErrorKind, Read};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use tokio::sync::mpsc;

/// Bytes the reader asks the input for at once.
const READ_CHUNK: usize = 64 * 1024;

/// What one line of input was.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Input {
    /// The line, without its newline. Not checked: a line that is not UTF-8 or not JSON is
    /// the parser's to answer.
    Line(Vec<u8>),
    /// A line longer than the cap, dropped unread; how long it was (newline excluded).
    TooLong { bytes: u64 },
}

/// A line and the slot it holds.
#[derive(Debug)]
pub(super) struct Line {
    pub(super) input: Input,
    pub(super) permit: Permit,
}

/// A fixed number of slots, taken by the reader thread (blocking) and given back when their
/// [`Permit`] drops, on any thread.
#[derive(Debug)]
pub(super) struct Slots {
    free: Mutex<usize>,
    freed: Condvar,
}

impl Slots {
    pub(super) fn new(count: usize) -> Arc<Slots> {
        Arc::new(Slots {
            free: Mutex::new(count),
            freed: Condvar::new(),
        })
    }

    /// Waits until a slot is free and takes it. Blocks the thread: the reader's only.
    fn acquire(self: &Arc<Self>) -> Permit {
        let mut free = self.free.lock().unwrap_or_else(PoisonError::into_inner);
        while *free == 0 {
            free = self
                .freed
                .wait(free)
                .unwrap_or_else(PoisonError::into_inner);
        }
        *free -= 1;
        Permit(self.clone())
    }
}

/// One taken slot; dropping it frees the slot.
#[derive(Debug)]
pub(super) struct Permit(Arc<Slots>);

impl Drop for Permit {
    fn drop(&mut self) {
        *self.0.free.lock().unwrap_or_else(PoisonError::into_inner) += 1;
        self.0.freed.notify_one();
    }
}

/// Starts the reader thread on `input`: each line (or its being too long) with its slot,
/// until the input ends, fails, or the receiver is dropped.
pub(super) fn read_lines<R>(
    input: R,
    slots: Arc<Slots>,
    max_line_bytes: usize,
) -> mpsc::Receiver<Line>
where
    R: Read + Send + 'static,
{
    // A slot is taken before a line is sent, so the channel never holds more lines than
    // there are slots; its own bound is only a formality.
    let (tx, rx) = mpsc::channel(1);
    std::thread::spawn(move || {
        let mut input = BufReader::with_capacity(READ_CHUNK, input);
        loop {
            let permit = slots.acquire();
            let input = match next_line(&mut input, max_line_bytes) {
                Ok(Some(input)) => input,
                Ok(None) => break,
                Err(e) => {
                    tracing::error!(error = %e, "reading stdin failed");
                    break;
                }
            };
            if tx.blocking_send(Line { input, permit }).is_err() {
                break;
            }
        }
    });
    rx
}

/// Reads one line of at most `max` bytes (its newline not counted); `None` at the end of the
/// input. A last line without a newline is still a line.
fn next_line(input: &mut impl BufRead, max: usize) -> std::io::Result<Option<Input>> {
    let mut line = Vec::new();
    // Once over the cap: how many bytes the line has had, none of them kept.
    let mut dropped: Option<u64> = None;
    let mut seen_any = false;
    loop {
        let chunk = match input.fill_buf() {
            Ok(chunk) => chunk,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(match dropped {
                Some(bytes) => Some(Input::TooLong { bytes }),
                None if seen_any => Some(Input::Line(line)),
                None => None,
            });
        }
        seen_any = true;
        let (part, used, ended) = match chunk.iter().position(|b| *b == b'\n') {
            Some(at) => (&chunk[..at], at + 1, true),
            None => (chunk, chunk.len(), false),
        };
        match &mut dropped {
            Some(bytes) => *bytes += part.len() as u64,
            None if line.len() + part.len() > max => {
                dropped = Some((line.len() + part.len()) as u64);
                line = Vec::new();
            }
            None => line.extend_from_slice(part),
        }
        input.consume(used);
        if ended {
            return Ok(Some(match dropped {
                Some(bytes) => Input::TooLong { bytes },
                None => Input::Line(line),
            }));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn lines(text: &[u8], max: usize, chunk: usize) -> Vec<Input> {
        let mut input = BufReader::with_capacity(chunk, Cursor::new(text.to_vec()));
        std::iter::from_fn(|| next_line(&mut input, max).expect("a cursor reads")).collect()
    }

    #[test]
    fn lines_are_split_at_newlines_and_a_last_line_needs_none() {
        let got = lines(b"a\n\nbc\nd", 10, 2);
        let want = [&b"a"[..], b"", b"bc", b"d"].map(|l| Input::Line(l.to_vec()));
        assert_eq!(got, want);
        assert_eq!(lines(b"", 10, 2), []);
    }

    #[test]
    fn a_line_over_the_cap_is_reported_with_its_length_and_the_next_line_is_read() {
        for chunk in [1, 3, 64] {
            let got = lines(b"12345\n123456789\nok\n", 5, chunk);
            assert_eq!(
                got,
                [
                    Input::Line(b"12345".to_vec()),
                    Input::TooLong { bytes: 9 },
                    Input::Line(b"ok".to_vec())
                ],
                "chunk {chunk}"
            );
        }
        assert_eq!(lines(b"123456", 5, 4), [Input::TooLong { bytes: 6 }]);
    }

    #[test]
    fn the_reader_takes_a_slot_before_each_line_and_waits_while_none_is_free() {
        let slots = Slots::new(2);
        let mut rx = read_lines(Cursor::new(b"1\n2\n3\n".to_vec()), slots, 10);
        let first = rx.blocking_recv().expect("line 1");
        let _second = rx.blocking_recv().expect("line 2");
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(
            rx.try_recv().is_err(),
            "a third line while both slots are held"
        );
        drop(first);
        let third = rx.blocking_recv().expect("line 3 once a slot is free");
        assert_eq!(third.input, Input::Line(b"3".to_vec()));
    }
}
