//! File descriptors: the process's limit (`RLIMIT_NOFILE`), read at start, and the check that
//! keeps `headroom` of them free for ordinary requests and `/healthz` by refusing new
//! long-lived streams (listen streams, legacy GET streams) before the limit is near.

use std::path::Path;

use crate::budget::refusal::RETRY_AFTER;
use crate::protocol::{ErrorCode, McpError};

/// The process's descriptor limit and the headroom long-lived streams must leave.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Descriptors {
    /// The soft `RLIMIT_NOFILE`; `None` when it cannot be read (not Linux) or is unlimited:
    /// then no stream is refused for it.
    limit: Option<u64>,
    headroom: u64,
}

impl Descriptors {
    /// The limit of this process, read now from `/proc/self/limits`.
    pub(crate) fn of_this_process(headroom: u64) -> Self {
        let limit = std::fs::read_to_string("/proc/self/limits")
            .ok()
            .and_then(|s| open_files_limit(&s));
        if let Some(limit) = limit {
            tracing::info!(limit, headroom, "open-file limit read");
            if limit <= headroom {
                tracing::warn!(
                    limit,
                    headroom,
                    "the open-file limit leaves no room for long-lived streams"
                );
            }
        }
        Self { limit, headroom }
    }

    /// Refuses a new long-lived stream (-31503, HTTP 503) while fewer than `headroom`
    /// descriptors remain.
    pub(crate) fn room_for_stream(&self) -> Result<(), McpError> {
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let open = open_descriptors(Path::new("/proc/self/fd")).unwrap_or(0);
        if limit.saturating_sub(open) < self.headroom {
            tracing::warn!(
                open,
                limit,
                "long-lived stream refused: file descriptors low"
            );
            let ms = u64::try_from(RETRY_AFTER.as_millis()).unwrap_or(u64::MAX);
            return Err(McpError::new(
                ErrorCode::OverCapacity,
                "The server is low on file descriptors and opens no more long-lived streams; \
                 try again later",
            )
            .with_data(serde_json::json!({ "retryAfterMs": ms })));
        }
        Ok(())
    }
}

/// The soft limit of `Max open files` in `/proc/self/limits`; `None` for `unlimited`.
fn open_files_limit(limits: &str) -> Option<u64> {
    let line = limits.lines().find(|l| l.starts_with("Max open files"))?;
    line.trim_start_matches("Max open files")
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// How many descriptors the process has open.
fn open_descriptors(dir: &Path) -> Option<u64> {
    Some(std::fs::read_dir(dir).ok()?.count() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_soft_open_files_limit_is_read() {
        let limits = "Limit                     Soft Limit           Hard Limit           Units     \n\
                      Max open files            1024                 524288               files     \n";
        assert_eq!(open_files_limit(limits), Some(1024));
        assert_eq!(
            open_files_limit("Max open files  unlimited  unlimited  files"),
            None
        );
    }

    #[test]
    fn a_stream_is_refused_once_the_headroom_is_gone() {
        let open = open_descriptors(Path::new("/proc/self/fd")).expect("linux");
        let tight = Descriptors {
            limit: Some(open + 10),
            headroom: 20,
        };
        let e = tight.room_for_stream().expect_err("no headroom");
        assert_eq!(e.code, ErrorCode::OverCapacity);
        let roomy = Descriptors {
            limit: Some(open + 1_000),
            headroom: 20,
        };
        assert_eq!(roomy.room_for_stream(), Ok(()));
    }
}
