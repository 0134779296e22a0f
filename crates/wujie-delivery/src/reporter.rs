//! The reporter: every event read from an adapter goes to the durable outbox first, then to
//! the server in batches, exactly once in effect.
//!
//! Three stages run concurrently: the caller records items (awaiting a bounded channel, which
//! back-pressures a fast adapter instead of buffering without bound), the writer commits them to
//! the outbox in transactions, and the deliverer sends committed rows in order, in batches
//! (flushed as soon as rows are committed, up to a size cap), settling each row only after the
//! server acknowledged it. Retries are safe because the server dedupes on (source, source_key).

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::{Notify, mpsc, oneshot};
use tokio::task::JoinHandle;
use wujie_client::{ClientError, retry_pause};
use wujie_protocol::api::{FinishRun, IngestItem, IngestOutcome, IngestResult, RunStatus};
use wujie_store::outbox::{
    Outbox, OutboxError, OutboxPlace, OutboxRow, SpoolMark, TargetKind, now_ms,
};

use crate::next_step::{NextStep, Request};
use crate::server::DeliveryServer;

/// Most items in one request; about the point where larger batches stop paying off.
pub const BATCH_MAX_ITEMS: usize = 1000;
/// Most bytes of items in one request, well under the server's body limit.
pub const BATCH_MAX_BYTES: usize = 8 * 1024 * 1024;
/// Capacity of the recording channel, in batches of items.
const RECORD_QUEUE: usize = 16;
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);
/// How soon an append the outbox's write lock refused is tried again (each try already waited
/// for SQLite's busy timeout).
const BUSY_RETRY: Duration = Duration::from_millis(100);

#[derive(Debug, Clone)]
pub struct TargetRef {
    pub id: String,
    pub kind: TargetKind,
}

/// What the user is told about, as it happens (stderr in the CLI).
pub trait ReporterNotice: Send + Sync {
    fn refused(&self, item: &str, reason: &str);
    fn retrying(&self, error: &ClientError, pending: i64);
}

/// Latencies from "line read" to "acknowledged by the server", in whole milliseconds; fixed
/// memory whatever the number of events.
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    buckets: Vec<u64>,
    count: u64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            buckets: vec![0; 60_001],
            count: 0,
        }
    }
}

