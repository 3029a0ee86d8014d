//! The audit log's writer: the runtime's [`AuditSink`]. A call's record is queued as the
//! runtime hands it over, without waiting (a full queue drops the record and counts it, so the
//! audit never slows a request); a task of its own writes them to the store in batches, as
//! they came (the store writes each as the event it is), and purges what is older than the
//! retention.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use roundtrip_runtime::tenancy::{AuditSink, AuditTally, CallRecord};
use tokio_util::sync::CancellationToken;

use crate::model::{Millis, Slug};
use crate::store::Store;

/// How the audit log is written and kept.
#[derive(Debug, Clone)]
pub struct AuditSettings {
    /// Records waiting to be written; more are dropped (and counted). The queue and the
    /// writer's buffer each keep room for up to this many once a burst has filled them
    /// (a record is 120 bytes, its names shared with the registry's).
    pub queue: usize,
    /// The most records written in one transaction. Each transaction is a few round trips to
    /// SQLite's own thread: with 4,096 rather than 512 the writer's threads took about 2% less
    /// of a busy server's samples (BENCHMARKS.md "2026-12-05 (day)"). The price: a failed
    /// write loses that many records, and a transaction holds SQLite's write lock longer.
    pub batch: usize,
    /// How long a record may wait for its batch to fill.
    pub flush_every: Duration,
    /// How long records are kept.
    pub retention: Duration,
}

impl Default for AuditSettings {
    fn default() -> Self {
        AuditSettings {
            queue: 65_536,
            batch: 4096,
            flush_every: Duration::from_millis(200),
            retention: Duration::from_secs(30 * 86_400),
        }
    }
}

/// Counts of what the audit log did, for `/metrics`.
#[derive(Debug, Default)]
pub struct AuditCounts {
    /// Records written.
    pub written: AtomicU64,
    /// Records dropped because the queue was full, or came after the writer ended.
    pub dropped: AtomicU64,
    /// Records lost because the store failed to take their batch.
    pub failed: AtomicU64,
}

/// A handle on the queue: what the runtime records calls into.
#[derive(Debug, Clone)]
pub struct AuditLog {
    queue: Arc<Queue>,
    counts: Arc<AuditCounts>,
}

/// The records waiting for the writer, in the order they came, at most `capacity` of them.
///
/// A vector behind a lock, which the writer swaps out whole at each tick: a record costs its
/// caller a push under a lock that every worker shares and holds only for that. tokio's bounded `mpsc` took a permit and woke the
/// (absent) receiver on every send, and gave the permit back under its semaphore's lock on
/// every receive: its receiving side was 0.68% of a server's samples under echo load, this
/// one's take 0.34%. A push costs about the same either way, mostly a cache miss on the
/// queue's memory (BENCHMARKS.md, "2026-12-06 (afternoon)").
#[derive(Debug)]
struct Queue {
    waiting: Mutex<Waiting>,
    capacity: usize,
}

#[derive(Debug, Default)]
struct Waiting {
    records: Vec<CallRecord>,
    /// The writer has taken its last records: what comes now is dropped, not kept unread.
    closed: bool,
}

impl Queue {
    /// Everything queued, in `taken`'s place (which should be empty: its buffer is reused).
    fn take_into(&self, taken: &mut Vec<CallRecord>) {
        std::mem::swap(&mut self.lock().records, taken);
    }

    /// [`Queue::take_into`], the last time.
    fn close_into(&self, taken: &mut Vec<CallRecord>) {
        let mut waiting = self.lock();
        waiting.closed = true;
        std::mem::swap(&mut waiting.records, taken);
    }

