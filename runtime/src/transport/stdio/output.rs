//! The output side of stdio: one task owns stdout, so lines never interleave. Lines reach it
//! through a bounded channel (a sender waits while it is full, so answers never pile up in
//! memory), are written into a buffer, and the buffer is flushed whenever no further line is
//! waiting: one write per burst rather than per line, and nothing left unflushed while idle.

use tokio::io::{AsyncWrite, AsyncWriteExt, BufWriter};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Lines queued for the writer; beyond it senders wait.
const QUEUED_LINES: usize = 1024;
/// The write buffer.
const BUFFER_BYTES: usize = 64 * 1024;

/// Where the server's lines go: the sender, and the writer task, which ends once every sender
/// is dropped and says whether every line was written.
pub(super) fn start<W>(output: W) -> (mpsc::Sender<Vec<u8>>, JoinHandle<bool>)
where
    W: AsyncWrite + Unpin + 'static,
{
    let (tx, rx) = mpsc::channel(QUEUED_LINES);
    (tx, actix_rt::spawn(write_lines(rx, output)))
}

async fn write_lines<W: AsyncWrite + Unpin>(mut rx: mpsc::Receiver<Vec<u8>>, output: W) -> bool {
    let mut output = BufWriter::with_capacity(BUFFER_BYTES, output);
    while let Some(line) = rx.recv().await {
        let mut next = Some(line);
        while let Some(mut line) = next {
            line.push(b'\n');
            if output.write_all(&line).await.is_err() {
                tracing::warn!("stdout closed");
                return false;
            }
            next = rx.try_recv().ok();
        }
        if output.flush().await.is_err() {
            tracing::warn!("stdout closed");
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    #[actix_rt::test]
    async fn every_line_is_written_and_flushed_in_order() {
        let (server, mut client) = tokio::io::duplex(1 << 16);
        let (tx, writer) = start(server);
        for i in 0..3 {
            tx.send(format!("{i}").into_bytes())
                .await
                .expect("writer runs");
        }
        drop(tx);
        assert!(writer.await.expect("writer ends"));
        let mut written = String::new();
        client.read_to_string(&mut written).await.expect("readable");
        assert_eq!(written, "0\n1\n2\n");
    }

    #[actix_rt::test]
    async fn a_closed_output_is_reported() {
        let (server, client) = tokio::io::duplex(64);
        drop(client);
        let (tx, writer) = start(server);
        tx.send(b"lost".to_vec()).await.expect("queued");
        drop(tx);
        assert!(!writer.await.expect("writer ends"));
    }
}