impl LatencyHistogram {
    fn record(&mut self, ms: i64) {
        let i = ms.clamp(0, self.buckets.len() as i64 - 1) as usize;
        self.buckets[i] += 1;
        self.count += 1;
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The q-quantile in ms (q in 0..=1); `None` when nothing was recorded.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((self.count as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (ms, n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return Some(ms as u64);
            }
        }
        Some(self.buckets.len() as u64 - 1)
    }
}

#[derive(Debug, Default, Clone)]
pub struct DeliveryStats {
    pub delivered: u64,
    pub refused: u64,
    pub first_read_ms: Option<i64>,
    pub last_ack_ms: Option<i64>,
    pub latency: LatencyHistogram,
}

/// How `close` ended.
#[derive(Debug)]
pub struct CloseSummary {
    pub stats: DeliveryStats,
    /// Rows still waiting (server unreachable until the drain deadline).
    pub pending: i64,
    pub failed: i64,
    pub finish_delivered: bool,
    /// Whether the outbox's file was found deleted or replaced at the end (and written back).
    pub outbox: OutboxPlace,
}

/// The outbox writer stopped on a failure, kept in [`Shared::writer_failed`].
struct WriterStopped;

enum WriterMsg {
    /// Rows for a target, and how far into the spool their lines go.
    Items(String, Vec<(String, i64)>, Option<SpoolMark>),
    Flush(oneshot::Sender<()>),
}

struct Shared {
    targets: Mutex<Vec<TargetState>>,
    /// Why the writer stopped, once it failed; what `record` and `flush` then answer.
    writer_failed: Mutex<Option<Arc<WriterFailure>>>,
    committed: Notify,
    /// Woken at each pass of the deliverer (every settlement is followed by one), for
    /// [`Reporter::wait_delivered`].
    delivery_pass: Notify,
    closing: std::sync::atomic::AtomicBool,
    /// The offset of the last spool mark committed (see [`Reporter::spool_committed`]).
    spool_committed: Arc<AtomicU64>,
}

struct TargetState {
    target: TargetRef,
    finish: Option<FinishRun>,
    finish_sent: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum ReporterError {
    #[error(transparent)]
    Outbox(#[from] OutboxError),
    /// One of the reporter's tasks panicked or was cancelled.
    #[error("the reporter stopped unexpectedly")]
    TaskFailed(#[source] tokio::task::JoinError),
    /// The outbox writer ended without saying why (it only does so once the reporter closes).
    #[error("the reporter stopped unexpectedly: the outbox writer is gone")]
    WriterGone,
    /// The outbox could not be written; nothing read after that is recorded.
    #[error(transparent)]
    WriterFailed(Arc<WriterFailure>),
}

/// Why the outbox writer stopped: what the next `record` or `flush` answers.
#[derive(Debug, thiserror::Error)]
pub enum WriterFailure {
    #[error(
        "no space left on device: cannot write the outbox {}; everything read before is kept \
         there. Free some space, then run `wujie local-run sync` to deliver it",
        .path.display()
    )]
    DiskFull {
        path: PathBuf,
        #[source]
        source: OutboxError,
    },
    #[error("cannot write the outbox {}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: OutboxError,
    },
}

pub struct Reporter {
    outbox: Outbox,
    tx: Option<mpsc::Sender<WriterMsg>>,
    writer: Option<JoinHandle<Result<(), WriterStopped>>>,
    deliverer: Option<JoinHandle<DeliveryStats>>,
    shared: Arc<Shared>,
}

impl Reporter {
    pub fn start(
        outbox: Outbox,
        client: impl DeliveryServer,
        first: TargetRef,
        notice: Arc<dyn ReporterNotice>,
    ) -> Reporter {
        let shared = Arc::new(Shared {
            targets: Mutex::new(vec![TargetState {
                target: first,
                finish: None,
                finish_sent: false,
            }]),
            writer_failed: Mutex::new(None),
            committed: Notify::new(),
            delivery_pass: Notify::new(),
            closing: std::sync::atomic::AtomicBool::new(false),
            spool_committed: Arc::new(AtomicU64::new(0)),
        });
        let (tx, rx) = mpsc::channel(RECORD_QUEUE);
        let writer = tokio::spawn(write_loop(outbox.clone(), rx, shared.clone()));
        let deliverer = tokio::spawn(deliver_loop(outbox.clone(), client, shared.clone(), notice));
        Reporter {
            outbox,
            tx: Some(tx),
            writer: Some(writer),
            deliverer: Some(deliverer),
            shared,
        }
    }

    /// Queue items read from the adapter for `target_id`; waits when the pipeline is full.
    pub async fn record(
        &self,
        target_id: &str,
        items: Vec<(IngestItem, i64)>,
    ) -> Result<(), ReporterError> {
        send_items(self.sender()?, &self.shared, target_id, items, None).await
    }

    /// [`Reporter::record`] for items decoded from a spool: they are committed together with
    /// `mark`, how far into the spool every line is handled once they are (with no items, the
    /// mark alone moves: the lines after it go to `target_id` now).
    pub async fn record_spooled(
        &self,
        target_id: &str,
        items: Vec<(IngestItem, i64)>,
        mark: SpoolMark,
    ) -> Result<(), ReporterError> {
        send_items(self.sender()?, &self.shared, target_id, items, Some(mark)).await
    }