    fn lock(&self) -> MutexGuard<'_, Waiting> {
        // A push, a swap or a flag set cannot leave the queue half-changed.
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl AuditLog {
    /// Starts the writer on the current tokio runtime; it writes to `store` until `stop`,
    /// then writes what is queued and ends.
    pub fn start(
        store: Arc<dyn Store>,
        settings: AuditSettings,
        stop: CancellationToken,
    ) -> AuditLog {
        let log = AuditLog::queue(settings.queue);
        let (queue, counts) = (log.queue.clone(), log.counts.clone());
        tokio::spawn(write(store, settings, queue, counts, stop));
        log
    }

    /// The queue alone, `capacity` records deep.
    fn queue(capacity: usize) -> AuditLog {
        let queue = Arc::new(Queue {
            waiting: Mutex::default(),
            capacity: capacity.max(1),
        });
        let counts = Arc::new(AuditCounts::default());
        AuditLog { queue, counts }
    }

    /// What it has done so far.
    pub fn counts(&self) -> &AuditCounts {
        &self.counts
    }
}

impl AuditSink for AuditLog {
    fn tally(&self) -> AuditTally {
        AuditTally {
            written: self.counts.written.load(Ordering::Relaxed),
            dropped: self.counts.dropped.load(Ordering::Relaxed),
            failed: self.counts.failed.load(Ordering::Relaxed),
        }
    }

