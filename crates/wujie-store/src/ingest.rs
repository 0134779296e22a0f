//! Batch ingest of adapter events into a run. All accepted items of a batch are written in one
//! transaction; messages go in multi-row inserts (one prepared statement per chunk size), and
//! the UNIQUE (run, source, source_key) key decides between Stored and Duplicate
//! (`ON CONFLICT DO NOTHING`, as for usage and discussion entries).

use std::collections::HashMap;

use sqlx::AnyConnection;
use wujie_protocol::api::{
    Author, AuthorKind, FailureKind, IngestInput, IngestItem, IngestItemResult, IngestOutcome,
    IngestResult, IssueChange, RunMessage,
};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};
use wujie_protocol::limits;

use crate::activity;
use crate::dialect::SerialLock;
use crate::git_snapshots::{PendingSnapshot, store_run_git_snapshots};
use crate::issues::insert_comment;
use crate::rows::{
    MESSAGE_COLUMNS, MessageRow, UsageRow, message_from_row, parse_failure_kind, run_not_found,
    to_i64, usage_from_row,
};
use crate::sql::Placeholders;
use crate::text::{stored, stored_opt};
use crate::{Store, StoreError, WriteTx, time};

/// Rows per multi-row insert: 9 parameters each stays far below SQLite's parameter limit.
const MESSAGE_CHUNK: usize = 128;
/// Keys per `IN (...)` lookup.
const KEY_LOOKUP_CHUNK: usize = 500;

pub(crate) fn outcome(outcome: IngestOutcome) -> IngestItemResult {
    IngestItemResult {
        outcome,
        reason: None,
    }
}

pub(crate) fn rejected(reason: String) -> IngestItemResult {
    IngestItemResult {
        outcome: IngestOutcome::Rejected,
        reason: Some(reason),
    }
}

/// Checks that hold for every target: keys present, size within the limit. `None` = acceptable.
pub(crate) fn precheck(
    input: &impl IngestInput,
    max_event_bytes: usize,
) -> Option<IngestItemResult> {
    let item = input.item();
    if item.source.is_empty() || item.source_key.is_empty() {
        return Some(rejected(
            "item has an empty source or source_key; both are needed for exactly-once storage"
                .into(),
        ));
    }
    let depth = limits::event_depth(&item.event);
    if depth > limits::MAX_EVENT_DEPTH {
        return Some(rejected(format!(
            "event is nested {depth} levels deep, over the limit of {} levels; it will not be \
             stored",
            limits::MAX_EVENT_DEPTH
        )));
    }
    // A request's text of the event measures it unless the event is close to the limit; a
    // plain item is measured by encoding it.
    let text_len = input.event_text_len().unwrap_or(usize::MAX);
    if let Err(size) = limits::check_encoded_len(&item.event, text_len, max_event_bytes) {
        return Some(rejected(format!(
            "event is {size} bytes, over this server's limit of {max_event_bytes} bytes per event; \
             it will not be stored"
        )));
    }
    if let Event::Usage(usage) = &item.event {
        return usage_out_of_range(usage).map(rejected);
    }
    None
}

/// Token counts are stored as signed 64-bit integers and summed per issue and workspace: a
/// count over [`limits::MAX_USAGE_TOKENS`] is refused, so that no sum can overflow (storing
/// anything else than the count would be a made-up number).
fn usage_out_of_range(usage: &Usage) -> Option<String> {
    [
        ("input_tokens", usage.input_tokens),
        ("output_tokens", usage.output_tokens),
        ("cache_read_tokens", usage.cache_read_tokens),
        ("cache_write_tokens", usage.cache_write_tokens),
    ]
    .into_iter()
    .find(|(_, n)| *n > limits::MAX_USAGE_TOKENS)
    .map(|(field, n)| {
        format!(
            "usage {field} is {n}, over the limit of {} tokens per event; it will not be stored",
            limits::MAX_USAGE_TOKENS
        )
    })
}