    /// A handle that records items from another task, for what is made beside the adapter's
    /// reader (code snapshots). [`Reporter::close`] waits for every handle to be dropped: the
    /// outbox writer ends only when nothing can record any more.
    pub fn recorder(&self) -> Result<Recorder, ReporterError> {
        Ok(Recorder {
            tx: self.sender()?.clone(),
            shared: self.shared.clone(),
        })
    }

    /// How far into the spool every line is committed: the offset of the last mark committed
    /// (0 before any). The reader gives the file's space before it back.
    pub fn spool_committed(&self) -> Arc<AtomicU64> {
        self.shared.spool_committed.clone()
    }

    /// Wait until everything recorded so far is committed to the outbox.
    pub async fn flush(&self) -> Result<(), ReporterError> {
        let (ack, done) = oneshot::channel();
        self.sender()?
            .send(WriterMsg::Flush(ack))
            .await
            .map_err(|_| self.stopped())?;
        done.await.map_err(|_| self.stopped())
    }

    /// Wait until every row committed for `target_id` was acknowledged (or refused); false when
    /// that did not happen within `timeout` (server unreachable).
    pub async fn wait_delivered(&self, target_id: &str, timeout: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the look at the outbox, so that a pass of the deliverer in
            // between still wakes this.
            let pass = self.shared.delivery_pass.notified();
            tokio::pin!(pass);
            pass.as_mut().enable();
            if self.nothing_pending(target_id).await {
                return true;
            }
            if tokio::time::timeout_at(deadline, pass).await.is_err() {
                return self.nothing_pending(target_id).await;
            }
        }
    }

    /// Whether no row of `target_id` waits any more; when some do, the deliverer is woken.
    async fn nothing_pending(&self, target_id: &str) -> bool {
        match self.outbox.pending(target_id, 1).await {
            Ok(rows) if rows.is_empty() => true,
            Ok(_) => {
                self.shared.committed.notify_one();
                false
            }
            Err(_) => false,
        }
    }

    /// Send later events to a new target (a discussion promoted to a run); earlier rows of the
    /// old target are still delivered first.
    pub fn add_target(&self, target: TargetRef) {
        self.shared
            .targets
            .lock()
            .expect("targets lock")
            .push(TargetState {
                target,
                finish: None,
                finish_sent: false,
            });
        self.shared.committed.notify_one();
    }

    /// Record how a run ended; it is delivered once all of its events are.
    pub async fn finish(&self, target_id: &str, finish: FinishRun) -> Result<(), ReporterError> {
        self.flush().await?;
        let json = serde_json::to_string(&finish).expect("finish serializes");
        self.outbox.set_finish(target_id, &json).await?;
        if let Some(t) = self
            .shared
            .targets
            .lock()
            .expect("targets lock")
            .iter_mut()
            .find(|t| t.target.id == target_id)
        {
            t.finish = Some(finish);
        }
        self.shared.committed.notify_one();
        Ok(())
    }

    /// Stop accepting items and wait for delivery to drain. Gives up when no progress is made
    /// for `idle_timeout` (server unreachable); `progress` is called about once a second while
    /// rows remain.
    pub async fn close(
        mut self,
        idle_timeout: Duration,
        mut progress: impl FnMut(i64),
    ) -> Result<CloseSummary, ReporterError> {
        self.tx.take();
        if let Some(writer) = self.writer.take()
            && writer.await.map_err(ReporterError::TaskFailed)?.is_err()
        {
            return Err(self.stopped());
        }
        self.shared
            .closing
            .store(true, std::sync::atomic::Ordering::SeqCst);
        self.shared.committed.notify_one();
        let mut deliverer = self.deliverer.take().expect("deliverer runs until close");
        let ids: Vec<String> = self.target_ids();
        let started = Instant::now();
        let mut last_left = i64::MAX;
        let mut last_progress = Instant::now();
        let stats = loop {
            match tokio::time::timeout(Duration::from_millis(250), &mut deliverer).await {
                Ok(stats) => break stats.map_err(ReporterError::TaskFailed)?,
                Err(_) => {
                    let left = self.pending_of(&ids).await?;
                    if left < last_left {
                        last_left = left;
                        last_progress = Instant::now();
                    }
                    if started.elapsed() > Duration::from_secs(1) {
                        progress(left);
                    }
                    if last_progress.elapsed() >= idle_timeout {
                        deliverer.abort();
                        let stats = deliverer.await.unwrap_or_default();
                        break stats;
                    }
                }
            }
        };
        let mut pending = 0;
        let mut failed = 0;
        for t in self.outbox.targets().await? {
            if ids.contains(&t.id) {
                pending += t.pending;
                failed += t.failed;
            }
        }
        let finish_delivered = self
            .shared
            .targets
            .lock()
            .expect("targets lock")
            .iter()
            .all(|t| t.finish.is_none() || t.finish_sent);
        let outbox = self.outbox.keep_at_its_path().await?;
        Ok(CloseSummary {
            stats,
            pending,
            failed,
            finish_delivered,
            outbox,
        })
    }

