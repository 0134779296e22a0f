//! Batch ingest of adapter events into a run. All accepted items of a batch are written in one
//! transaction; messages go in multi-row inserts (one prepared statement per chunk size), and
//! the UNIQUE (run, source, source_key) key decides between Stored and Duplicate.

use std::collections::HashMap;

use sqlx::{QueryBuilder, Sqlite, SqliteConnection};
use wujie_protocol::api::{AuthorKind, IngestItem, IngestItemResult, IngestOutcome, IngestResult};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};

use crate::issues::insert_comment;
use crate::rows::{run_not_found, to_i64};
use crate::{Store, StoreError, time};

/// Rows per multi-row insert: 9 parameters each stays far below SQLite's parameter limit.
const MESSAGE_CHUNK: usize = 128;

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
pub(crate) fn precheck(item: &IngestItem, max_event_bytes: usize) -> Option<IngestItemResult> {
    if item.source.is_empty() || item.source_key.is_empty() {
        return Some(rejected(
            "item has an empty source or source_key; both are needed for exactly-once storage"
                .into(),
        ));
    }
    let size = match serde_json::to_vec(&item.event) {
        Ok(bytes) => bytes.len(),
        Err(e) => return Some(rejected(format!("event cannot be serialized: {e}"))),
    };
    if size > max_event_bytes {
        return Some(rejected(format!(
            "event is {size} bytes, over this server's limit of {max_event_bytes} bytes per event; \
             it will not be stored"
        )));
    }
    None
}

/// Inserts one usage row unless (owner, source, source_key) exists; true when stored now.
pub(crate) async fn insert_usage(
    conn: &mut SqliteConnection,
    sql: &'static str,
    owner_id: &str,
    item: &IngestItem,
    usage: &Usage,
    now: &str,
) -> Result<bool, StoreError> {
    let done = sqlx::query(sql)
        .bind(owner_id)
        .bind(&item.source)
        .bind(&item.source_key)
        .bind(&usage.provider)
        .bind(&usage.model)
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
     VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";

pub(crate) const DISCUSSION_USAGE_INSERT: &str = "INSERT INTO discussion_usage (discussion_id, \
     source, source_key, provider, model, input_tokens, output_tokens, cache_read_tokens, \
     cache_write_tokens, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING";

struct PendingMessage<'a> {
    index: usize,
    item: &'a IngestItem,
    message: &'a Message,
    input_json: Option<String>,
}

impl Store {
    /// Stores a batch of events on a run; one result per item, in order. Items over
    /// `max_event_bytes` (serialized) are rejected without affecting the others.
    pub async fn ingest_run_events(
        &self,
        run_id: &str,
        items: &[IngestItem],
        max_event_bytes: usize,
    ) -> Result<IngestResult, StoreError> {
        let mut results: Vec<Option<IngestItemResult>> = vec![None; items.len()];
        let mut messages = Vec::new();
        let mut usages = Vec::new();
        for (index, item) in items.iter().enumerate() {
            if let Some(refused) = precheck(item, max_event_bytes) {
                results[index] = Some(refused);
                continue;
            }
            match &item.event {
                Event::Message(message) => {
                    let input_json = match &message.input {
                        Some(map) => Some(serde_json::to_string(map)?),
                        None => None,
                    };
                    messages.push(PendingMessage {
                        index,
                        item,
                        message,
                        input_json,
                    });
                }
                Event::Usage(usage) => usages.push((index, item, usage)),
                // Native session ids and handoff requests only matter to discussions.
                Event::Session { .. } | Event::HandoffReady { .. } => {
                    results[index] = Some(outcome(IngestOutcome::Filtered));
                }
            }
        }

        let now = time::now();
        let mut w = self.write().await?;
        let issue_id: Option<(String,)> = sqlx::query_as("SELECT issue_id FROM runs WHERE id = ?")
            .bind(run_id)
            .fetch_optional(&mut *w.tx)
            .await?;
        let (issue_id,) = issue_id.ok_or_else(|| run_not_found(run_id))?;

        // The first item of the batch with a given key is the one that may be stored now.
        let mut first_with_key: HashMap<(&str, &str), usize> = HashMap::new();
        for pending in &messages {
            first_with_key
                .entry((&pending.item.source, &pending.item.source_key))
                .or_insert(pending.index);
        }
        let mut stored_now = vec![false; items.len()];
        for chunk in messages.chunks(MESSAGE_CHUNK) {
            let mut insert = QueryBuilder::<Sqlite>::new(
                "INSERT INTO run_messages (run_id, kind, content, tool, input, output, source, \
                 source_key, created_at) ",
            );
            insert.push_values(chunk, |mut row, p| {
                row.push_bind(run_id)
                    .push_bind(p.message.kind.as_str())
                    .push_bind(p.message.content.as_deref())
                    .push_bind(p.message.tool.as_deref())
                    .push_bind(p.input_json.as_deref())
                    .push_bind(p.message.output.as_deref())
                    .push_bind(p.item.source.as_str())
                    .push_bind(p.item.source_key.as_str())
                    .push_bind(now.as_str());
            });
            insert.push(" ON CONFLICT DO NOTHING RETURNING source, source_key");
            let inserted: Vec<(String, String)> =
                insert.build_query_as().fetch_all(&mut *w.tx).await?;
            for (source, source_key) in &inserted {
                if let Some(&index) = first_with_key.get(&(source.as_str(), source_key.as_str())) {
                    stored_now[index] = true;
                }
            }
        }
        for pending in &messages {
            let stored = stored_now[pending.index];
            results[pending.index] = Some(outcome(if stored {
                IngestOutcome::Stored
            } else {
                IngestOutcome::Duplicate
            }));
            // Only a newly stored message becomes a comment, so retries never duplicate one.
            let author = match pending.message.kind {
                MessageKind::UserInput => AuthorKind::User,
                MessageKind::Final => AuthorKind::Agent,
                _ => continue,
            };
            if let (true, Some(body)) = (stored, pending.message.content.as_deref()) {
                insert_comment(&mut w.tx, &issue_id, author, body, Some(run_id)).await?;
            }
        }
        for (index, item, usage) in usages {
            let stored =
                insert_usage(&mut w.tx, RUN_USAGE_INSERT, run_id, item, usage, &now).await?;
            results[index] = Some(outcome(if stored {
                IngestOutcome::Stored
            } else {
                IngestOutcome::Duplicate
            }));
        }
        w.commit().await?;
        Ok(IngestResult {
            results: results
                .into_iter()
                .map(|r| r.unwrap_or_else(|| rejected("item was not processed".into())))
                .collect(),
        })
    }
}