/// Inserts one usage row unless (owner, source, source_key) exists; true when stored now.
pub(crate) async fn insert_usage(
    conn: &mut AnyConnection,
    sql: &'static str,
    owner_id: &str,
    item: &IngestItem,
    usage: &Usage,
    now: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(sql)
        .bind(owner_id)
        .bind(stored(&item.source))
        .bind(stored(&item.source_key))
        .bind(stored(&usage.provider))
        .bind(stored(&usage.model))
        .bind(to_i64(usage.input_tokens))
        .bind(to_i64(usage.output_tokens))
        .bind(to_i64(usage.cache_read_tokens))
        .bind(to_i64(usage.cache_write_tokens))
        .bind(now)
        .execute(conn)
        .await?;
    Ok(done.rows_affected() == 1)
}

const RUN_USAGE_INSERT: &str = "INSERT INTO run_usage (run_id, source, source_key, provider, \
     model, input_tokens, output_tokens, cache_read_tokens, cache_write_tokens, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING";

pub(crate) const DISCUSSION_USAGE_INSERT: &str = "INSERT INTO discussion_usage (discussion_id, \
     source, source_key, provider, model, input_tokens, output_tokens, cache_read_tokens, \
     cache_write_tokens, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING";

/// What is stored on the run under keys of `messages`. Batches normally share one source, so
/// this is one indexed `source_key IN (...)` lookup per source and chunk; only keys sent again
/// come back, with their event, so that a different event under a used key can be told from
/// the same event sent again.
async fn existing_messages<'a>(
    w: &mut WriteTx<'_>,
    run_id: &str,
    messages: &[&PendingMessage<'a>],
) -> Result<HashMap<(&'a str, &'a str), RunMessage>, StoreError> {
    let mut by_source: HashMap<&'a str, Vec<&'a str>> = HashMap::new();
    for p in messages {
        by_source
            .entry(p.item.source.as_str())
            .or_default()
            .push(p.item.source_key.as_str());
    }
    let mut existing = HashMap::new();
    for (source, keys) in by_source {
        for chunk in keys.chunks(KEY_LOOKUP_CHUNK) {
            let mut sql = format!("SELECT {MESSAGE_COLUMNS} FROM run_messages WHERE run_id = ");
            let mut placeholders = Placeholders::new(w.backend);
            placeholders.push(&mut sql);
            sql.push_str(" AND source = ");
            placeholders.push(&mut sql);
            sql.push_str(" AND source_key IN (");
            placeholders.push_list(&mut sql, chunk.len());
            sql.push(')');
            let mut select = sqlx::query_as(&sql).bind(run_id).bind(stored(source));
            for key in chunk {
                select = select.bind(stored(key));
            }
            let found: Vec<MessageRow> = select.fetch_all(&mut *w.tx).await?;
            let mut found: HashMap<String, RunMessage> = found
                .into_iter()
                .map(|row| message_from_row(row).map(|m| (m.source_key.clone(), m)))
                .collect::<Result<_, _>>()?;
            for key in chunk {
                if let Some(message) = found.remove(*key) {
                    existing.insert((source, *key), message);
                }
            }
        }
    }
    Ok(existing)
}

/// Whether `sent` is the event `kept` holds: the same key sent again (a retry, or an adapter
/// that printed a line twice), rather than another event under a used key.
fn same_message(kept: &RunMessage, sent: &Message) -> bool {
    kept.kind == sent.kind
        && kept.content == sent.content
        && kept.tool == sent.tool
        && kept.input == sent.input
        && kept.output == sent.output
}

/// Why an event under a key that holds another event is not stored.
fn key_reused(item: &IngestItem, kept: &str) -> String {
    format!(
        "the key {:?} of source {:?} was already used for a different event ({kept}); \
         the adapter must give each event its own key, so this one is not stored",
        item.source_key, item.source
    )
}