    fn target_ids(&self) -> Vec<String> {
        self.shared
            .targets
            .lock()
            .expect("targets lock")
            .iter()
            .map(|t| t.target.id.clone())
            .collect()
    }

    async fn pending_of(&self, ids: &[String]) -> Result<i64, ReporterError> {
        Ok(self
            .outbox
            .targets()
            .await?
            .iter()
            .filter(|t| ids.contains(&t.id))
            .map(|t| t.pending)
            .sum())
    }

    fn sender(&self) -> Result<&mpsc::Sender<WriterMsg>, ReporterError> {
        self.tx.as_ref().ok_or_else(|| self.stopped())
    }

    fn stopped(&self) -> ReporterError {
        stopped(&self.shared)
    }
}

/// Records items for a target of a [`Reporter`], from any task ([`Reporter::recorder`]).
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::Sender<WriterMsg>,
    shared: Arc<Shared>,
}

impl Recorder {
    /// As [`Reporter::record`].
    pub async fn record(
        &self,
        target_id: &str,
        items: Vec<(IngestItem, i64)>,
    ) -> Result<(), ReporterError> {
        send_items(&self.tx, &self.shared, target_id, items, None).await
    }
}

async fn send_items(
    tx: &mpsc::Sender<WriterMsg>,
    shared: &Shared,
    target_id: &str,
    items: Vec<(IngestItem, i64)>,
    mark: Option<SpoolMark>,
) -> Result<(), ReporterError> {
    if items.is_empty() && mark.is_none() {
        return Ok(());
    }
    let rows = items
        .into_iter()
        .map(|(item, read_at)| {
            (
                serde_json::to_string(&item).expect("items serialize"),
                read_at,
            )
        })
        .collect();
    tx.send(WriterMsg::Items(target_id.to_owned(), rows, mark))
        .await
        .map_err(|_| stopped(shared))
}

fn stopped(shared: &Shared) -> ReporterError {
    match shared
        .writer_failed
        .lock()
        .expect("writer_failed lock")
        .clone()
    {
        Some(why) => ReporterError::WriterFailed(why),
        None => ReporterError::WriterGone,
    }
}

/// Commit what the caller records, one transaction per queued burst.
async fn write_loop(
    outbox: Outbox,
    mut rx: mpsc::Receiver<WriterMsg>,
    shared: Arc<Shared>,
) -> Result<(), WriterStopped> {
    while let Some(first) = rx.recv().await {
        // Take whatever else is already queued so one transaction commits many lines.
        let mut msgs = vec![first];
        while msgs.len() < RECORD_QUEUE {
            match rx.try_recv() {
                Ok(m) => msgs.push(m),
                Err(_) => break,
            }
        }
        let mut acks = Vec::new();
        let mut run: Option<Appending> = None;
        for msg in msgs {
            match msg {
                WriterMsg::Flush(ack) => acks.push(ack),
                WriterMsg::Items(target, rows, mark) => match &mut run {
                    Some(a) if a.target == target => {
                        a.rows.extend(rows);
                        // Marks come in order: the last one covers every line before it.
                        a.mark = mark.or(a.mark.take());
                    }
                    _ => {
                        if let Some(a) = run.take() {
                            append(&outbox, &shared, &a).await?;
                        }
                        run = Some(Appending { target, rows, mark });
                    }
                },
            }
        }
        if let Some(a) = run {
            append(&outbox, &shared, &a).await?;
        }
        shared.committed.notify_one();
        for ack in acks {
            let _ = ack.send(());
        }
    }
    Ok(())
}