    /// Queues the record as it is: the writer hands it to the store as it is, off the
    /// request's path.
    fn record(&self, record: CallRecord) {
        let mut waiting = self.queue.lock();
        if !waiting.closed && waiting.records.len() < self.queue.capacity {
            waiting.records.push(record);
        } else {
            drop(waiting);
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The writer: every `flush_every` it takes what is queued and writes it in batches of up to
/// `settings.batch`, and every hour purges old records. Nothing wakes it in between: a task
/// woken by every record would cost a thread switch per call on the request path
/// (BENCHMARKS.md, "the audit log's wake-ups"). It ends at `stop`, or once every [`AuditLog`]
/// is gone, after writing what is left; a record that comes after that is dropped and
/// counted.
async fn write(
    store: Arc<dyn Store>,
    settings: AuditSettings,
    queue: Arc<Queue>,
    counts: Arc<AuditCounts>,
    stop: CancellationToken,
) {
    let mut purge = tokio::time::interval(Duration::from_secs(3600));
    let mut tick = tokio::time::interval(settings.flush_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // The buffer the queue's records are swapped into; it goes back to the queue empty.
    let mut taken = Vec::new();
    loop {
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = purge.tick() => {
                let retention = i64::try_from(settings.retention.as_millis()).unwrap_or(i64::MAX);
                let before = Millis(Millis::now().0.saturating_sub(retention));
                if let Err(e) = store.purge_audit(before).await {
                    tracing::warn!(error = %e, "purging old audit records failed");
                }
            }
            _ = tick.tick() => {
                // With every log gone, nothing more can come: this take is the last.
                if Arc::strong_count(&queue) == 1 {
                    break;
                }
                queue.take_into(&mut taken);
                write_taken(&mut taken, &settings, store.as_ref(), &counts).await;
            }
        }
    }
    // What is queued is still written; what comes after is dropped, and counted.
    queue.close_into(&mut taken);
    write_taken(&mut taken, &settings, store.as_ref(), &counts).await;
}

/// Writes the records taken from the queue, `settings.batch` at a time, and empties `taken`.
async fn write_taken(
    taken: &mut Vec<CallRecord>,
    settings: &AuditSettings,
    store: &dyn Store,
    counts: &AuditCounts,
) {
    // The registry's slugs were checked when stored; any other is not written.
    let queued = taken.len();
    taken.retain(|record| Slug::is_slug(&record.tenant));
    let failed = (queued - taken.len()) as u64;
    counts.failed.fetch_add(failed, Ordering::Relaxed);
    for batch in taken.chunks(settings.batch.max(1)) {
        flush(store, batch, counts).await;
    }
    taken.clear();
}

async fn flush(store: &dyn Store, batch: &[CallRecord], counts: &AuditCounts) {
    let n = batch.len() as u64;
    match store.append_calls(batch).await {
        Ok(()) => counts.written.fetch_add(n, Ordering::Relaxed),
        Err(e) => {
            tracing::warn!(error = %e, records = n, "writing audit records failed; they are lost");
            counts.failed.fetch_add(n, Ordering::Relaxed)
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{SystemTime, UNIX_EPOCH};

    use roundtrip_runtime::tenancy::CallOutcome;

    use crate::audit::{AuditEvent, AuditFilter, AuditKind, AuditOutcome};

    fn call() -> CallRecord {
        CallRecord {
            tenant: Arc::from("acme"),
            principal: Arc::from("key:k1"),
            method: "tools/call",
            target: Some("echo".into()),
            outcome: CallOutcome::Error(-32602),
            round: 2,
            at: SystemTime::now(),
            latency: Duration::from_micros(1500),
        }
    }

    async fn memory_store() -> Arc<dyn Store> {
        let store = crate::store::SqlStore::open("sqlite::memory:")
            .await
            .expect("opens");
        store.migrate().await.expect("migrates");
        Arc::new(store)
    }

    /// Waits up to 5 s for `written` records; the tally then.
    async fn written(log: &AuditLog, written: u64) -> AuditTally {
        for _ in 0..500 {
            if log.tally().written >= written {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        log.tally()
    }

    /// Waits up to 5 s for the store to hold `count` of acme's events; those it holds then.
    async fn events(store: &Arc<dyn Store>, count: usize) -> Vec<AuditEvent> {
        let filter = AuditFilter {
            limit: 10,
            ..AuditFilter::default()
        };
        let mut events = Vec::new();
        for _ in 0..500 {
            events = store.audit("acme", &filter).await.expect("reads");
            if events.len() == count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        events
    }

    /// A writer whose second tick is an hour away, and which keeps every record: the first
    /// tick also purges, and a record at one of these tests' fixed times would be purged by
    /// the default retention once that time is more than 30 days ago.
    fn hourly(batch: usize) -> AuditSettings {
        AuditSettings {
            batch,
            flush_every: Duration::from_secs(3600),
            retention: Duration::MAX,
            ..AuditSettings::default()
        }
    }

    #[tokio::test]
    async fn a_tick_writes_everything_queued_one_full_batch_after_another() {
        let store = memory_store().await;
        // The writer has not run yet: its first tick finds ten records, batches of four.
        let log = AuditLog::start(store.clone(), hourly(4), CancellationToken::new());
        for _ in 0..10 {
            log.record(call());
        }
        assert_eq!(written(&log, 10).await.written, 10);
        let filter = AuditFilter {
            limit: 100,
            ..AuditFilter::default()
        };
        assert_eq!(store.audit("acme", &filter).await.expect("reads").len(), 10);
    }

    #[tokio::test]
    async fn records_queued_between_ticks_are_written_when_the_writer_stops() {
        let stop = CancellationToken::new();
        let log = AuditLog::start(memory_store().await, hourly(512), stop.clone());
        // Past the first tick, which comes at once; the next is an hour away.
        tokio::time::sleep(Duration::from_millis(50)).await;
        for _ in 0..3 {
            log.record(call());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(log.tally().written, 0, "written before the next tick");
        stop.cancel();
        assert_eq!(written(&log, 3).await.written, 3);
    }

    #[tokio::test]
    async fn once_every_log_is_gone_the_writer_writes_what_is_left() {
        let store = memory_store().await;
        let settings = AuditSettings {
            flush_every: Duration::from_millis(10),
            ..hourly(512)
        };
        let log = AuditLog::start(store.clone(), settings, CancellationToken::new());
        log.record(call());
        drop(log);
        assert_eq!(events(&store, 1).await.len(), 1);
    }

    #[tokio::test]
    async fn a_record_after_the_writer_stopped_is_dropped_and_counted() {
        let stop = CancellationToken::new();
        let log = AuditLog::start(memory_store().await, hourly(512), stop.clone());
        stop.cancel();
        // Recorded until one is dropped: those before the writer's last take are written.
        for _ in 0..500 {
            log.record(call());
            if log.tally().dropped > 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(log.tally().dropped, 1);
    }

    #[test]
    fn a_full_queue_drops_and_counts_instead_of_waiting() {
        let log = AuditLog::queue(2);
        for _ in 0..5 {
            log.record(call());
        }
        assert_eq!(log.tally().dropped, 3);
    }

    #[tokio::test]
    async fn a_call_is_written_as_an_event_with_its_outcome_code_round_and_latency() {
        let store = memory_store().await;
        let log = AuditLog::start(store.clone(), hourly(512), CancellationToken::new());
        log.record(CallRecord {
            at: UNIX_EPOCH + Duration::from_millis(1_765_000_000_123),
            ..call()
        });
        assert_eq!(written(&log, 1).await.written, 1);
        let filter = AuditFilter {
            limit: 10,
            ..AuditFilter::default()
        };
        let events = store.audit("acme", &filter).await.expect("reads");
        let [event] = events.as_slice() else {
            panic!("one event: {events:?}");
        };
        assert_eq!(event.tenant.as_str(), "acme");
        assert_eq!(
            (event.actor.as_str(), event.action.as_str()),
            ("key:k1", "tools/call")
        );
        assert_eq!(
            (event.kind, event.outcome),
            (AuditKind::Call, AuditOutcome::Error)
        );
        assert_eq!(event.error_code, Some(-32602));
        assert_eq!(event.round, Some(2));
        assert_eq!(event.latency_us, Some(1500));
        assert_eq!(event.target.as_deref(), Some("echo"));
        assert_eq!(event.at, Millis(1_765_000_000_123));
    }

    #[tokio::test]
    async fn a_cancelled_call_is_an_error_without_a_code_and_a_complete_one_has_none() {
        let store = memory_store().await;
        let log = AuditLog::start(store.clone(), hourly(512), CancellationToken::new());
        for outcome in [CallOutcome::Cancelled, CallOutcome::Complete] {
            log.record(CallRecord {
                outcome,
                target: None,
                ..call()
            });
        }
        assert_eq!(written(&log, 2).await.written, 2);
        let filter = AuditFilter {
            limit: 10,
            ..AuditFilter::default()
        };
        let events = store.audit("acme", &filter).await.expect("reads");
        let outcomes: Vec<_> = events
            .iter()
            .map(|e| (e.outcome, e.error_code, e.target.clone()))
            .collect();
        // Newest first.
        assert_eq!(
            outcomes,
            [
                (AuditOutcome::Complete, None, None),
                (AuditOutcome::Error, None, None)
            ]
        );
    }

    #[tokio::test]
    async fn a_record_whose_tenant_is_no_slug_is_counted_as_failed_not_written() {
        let log = AuditLog::start(memory_store().await, hourly(512), CancellationToken::new());
        log.record(CallRecord {
            tenant: Arc::from("Not A Slug"),
            ..call()
        });
        log.record(call());
        let tally = written(&log, 1).await;
        assert_eq!((tally.written, tally.failed), (1, 1));
    }

    #[tokio::test]
    async fn the_writer_purges_records_older_than_the_retention_when_it_starts() {
        let store = memory_store().await;
        let day = Duration::from_secs(86_400);
        let old = CallRecord {
            at: SystemTime::now() - 2 * day,
            target: Some("old".into()),
            ..call()
        };
        let recent = CallRecord {
            target: Some("recent".into()),
            ..call()
        };
        store.append_calls(&[old, recent]).await.expect("writes");
        let settings = AuditSettings {
            retention: day,
            ..hourly(512)
        };
        let _log = AuditLog::start(store.clone(), settings, CancellationToken::new());
        let targets: Vec<_> = events(&store, 1)
            .await
            .into_iter()
            .map(|e| e.target)
            .collect();
        assert_eq!(targets, [Some("recent".to_string())]);
    }
}