/// Inserts messages whose keys are distinct and were not found stored, in multi-row
/// statements. The UNIQUE (run, source, source_key) key skips any another transaction stored
/// since; then the batch is refused (`StoreError::Contended`) and sent again.
async fn insert_messages(
    w: &mut WriteTx<'_>,
    run_id: &str,
    messages: &[&PendingMessage<'_>],
    now: &str,
) -> Result<(), StoreError> {
    for chunk in messages.chunks(MESSAGE_CHUNK) {
        let mut sql = String::from(
            "INSERT INTO run_messages (run_id, kind, content, tool, input, output, source, \
             source_key, created_at) VALUES ",
        );
        Placeholders::new(w.backend).push_value_rows(&mut sql, chunk.len(), 9);
        // Naming the key: with no target, SQLite treats every constraint as ON CONFLICT
        // IGNORE, which made new events about a tenth slower to insert.
        sql.push_str(" ON CONFLICT (run_id, source, source_key) DO NOTHING");
        let mut insert = sqlx::query(&sql);
        for p in chunk {
            insert = insert
                .bind(run_id)
                .bind(p.message.kind.as_str())
                .bind(stored_opt(p.message.content.as_deref()))
                .bind(stored_opt(p.message.tool.as_deref()))
                .bind(stored_opt(p.input_json.as_deref()))
                .bind(stored_opt(p.message.output.as_deref()))
                .bind(stored(&p.item.source))
                .bind(stored(&p.item.source_key))
                .bind(now);
        }
        // `execute`, not RETURNING: streaming rows back per item costs more than the insert.
        let inserted = insert.execute(&mut *w.tx).await?.rows_affected();
        if inserted != chunk.len() as u64 {
            return Err(StoreError::Contended(format!(
                "another request stored {} of these events of run {run_id} at the same time; \
                 nothing of this batch was stored, send it again",
                chunk.len() as u64 - inserted
            )));
        }
    }
    Ok(())
}

/// Why a new event of an ended run is not stored.
fn after_end(run_id: &str, status: &str) -> String {
    format!(
        "run {run_id} already ended ({status}); a run takes no new events after its end, \
         only the ones read before it"
    )
}

/// The usage stored on the run under `item`'s key, if any.
async fn stored_usage(
    conn: &mut AnyConnection,
    run_id: &str,
    item: &IngestItem,
) -> Result<Option<Usage>, StoreError> {
    let found: Option<UsageRow> = sqlx::query_as(
        "SELECT provider, model, input_tokens, output_tokens, cache_read_tokens, \
         cache_write_tokens FROM run_usage WHERE run_id = $1 AND source = $2 AND source_key = $3",
    )
    .bind(run_id)
    .bind(stored(&item.source))
    .bind(stored(&item.source_key))
    .fetch_optional(conn)
    .await?;
    Ok(found.map(usage_from_row))
}

/// What a usage event whose key is stored already comes to: the same usage sent again, or
/// another one under a used key, which is refused.
fn usage_sent_again(kept: &Usage, item: &IngestItem, sent: &Usage) -> IngestItemResult {
    if kept == sent {
        outcome(IngestOutcome::Duplicate)
    } else {
        rejected(key_reused(item, &format!("usage of {}", kept.model)))
    }
}

/// Whether storing these may record activity: usage and code snapshots do, and so do the
/// message kinds that become comments.
fn records_activity(
    messages: &[PendingMessage<'_>],
    usages: &[(usize, &IngestItem, &Usage)],
    snapshots: &[PendingSnapshot<'_>],
) -> bool {
    !usages.is_empty()
        || !snapshots.is_empty()
        || messages
            .iter()
            .any(|p| matches!(p.message.kind, MessageKind::UserInput | MessageKind::Final))
}

struct PendingMessage<'a> {
    index: usize,
    item: &'a IngestItem,
    message: &'a Message,
    input_json: Option<String>,
}

/// A batch sorted by kind of event; what is already decided is in `results`.
struct SortedBatch<'a> {
    results: Vec<Option<IngestItemResult>>,
    messages: Vec<PendingMessage<'a>>,
    usages: Vec<(usize, &'a IngestItem, &'a Usage)>,
    git_snapshots: Vec<PendingSnapshot<'a>>,
}

impl<'a> SortedBatch<'a> {
    /// Items over `max_event_bytes` (as JSON) are rejected, events only discussions keep are
    /// filtered, and messages and usage are set aside to be stored.
    fn sort(items: &'a [impl IngestInput], max_event_bytes: usize) -> Result<Self, StoreError> {
        let mut sorted = SortedBatch {
            results: vec![None; items.len()],
            messages: Vec::new(),
            usages: Vec::new(),
            git_snapshots: Vec::new(),
        };
        for (index, input) in items.iter().enumerate() {
            if let Some(refused) = precheck(input, max_event_bytes) {
                sorted.results[index] = Some(refused);
                continue;
            }
            let item = input.item();
            match &item.event {
                Event::Message(message) => {
                    let input_json = match &message.input {
                        Some(map) => Some(serde_json::to_string(map)?),
                        None => None,
                    };
                    sorted.messages.push(PendingMessage {
                        index,
                        item,
                        message,
                        input_json,
                    });
                }
                Event::Usage(usage) => sorted.usages.push((index, item, usage)),
                Event::GitChanges(changes) => sorted.git_snapshots.push(PendingSnapshot {
                    index,
                    item,
                    changes,
                }),
                // Native session ids and handoff requests only matter to discussions.
                Event::Session { .. } | Event::HandoffReady { .. } => {
                    sorted.results[index] = Some(outcome(IngestOutcome::Filtered));
                }
            }
        }
        Ok(sorted)
    }
}

/// The run a batch goes to, as the batch's transaction found it.
pub(crate) struct RunTarget<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) issue_id: String,
    /// Why nothing new may be stored: the run ended.
    pub(crate) ended: Option<String>,
    pub(crate) now: String,
}