/// Rows of one target committed in one transaction, with the last spool mark among them.
struct Appending {
    target: String,
    rows: Vec<(String, i64)>,
    mark: Option<SpoolMark>,
}

/// Append rows; on failure, say why for the caller's next `record` or `flush` — before the
/// queue and the waiting flushes are dropped, which is how the caller learns of it.
async fn append(outbox: &Outbox, shared: &Shared, a: &Appending) -> Result<(), WriterStopped> {
    let mut told = false;
    let appended = loop {
        match outbox
            .append_spooled(&a.target, &a.rows, a.mark.as_ref())
            .await
        {
            // Another process holds the outbox's write lock: one stopped (Ctrl+Z) in the middle
            // of a write holds it until it continues. Wait for it rather than lose the rows;
            // the adapter waits meanwhile (the recording queue is bounded).
            Err(e) if e.is_busy() => {
                if !told {
                    told = true;
                    wujie_process::stderr_line!(
                        "wujie: waiting for the outbox {}: another wujie holds its write lock \
                         (stopped with Ctrl+Z?)",
                        outbox.path().display()
                    );
                }
                tokio::time::sleep(BUSY_RETRY).await;
            }
            // After a long stop the wait for the outbox's connection times out at once; the
            // rows are still here to append (they were lost when this ended the writer).
            Err(e) if e.is_pool_timeout() => tokio::time::sleep(BUSY_RETRY).await,
            appended => break appended,
        }
    };
    if let Err(e) = appended {
        let path = outbox.path().to_owned();
        // The writer's caller gets the failure from `writer_failed`; `write_loop` only needs to
        // know that it stops.
        let why = if e.is_disk_full() {
            WriterFailure::DiskFull { path, source: e }
        } else {
            WriterFailure::Write { path, source: e }
        };
        *shared.writer_failed.lock().expect("writer_failed lock") = Some(Arc::new(why));
        return Err(WriterStopped);
    }
    if let Some(mark) = &a.mark {
        shared.spool_committed.store(mark.offset, Ordering::Release);
    }
    Ok(())
}

async fn deliver_loop(
    outbox: Outbox,
    client: impl DeliveryServer,
    shared: Arc<Shared>,
    notice: Arc<dyn ReporterNotice>,
) -> DeliveryStats {
    let mut deliverer = Deliverer {
        outbox,
        client,
        shared,
        notice,
        stats: DeliveryStats::default(),
        backoff: BACKOFF_START,
        batch_cap: BATCH_MAX_ITEMS,
        prefetched: None,
        unsettled: None,
    };
    loop {
        // What the last pass settled is in the outbox now.
        deliverer.shared.delivery_pass.notify_waiters();
        let step = deliverer.pass().await;
        if deliverer.after(step).await == Continue::No {
            deliverer.shared.delivery_pass.notify_waiters();
            return deliverer.stats;
        }
    }
}

/// The deliverer's state from one pass to the next.
struct Deliverer<C> {
    outbox: Outbox,
    client: C,
    shared: Arc<Shared>,
    notice: Arc<dyn ReporterNotice>,
    stats: DeliveryStats,
    backoff: Duration,
    /// Most rows the next batch may hold (lowered while the server refuses larger ones).
    batch_cap: usize,
    /// The batch read while the previous one was in flight, and whose target it belongs to.
    prefetched: Option<(String, Vec<OutboxRow>)>,
    /// The last batch the server answered for, settled in the outbox during the next request.
    unsettled: Option<Settlement>,
}