impl Store {
    /// Stores a batch of events on a run; one result per item, in order. Items over
    /// `max_event_bytes` (as JSON) are rejected without affecting the others.
    pub async fn ingest_run_events(
        &self,
        run_id: &str,
        items: &[impl IngestInput],
        max_event_bytes: usize,
    ) -> Result<IngestResult, StoreError> {
        let mut batch = SortedBatch::sort(items, max_event_bytes)?;
        let now = time::now();
        // Ingest is the hot path: it takes the activity lock only when this batch may record
        // activity (a comment, usage or a code snapshot), and otherwise only its issue's lock, so that
        // reporters of different issues write side by side on PostgreSQL.
        let _slot = self.ingest_slots.take().await?;
        let mut w = self.write_unserialized().await?;
        if records_activity(&batch.messages, &batch.usages, &batch.git_snapshots) {
            w.serialize(SerialLock::Activity).await?;
        }
        let run: Option<(String, String, Option<String>)> =
            sqlx::query_as("SELECT issue_id, status, failure_kind FROM runs WHERE id = $1")
                .bind(run_id)
                .fetch_optional(&mut *w.tx)
                .await?;
        let (issue_id, status, failure_kind) = run.ok_or_else(|| run_not_found(run_id))?;
        w.serialize(SerialLock::Issue(&issue_id)).await?;
        // The reporter finishes a run only once every row it read was delivered, so nothing
        // new may follow a recorded end. A failure by the stale-run rule is no end: the paused
        // reporter may still deliver what it read.
        let stale = parse_failure_kind(failure_kind.as_deref())? == Some(FailureKind::Stale);
        let ended = (status != "running" && !stale).then(|| after_end(run_id, &status));
        let run = RunTarget {
            run_id,
            issue_id,
            ended,
            now,
        };
        store_run_messages(&mut w, &run, &batch.messages, &mut batch.results).await?;
        store_run_usages(&mut w, &run, &batch.usages, &mut batch.results).await?;
        store_run_git_snapshots(&mut w, &run, &batch.git_snapshots, &mut batch.results).await?;
        w.commit().await?;
        Ok(IngestResult {
            results: batch
                .results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| rejected("item was not processed".into())))
                .collect(),
        })
    }
}

/// Stores a batch's messages on `run`, each key once, and the comments the new ones make.
///
/// The UNIQUE (run, source, source_key) key decides what is stored: each key of the batch (its
/// first occurrence) not found stored is inserted with ON CONFLICT DO NOTHING, so no key is
/// ever stored twice, nor does a UNIQUE violation fail the statement, however many
/// transactions ingest the batch at once (a reporter retrying against another replica). The
/// lookup spares a retried batch the inserts (a key it finds is stored: keys are never
/// deleted); should another transaction store a key it missed before this insert, the insert
/// says so by its count and the batch is refused whole, to be sent again, rather than answered
/// wrongly.
async fn store_run_messages(
    w: &mut WriteTx<'_>,
    run: &RunTarget<'_>,
    messages: &[PendingMessage<'_>],
    results: &mut [Option<IngestItemResult>],
) -> Result<(), StoreError> {
    let run_id = run.run_id;
    // The first event of each key in the batch; a later one under that key is the same event
    // sent again or refused.
    let mut firsts: HashMap<(&str, &str), &PendingMessage<'_>> =
        HashMap::with_capacity(messages.len());
    for p in messages {
        let key = (p.item.source.as_str(), p.item.source_key.as_str());
        match firsts.get(&key) {
            None => {
                firsts.insert(key, p);
            }
            // Both carry the same source and key, so the whole events compare.
            Some(first) if first.message != p.message => {
                let kept = format!(
                    "a {} earlier in the same batch",
                    first.message.kind.as_str()
                );
                results[p.index] = Some(rejected(key_reused(p.item, &kept)));
            }
            Some(_) => {}
        }
    }
    let firsts: Vec<&PendingMessage<'_>> = messages
        .iter()
        .filter(|p| {
            firsts
                .get(&(p.item.source.as_str(), p.item.source_key.as_str()))
                .is_some_and(|first| std::ptr::eq(*first, *p))
        })
        .collect();
    let existing = existing_messages(w, run_id, &firsts).await?;
    for p in messages {
        let key = (p.item.source.as_str(), p.item.source_key.as_str());
        if let Some(kept) = existing.get(&key)
            && results[p.index].is_none()
            && !same_message(kept, p.message)
        {
            let kept = format!("a {} stored at {}", kept.kind.as_str(), kept.created_at);
            results[p.index] = Some(rejected(key_reused(p.item, &kept)));
        }
    }
    let missing: Vec<&PendingMessage<'_>> = firsts
        .iter()
        .copied()
        .filter(|p| !existing.contains_key(&(p.item.source.as_str(), p.item.source_key.as_str())))
        .collect();
    let mut stored_now = vec![false; results.len()];
    match &run.ended {
        None => {
            insert_messages(w, run_id, &missing, &run.now).await?;
            for p in &missing {
                stored_now[p.index] = true;
            }
        }
        // An ended run takes nothing new; what it holds already answers `duplicate`.
        Some(refusal) => {
            for p in &missing {
                results[p.index] = Some(rejected(refusal.clone()));
            }
        }
    }
    for pending in messages {
        if results[pending.index].is_some() {
            continue;
        }
        let stored = stored_now[pending.index];
        results[pending.index] = Some(outcome(if stored {
            IngestOutcome::Stored
        } else {
            IngestOutcome::Duplicate
        }));
        // Only a newly stored message becomes a comment, so retries never duplicate one.
        let kind = match pending.message.kind {
            MessageKind::UserInput => AuthorKind::User,
            MessageKind::Final => AuthorKind::Agent,
            _ => continue,
        };
        if let (true, Some(body)) = (stored, pending.message.content.as_deref()) {
            let author = Author {
                kind,
                run_id: Some(run_id.to_owned()),
            };
            insert_comment(&mut w.tx, &run.issue_id, &author, w.author_token, body).await?;
        }
    }
    Ok(())
}

/// Stores a batch's usage events on `run`, each key once, and records each new one in the
/// issue's activity.
async fn store_run_usages(
    w: &mut WriteTx<'_>,
    run: &RunTarget<'_>,
    usages: &[(usize, &IngestItem, &Usage)],
    results: &mut [Option<IngestItemResult>],
) -> Result<(), StoreError> {
    let run_id = run.run_id;
    let reporter = Author {
        kind: AuthorKind::Agent,
        run_id: Some(run_id.to_owned()),
    };
    for &(index, item, usage) in usages {
        if let Some(refusal) = &run.ended {
            results[index] = Some(match stored_usage(&mut w.tx, run_id, item).await? {
                Some(kept) => usage_sent_again(&kept, item, usage),
                None => rejected(refusal.clone()),
            });
            continue;
        }
        let stored =
            insert_usage(&mut w.tx, RUN_USAGE_INSERT, run_id, item, usage, &run.now).await?;
        if !stored {
            // The key was taken: by this usage sent again, or by another (refused).
            let kept = stored_usage(&mut w.tx, run_id, item).await?;
            results[index] = Some(match kept {
                Some(kept) => usage_sent_again(&kept, item, usage),
                None => outcome(IngestOutcome::Duplicate),
            });
            continue;
        }
        let change = IssueChange::Usage {
            run_id: run_id.to_owned(),
            usage: usage.clone(),
        };
        activity::record(&mut w.tx, &run.issue_id, &reporter, w.author_token, &change).await?;
        results[index] = Some(outcome(IngestOutcome::Stored));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use wujie_protocol::api::{CreateIssue, CreateRun};

    use super::*;

    fn text(key: &str) -> IngestItem {
        IngestItem {
            source: "s".into(),
            source_key: key.into(),
            event: Event::Message(Message {
                kind: MessageKind::Text,
                content: Some(key.into()),
                tool: None,
                input: None,
                output: None,
                source: "s".into(),
                source_key: key.into(),
            }),
        }
    }

    fn pending(item: &IngestItem) -> PendingMessage<'_> {
        let Event::Message(message) = &item.event else {
            unreachable!("a message")
        };
        PendingMessage {
            index: 0,
            item,
            message,
            input_json: None,
        }
    }

    /// What a lookup that went stale leads to: a key another transaction stored after it is
    /// skipped by the UNIQUE key, and the insert refuses the batch instead of calling it stored.
    #[tokio::test]
    async fn a_key_stored_after_the_lookup_refuses_the_batch_and_stores_nothing_of_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("wujie.db"))
            .await
            .expect("open");
        let issue = store
            .create_issue(&CreateIssue {
                title: "t".into(),
                description: String::new(),
                discussion_id: None,
            })
            .await
            .expect("issue");
        let run = store
            .create_run(
                &issue.key,
                &CreateRun {
                    provider: "p".into(),
                    cwd: "/".into(),
                    job: None,
                },
            )
            .await
            .expect("run")
            .run;
        let first = text("stored-meanwhile");
        store
            .ingest_run_events(&run.id, std::slice::from_ref(&first), 1 << 20)
            .await
            .expect("ingest");

        let new = text("new");
        let (a, b) = (pending(&new), pending(&first));
        let mut w = store.write().await.expect("write");
        let e = insert_messages(&mut w, &run.id, &[&a, &b], &time::now())
            .await
            .expect_err("one key was stored meanwhile");
        assert!(matches!(e, StoreError::Contended(_)), "{e:?}");
        assert!(e.to_string().contains("send it again"), "{e}");
        drop(w);
        let keys: Vec<String> = store
            .run(&run.id)
            .await
            .expect("run")
            .messages
            .into_iter()
            .map(|m| m.source_key)
            .collect();
        assert_eq!(keys, ["stored-meanwhile"]);
    }
}