#[derive(Debug, PartialEq, Eq)]
enum Continue {
    Yes,
    No,
}

impl<C: DeliveryServer> Deliverer<C> {
    /// One pass: the first target (in the order they were added) with rows waiting gets a
    /// batch; without any, the first whose end is recorded but not sent gets that.
    async fn pass(&mut self) -> Step {
        let targets: Vec<(TargetRef, Option<FinishRun>, bool)> = self
            .shared
            .targets
            .lock()
            .expect("targets lock")
            .iter()
            .map(|t| (t.target.clone(), t.finish.clone(), t.finish_sent))
            .collect();
        for (target, finish, finish_sent) in &targets {
            let Ok(rows) = self.rows_of(target).await else {
                return Step::Retry(None);
            };
            if !rows.is_empty() {
                let sent = deliver_batch(
                    &self.outbox,
                    &self.client,
                    target,
                    rows,
                    self.unsettled.take(),
                    &mut self.stats,
                    &*self.notice,
                )
                .await;
                self.unsettled = sent.settlement;
                self.prefetched = sent.next.map(|rows| (target.id.clone(), rows));
                return sent.step;
            }
            if let (Some(finish), false) = (finish, finish_sent) {
                return deliver_finish(
                    &self.outbox,
                    &self.client,
                    &self.shared,
                    &target.id,
                    finish,
                )
                .await;
            }
        }
        Step::Idle
    }

    /// The next rows of `target`: the batch read ahead for it, or a fresh read.
    async fn rows_of(&mut self, target: &TargetRef) -> Result<Vec<OutboxRow>, OutboxError> {
        if let Some((id, rows)) = self.prefetched.take()
            && id == target.id
            && !rows.is_empty()
        {
            return Ok(rows);
        }
        // A fresh read must not see the last batch still pending: it would be sent again
        // (harmless, but wasted).
        if let Some(settlement) = self.unsettled.take() {
            settlement.apply(&self.outbox, &mut self.stats).await?;
        }
        self.outbox.pending(&target.id, self.batch_cap as i64).await
    }

    /// Acts on how a pass ended; `Continue::No` once the reporter closes and nothing is left.
    async fn after(&mut self, step: Step) -> Continue {
        match step {
            Step::Progress => {
                self.backoff = BACKOFF_START;
                self.batch_cap = BATCH_MAX_ITEMS;
            }
            Step::Shrink(rows) => self.batch_cap = rows,
            Step::Retry(error) => self.retry_later(error).await,
            Step::Idle if self.closing_with_nothing_left() => return Continue::No,
            Step::Idle => {
                let _ = tokio::time::timeout(
                    Duration::from_millis(200),
                    self.shared.committed.notified(),
                )
                .await;
            }
        }
        Continue::Yes
    }

    /// Tells the user (when the server answered with an error) and waits out the backoff, or
    /// as long as the server asked if that is longer.
    async fn retry_later(&mut self, error: Option<ClientError>) {
        if let Some(e) = &error {
            let pending = self
                .outbox
                .targets()
                .await
                .map(|ts| ts.iter().map(|t| t.pending).sum())
                .unwrap_or(0);
            self.notice.retrying(e, pending);
        }
        tokio::time::sleep(retry_pause(self.backoff, error.as_ref())).await;
        self.backoff = (self.backoff * 2).min(BACKOFF_MAX);
    }

    /// The reporter closes and every recorded end was sent (no rows wait: the pass was idle).
    fn closing_with_nothing_left(&self) -> bool {
        self.shared
            .closing
            .load(std::sync::atomic::Ordering::SeqCst)
            && !self
                .shared
                .targets
                .lock()
                .expect("targets lock")
                .iter()
                .any(|t| t.finish.is_some() && !t.finish_sent)
    }
}

/// Send how a run ended, once all of its rows were settled.
async fn deliver_finish(
    outbox: &Outbox,
    client: &impl DeliveryServer,
    shared: &Shared,
    target_id: &str,
    finish: &FinishRun,
) -> Step {
    let finish = counting_refusals(outbox, target_id, finish).await;
    let answer = client.finish_run(target_id, &finish).await;
    if let (NextStep::Retry, Err(e)) = (NextStep::after(Request::Finish, &answer), answer) {
        return Step::Retry(Some(e));
    }
    // Recorded, or refused for good (e.g. the run was finished elsewhere): either way there is
    // nothing more to send.
    let _ = outbox.finish_delivered(target_id).await;
    if let Some(t) = shared
        .targets
        .lock()
        .expect("targets lock")
        .iter_mut()
        .find(|t| t.target.id == target_id)
    {
        t.finish_sent = true;
    }
    Step::Progress
}

/// The outcome to record for a run once all of its rows were settled: a run the server refused
/// events of did not succeed, whatever its adapter's exit code said.
pub(crate) async fn counting_refusals(
    outbox: &Outbox,
    target_id: &str,
    finish: &FinishRun,
) -> FinishRun {
    if finish.status != RunStatus::Succeeded {
        return finish.clone();
    }
    let refused = outbox
        .targets()
        .await
        .ok()
        .and_then(|targets| targets.into_iter().find(|t| t.id == target_id))
        .map_or(0, |t| t.failed);
    if refused == 0 {
        return finish.clone();
    }
    FinishRun {
        status: RunStatus::Failed,
        exit_code: finish.exit_code,
        error: Some(refused_error(refused)),
    }
}

/// Why a run whose adapter succeeded is failed anyway.
pub fn refused_error(refused: i64) -> String {
    format!(
        "the server refused {refused} of the events read; they are kept in the outbox \
         (`wujie local-run status`)"
    )
}

/// How a pass of the deliverer ended.
enum Step {
    Idle,
    Progress,
    /// Send at most this many rows next.
    Shrink(usize),
    Retry(Option<ClientError>),
}

/// A batch the server answered for: what to delete from the outbox, what to mark refused, and
/// the figures to count once that is done.
struct Settlement {
    delivered: Vec<i64>,
    refused: Vec<(i64, String)>,
    /// Read times of the delivered rows.
    read_at: Vec<i64>,
    acked_at: i64,
}

impl Settlement {
    async fn apply(self, outbox: &Outbox, stats: &mut DeliveryStats) -> Result<(), OutboxError> {
        outbox.settle(&self.delivered, &self.refused).await?;
        for read_at in &self.read_at {
            stats.latency.record(self.acked_at - read_at);
        }
        if let Some(first) = self.read_at.iter().min() {
            stats.first_read_ms = Some(stats.first_read_ms.map_or(*first, |f| f.min(*first)));
        }
        stats.delivered += self.delivered.len() as u64;
        stats.refused += self.refused.len() as u64;
        if !self.delivered.is_empty() {
            stats.last_ack_ms = Some(self.acked_at);
        }
        Ok(())
    }
}

/// What sending one batch led to.
struct Sent {
    step: Step,
    /// To be applied before rows are read afresh (or during the next request).
    settlement: Option<Settlement>,
    /// The batch after this one, read while this one was in flight.
    next: Option<Vec<OutboxRow>>,
}

/// Send one batch. While the request is in flight, the previous batch is settled and the batch
/// after this one is read, so neither outbox access waits on the network nor the network on
/// them. The server dedupes on (source, source_key), so a batch whose settlement fails is
/// merely sent again.
async fn deliver_batch(
    outbox: &Outbox,
    client: &impl DeliveryServer,
    target: &TargetRef,
    rows: Vec<OutboxRow>,
    previous: Option<Settlement>,
    stats: &mut DeliveryStats,
    notice: &dyn ReporterNotice,
) -> Sent {
    // Rows are sent as stored (they are `IngestItem`s this program encoded); the server
    // validates each one.
    let mut bytes = 0;
    let mut sent = Vec::with_capacity(rows.len());
    for row in rows {
        bytes += row.item_json.len();
        if !sent.is_empty() && bytes > BATCH_MAX_BYTES {
            break;
        }
        sent.push(row);
    }
    let items: Vec<&str> = sent.iter().map(|r| r.item_json.as_str()).collect();
    let request = client.ingest(target, &items);
    let settle_previous = async {
        match previous {
            Some(s) => s.apply(outbox, stats).await,
            None => Ok(()),
        }
    };
    let last_sent = sent.last().map_or(0, |r| r.seq);
    let (result, next, settled) = tokio::join!(
        request,
        // A full batch: a shrunk one is only retried alone, never prefetched for.
        outbox.pending_after(
            &target.id,
            last_sent,
            BATCH_MAX_ITEMS as i64,
            BATCH_MAX_BYTES
        ),
        settle_previous
    );
    let next_step = NextStep::after(Request::Batch { rows: sent.len() }, &result);
    let answered_every_row = matches!(&result, Ok(r) if r.results.len() >= sent.len());
    let next = match next {
        Ok(rows) if next_step.prefetched_batch_follows(answered_every_row, settled.is_ok()) => {
            Some(rows)
        }
        _ => None,
    };
    let (step, settlement) = match (next_step, result) {
        // Every answer is settled (`NextStep::Settle`).
        (_, Ok(answer)) => (Step::Progress, Some(answered(&answer, &sent, notice))),
        (NextStep::Retry, Err(e)) => (Step::Retry(Some(e)), None),
        (NextStep::Shrink { rows }, Err(_)) => (Step::Shrink(rows), None),
        // `NextStep::Refuse`: a lone row refused for good.
        (_, Err(e)) => (Step::Progress, Some(refused_whole(&e, &sent, notice))),
    };
    // A settlement that did not reach the outbox is tried again before anything is read.
    let step = match (step, settled) {
        (Step::Progress, Err(_)) => Step::Retry(None),
        (step, _) => step,
    };
    Sent {
        step,
        settlement,
        next,
    }
}

/// The rows the server answered for: stored (or duplicates) are delivered, rejected ones are
/// kept refused with its reason. An answer with fewer results than rows leaves the rest pending.
fn answered(answer: &IngestResult, sent: &[OutboxRow], notice: &dyn ReporterNotice) -> Settlement {
    let mut settlement = Settlement {
        delivered: Vec::with_capacity(sent.len()),
        refused: Vec::new(),
        read_at: Vec::with_capacity(sent.len()),
        acked_at: now_ms(),
    };
    for (row, r) in sent.iter().zip(answer.results.iter()) {
        if r.outcome == IngestOutcome::Rejected {
            let reason = r.reason.clone().unwrap_or_else(|| "refused".to_owned());
            notice.refused(&row.item_json, &reason);
            settlement.refused.push((row.seq, reason));
        } else {
            settlement.delivered.push(row.seq);
            settlement.read_at.push(row.read_at_ms);
        }
    }
    settlement
}

/// Rows refused as a whole and for good (e.g. the run no longer exists): every one is kept,
/// marked with the server's reason, and the user is told.
fn refused_whole(
    error: &ClientError,
    sent: &[OutboxRow],
    notice: &dyn ReporterNotice,
) -> Settlement {
    let reason = error.to_string();
    if let Some(first) = sent.first() {
        notice.refused(&first.item_json, &reason);
    }
    Settlement {
        delivered: Vec::new(),
        refused: sent.iter().map(|r| (r.seq, reason.clone())).collect(),
        read_at: Vec::new(),
        acked_at: now_ms(),
    }
}
