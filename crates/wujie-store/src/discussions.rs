//! Pre-issue discussions (protocol v2): only user_input, question, plan and final messages are
//! kept as entries; usage is recorded against the discussion; native session ids are kept in
//! order so a later native resume finds the discussion; promotion turns it into an issue with a
//! run in one transaction.

use sqlx::AnyConnection;
use wujie_protocol::api::{
    CreateDiscussion, CreateIssue, CreateRun, CreatedDiscussion, CreatedToken, Discussion,
    DiscussionEntry, DiscussionStatus, FinishRun, IngestInput, IngestItem, IngestOutcome,
    IngestResult, PromoteDiscussion, Promoted, RunStatus,
};
use wujie_protocol::event::Event;

use crate::ingest::{DISCUSSION_USAGE_INSERT, insert_usage, outcome, precheck, rejected};
use crate::issues::insert_issue;
use crate::rows::{DISCUSSION_USAGE_SQL, issue_key, load_issue, load_run, load_usage, parse_kind};
use crate::runs::{check_start_key, insert_run, record_end};
use crate::text::{self, Text};
use crate::tokens::{TokenKind, insert_token, reissue_token};
use crate::transcript::forward_page;
use crate::{DEFAULT_KEY_PREFIX, Store, StoreError, new_id, time};

fn discussion_not_found(id: &str) -> StoreError {
    StoreError::NotFound(format!(
        "discussion {id} not found; check the id (listing discussions shows the existing ones)"
    ))
}

/// A discussion without its entries, sessions and usage, with the key of the issue it was
/// promoted to, if any.
#[derive(sqlx::FromRow)]
struct DiscussionRow {
    id: String,
    status: String,
    provider: Text,
    cwd: Text,
    issue_id: Option<String>,
    issue_seq: Option<i64>,
    key_prefix: Option<String>,
    created_at: String,
}

const DISCUSSION_SELECT: &str = "SELECT d.id, d.status, d.provider, d.cwd, d.issue_id, \
     i.seq AS issue_seq, w.key_prefix, d.created_at FROM discussions d \
     LEFT JOIN issues i ON i.id = d.issue_id LEFT JOIN workspaces w ON w.id = i.workspace_id";

#[derive(sqlx::FromRow)]
struct EntryRow {
    seq: i64,
    kind: String,
    content: Text,
    source: Text,
    source_key: Text,
    created_at: String,
}

/// The entries of a discussion an answer holds: all of them, or a page.
#[derive(Clone, Copy)]
enum Entries {
    All,
    /// Those after position `after` that fit in `max_bytes` (see [`Store::discussion_page`]).
    After {
        after: i64,
        max_bytes: u64,
    },
}

/// An entry's size as page budgets count it: the bytes of its stored texts (BIGINT, as
/// `transcript::MESSAGE_BYTES`).
const ENTRY_BYTES: &str = "CAST(octet_length(content) + octet_length(source) \
     + octet_length(source_key) AS BIGINT)";

/// The entries of discussion `id` from position `from` to `to`, in order.
async fn entries_between(
    conn: &mut AnyConnection,
    id: &str,
    from: i64,
    to: i64,
) -> Result<Vec<EntryRow>, StoreError> {
    Ok(sqlx::query_as(
        "SELECT seq, kind, content, source, source_key, created_at FROM discussion_entries \
         WHERE discussion_id = $1 AND seq BETWEEN $2 AND $3 ORDER BY seq",
    )
    .bind(id)
    .bind(from)
    .bind(to)
    .fetch_all(&mut *conn)
    .await?)
}

async fn discussion_from_row(
    conn: &mut AnyConnection,
    row: DiscussionRow,
    wanted: Entries,
) -> Result<Discussion, StoreError> {
    let DiscussionRow {
        id,
        status,
        provider,
        cwd,
        issue_id,
        issue_seq,
        key_prefix,
        created_at,
    } = row;
    let native: Vec<(Text,)> = sqlx::query_as(
        "SELECT native_session_id FROM discussion_sessions WHERE discussion_id = $1 ORDER BY seq",
    )
    .bind(&id)
    .fetch_all(&mut *conn)
    .await?;
    let (entries, more) = match wanted {
        Entries::All => (entries_between(conn, &id, 0, i64::MAX).await?, false),
        Entries::After { after, max_bytes } => {
            let sizes = format!(
                "SELECT seq, {ENTRY_BYTES} AS bytes FROM discussion_entries \
                 WHERE discussion_id = $1 AND seq > $2 ORDER BY seq LIMIT $3"
            );
            let page = forward_page(conn, &sizes, &id, after, max_bytes).await?;
            let entries = match page.last {
                Some(last) => entries_between(conn, &id, after + 1, last).await?,
                None => Vec::new(),
            };
            (entries, page.more)
        }
    };
    let next_after = match (entries.last(), wanted) {
        (Some(last), _) => last.seq,
        (None, Entries::After { after, .. }) => after,
        (None, Entries::All) => 0,
    };
    let entries = entries
        .into_iter()
        .map(|entry| {
            Ok(DiscussionEntry {
                kind: parse_kind(&entry.kind)?,
                content: entry.content.into(),
                source: entry.source.into(),
                source_key: entry.source_key.into(),
                created_at: entry.created_at,
            })
        })
        .collect::<Result<Vec<_>, StoreError>>()?;
    let usage = load_usage(conn, DISCUSSION_USAGE_SQL, &id).await?;
    Ok(Discussion {
        status: if status == "promoted" {
            DiscussionStatus::Promoted
        } else {
            DiscussionStatus::Open
        },
        provider: provider.into(),
        cwd: cwd.into(),
        issue_key: match (key_prefix, issue_seq) {
            (Some(prefix), Some(seq)) => Some(issue_key(&prefix, seq)),
            _ => None,
        },
        issue_id,
        native_session_ids: native.into_iter().map(|(n,)| n.into()).collect(),
        entries,
        next_after,
        more,
        usage,
        created_at,
        id,
    })
}

async fn load_discussion(
    conn: &mut AnyConnection,
    id: &str,
    wanted: Entries,
) -> Result<Discussion, StoreError> {
    let row: Option<DiscussionRow> =
        sqlx::query_as(&format!("{DISCUSSION_SELECT} WHERE d.id = $1"))
            .bind(id)
            .fetch_optional(&mut *conn)
            .await?;
    let row = row.ok_or_else(|| discussion_not_found(id))?;
    discussion_from_row(conn, row, wanted).await
}

async fn load_discussions(
    conn: &mut AnyConnection,
    rows: Vec<DiscussionRow>,
) -> Result<Vec<Discussion>, StoreError> {
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(discussion_from_row(conn, row, Entries::All).await?);
    }
    Ok(out)
}

impl Store {
    /// Opens a discussion and mints its discussion-scoped token (returned only here).
    pub async fn create_discussion(
        &self,
        req: &CreateDiscussion,
    ) -> Result<CreatedDiscussion, StoreError> {
        self.create_discussion_with(req, None).await
    }

    /// [`Store::create_discussion`] once per `start_key` (see [`Store::create_run_once`]):
    /// asked again with the same key, it returns the discussion the first request created,
    /// with a fresh token (the earlier ones are revoked).
    pub async fn create_discussion_once(
        &self,
        req: &CreateDiscussion,
        start_key: &str,
    ) -> Result<CreatedDiscussion, StoreError> {
        check_start_key(start_key)?;
        self.create_discussion_with(req, Some(start_key)).await
    }

    async fn create_discussion_with(
        &self,
        req: &CreateDiscussion,
        start_key: Option<&str>,
    ) -> Result<CreatedDiscussion, StoreError> {
        if req.provider.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a discussion needs a provider name".into(),
            ));
        }
        let mut w = self.write().await?;
        if let Some(key) = start_key {
            let started: Option<(String,)> =
                sqlx::query_as("SELECT id FROM discussions WHERE start_key = $1")
                    .bind(key)
                    .fetch_optional(&mut *w.tx)
                    .await?;
            if let Some((id,)) = started {
                let token = reissue_token(&mut w.tx, TokenKind::Discussion, &id).await?;
                let discussion = load_discussion(&mut w.tx, &id, Entries::All).await?;
                w.commit().await?;
                return Ok(CreatedDiscussion { discussion, token });
            }
        }
        let id = new_id();
        sqlx::query(
            "INSERT INTO discussions (id, workspace_id, provider, cwd, status, created_at, \
               start_key) \
             SELECT $1, id, $2, $3, 'open', $4, $5 FROM workspaces WHERE key_prefix = $6",
        )
        .bind(&id)
        .bind(text::stored(&req.provider))
        .bind(text::stored(&req.cwd))
        .bind(time::now())
        .bind(start_key)
        .bind(DEFAULT_KEY_PREFIX)
        .execute(&mut *w.tx)
        .await?;
        let (_, token) = insert_token(
            &mut w.tx,
            TokenKind::Discussion,
            &format!("discussion {id}"),
            Some(&id),
        )
        .await?;
        let discussion = load_discussion(&mut w.tx, &id, Entries::All).await?;
        w.commit().await?;
        Ok(CreatedDiscussion { discussion, token })
    }

    /// Mints another discussion-scoped token, for resuming an open discussion in a new
    /// adapter process (the first token was only ever shown to the first one).
    pub async fn create_discussion_token(&self, id: &str) -> Result<CreatedToken, StoreError> {
        self.create_discussion_token_with(id, None).await
    }

    /// [`Store::create_discussion_token`] once per `start_key`: asked again with the same key
    /// (the answer to the first request was lost), it revokes the token the first request
    /// minted and mints a fresh one, so no live token is left that nobody holds.
    pub async fn create_discussion_token_once(
        &self,
        id: &str,
        start_key: &str,
    ) -> Result<CreatedToken, StoreError> {
        check_start_key(start_key)?;
        self.create_discussion_token_with(id, Some(start_key)).await
    }

    async fn create_discussion_token_with(
        &self,
        id: &str,
        start_key: Option<&str>,
    ) -> Result<CreatedToken, StoreError> {
        let mut w = self.write().await?;
        let current = load_discussion(&mut w.tx, id, Entries::All).await?;
        if current.status == DiscussionStatus::Promoted {
            let key = current.issue_key.unwrap_or_else(|| "an issue".into());
            return Err(StoreError::Conflict(format!(
                "discussion {id} was already promoted to {key}; continue there"
            )));
        }
        if let Some(key) = start_key {
            revoke_token_minted_by(&mut w.tx, key, id).await?;
        }
        let name = format!("discussion {id}");
        let (token_id, token) =
            insert_token(&mut w.tx, TokenKind::Discussion, &name, Some(id)).await?;
        if let Some(key) = start_key {
            sqlx::query("UPDATE tokens SET start_key = $1 WHERE id = $2")
                .bind(key)
                .bind(&token_id)
                .execute(&mut *w.tx)
                .await?;
        }
        w.commit().await?;
        Ok(CreatedToken {
            id: token_id,
            name,
            token,
            expires_at: None,
        })
    }

    pub async fn discussion(&self, id: &str) -> Result<Discussion, StoreError> {
        let mut conn = self.pool().acquire().await?;
        load_discussion(&mut conn, id, Entries::All).await
    }

    /// The discussion with its entries after position `after`, in order, as many as fit in
    /// `max_bytes` (one bigger than that comes alone): a page of `GET /discussions/{id}`.
    pub async fn discussion_page(
        &self,
        id: &str,
        after: i64,
        max_bytes: u64,
    ) -> Result<Discussion, StoreError> {
        let mut conn = self.pool().acquire().await?;
        load_discussion(&mut conn, id, Entries::After { after, max_bytes }).await
    }

    /// All discussions, newest first.
    pub async fn list_discussions(&self) -> Result<Vec<Discussion>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let rows: Vec<DiscussionRow> = sqlx::query_as(&format!(
            "{DISCUSSION_SELECT} ORDER BY d.created_at DESC, d.id DESC"
        ))
        .fetch_all(&mut *conn)
        .await?;
        load_discussions(&mut conn, rows).await
    }

    /// Discussions of `provider` that recorded `native_session_id`, newest first (for resuming
    /// a provider's native session into the same discussion).
    pub async fn find_discussions_by_native_session(
        &self,
        provider: &str,
        native_session_id: &str,
    ) -> Result<Vec<Discussion>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let rows: Vec<DiscussionRow> = sqlx::query_as(&format!(
            "{DISCUSSION_SELECT} WHERE d.provider = $1 AND d.id IN \
             (SELECT discussion_id FROM discussion_sessions WHERE native_session_id = $2) \
             ORDER BY d.created_at DESC, d.id DESC"
        ))
        .bind(text::stored(provider))
        .bind(text::stored(native_session_id))
        .fetch_all(&mut *conn)
        .await?;
        load_discussions(&mut conn, rows).await
    }

    /// Stores a batch of events on a discussion; one result per item, in order. Also accepted
    /// after promotion, so that late retries of the reporter succeed.
    pub async fn ingest_discussion_events(
        &self,
        discussion_id: &str,
        items: &[impl IngestInput],
        max_event_bytes: usize,
    ) -> Result<IngestResult, StoreError> {
        let now = time::now();
        let _slot = self.ingest_slots.take().await?;
        let mut w = self.write().await?;
        let exists: Option<(String,)> = sqlx::query_as("SELECT id FROM discussions WHERE id = $1")
            .bind(discussion_id)
            .fetch_optional(&mut *w.tx)
            .await?;
        if exists.is_none() {
            return Err(discussion_not_found(discussion_id));
        }
        let mut results = Vec::with_capacity(items.len());
        for input in items {
            if let Some(refused) = precheck(input, max_event_bytes) {
                results.push(refused);
                continue;
            }
            let item = input.item();
            let stored = match &item.event {
                Event::Message(m) if m.kind.is_discussion_entry() => {
                    let Some(content) = m.content.as_deref() else {
                        results.push(rejected(format!(
                            "a {} message needs content",
                            m.kind.as_str()
                        )));
                        continue;
                    };
                    sqlx::query(
                        "INSERT INTO discussion_entries (discussion_id, kind, content, source, \
                         source_key, created_at) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING",
                    )
                    .bind(discussion_id)
                    .bind(m.kind.as_str())
                    .bind(text::stored(content))
                    .bind(text::stored(&item.source))
                    .bind(text::stored(&item.source_key))
                    .bind(&now)
                    .execute(&mut *w.tx)
                    .await?
                    .rows_affected()
                        == 1
                }
                Event::Usage(usage) => {
                    insert_usage(
                        &mut w.tx,
                        DISCUSSION_USAGE_INSERT,
                        discussion_id,
                        item,
                        usage,
                        &now,
                    )
                    .await?
                }
                Event::Session { session_id } => {
                    append_native_session(&mut w.tx, discussion_id, item, session_id, &now).await?
                }
                // A discussion has no run, so no code changes of its own.
                Event::Message(_) | Event::HandoffReady { .. } | Event::GitChanges(_) => {
                    results.push(outcome(IngestOutcome::Filtered));
                    continue;
                }
            };
            results.push(outcome(if stored {
                IngestOutcome::Stored
            } else {
                IngestOutcome::Duplicate
            }));
        }
        w.commit().await?;
        Ok(IngestResult { results })
    }

    /// Deletes an open discussion that recorded nothing (no entry, native session id or usage),
    /// with its tokens: what is left of a session that turned out to continue another one.
    pub async fn delete_empty_discussion(&self, id: &str) -> Result<(), StoreError> {
        let mut w = self.write().await?;
        let current = load_discussion(&mut w.tx, id, Entries::All).await?;
        if current.status != DiscussionStatus::Open
            || !current.entries.is_empty()
            || !current.native_session_ids.is_empty()
            || !current.usage.is_empty()
        {
            return Err(StoreError::Conflict(format!(
                "discussion {id} holds a conversation or was promoted; only an empty open \
                 discussion can be deleted"
            )));
        }
        sqlx::query("DELETE FROM tokens WHERE kind = 'discussion' AND subject_id = $1")
            .bind(id)
            .execute(&mut *w.tx)
            .await?;
        sqlx::query("DELETE FROM discussions WHERE id = $1")
            .bind(id)
            .execute(&mut *w.tx)
            .await?;
        w.commit().await
    }

    /// Turns an open discussion into an issue (linked to it) with a run and that run's token,
    /// all in one transaction: the run keeps running for the agent that promoted, or, with
    /// `end_run`, is recorded as succeeded at once (no agent goes on with it).
    pub async fn promote_discussion(
        &self,
        discussion_id: &str,
        req: &PromoteDiscussion,
    ) -> Result<Promoted, StoreError> {
        let mut w = self.write().await?;
        let current = load_discussion(&mut w.tx, discussion_id, Entries::All).await?;
        if current.status == DiscussionStatus::Promoted {
            let key = current.issue_key.unwrap_or_else(|| "an issue".into());
            return Err(StoreError::Conflict(format!(
                "discussion {discussion_id} was already promoted to {key}; continue on that issue"
            )));
        }
        let issue_id = insert_issue(
            &mut w.tx,
            &CreateIssue {
                title: req.title.clone(),
                description: req.description.clone(),
                discussion_id: Some(discussion_id.to_string()),
            },
            w.author_token,
        )
        .await?;
        let created = insert_run(
            &mut w.tx,
            &issue_id,
            &CreateRun {
                provider: req.provider.clone(),
                cwd: req.cwd.clone(),
                job: None,
            },
            None,
            w.author_token,
        )
        .await?;
        let run = if req.end_run {
            let ended = FinishRun {
                status: RunStatus::Succeeded,
                exit_code: None,
                error: None,
            };
            record_end(
                &mut w.tx,
                &issue_id,
                &created.run.id,
                &ended,
                w.author_token,
            )
            .await?;
            load_run(&mut w.tx, &created.run.id).await?
        } else {
            created.run
        };
        sqlx::query("UPDATE discussions SET status = 'promoted', issue_id = $1 WHERE id = $2")
            .bind(&issue_id)
            .bind(discussion_id)
            .execute(&mut *w.tx)
            .await?;
        let issue = load_issue(&mut w.tx, &issue_id).await?;
        w.commit().await?;
        Ok(Promoted {
            issue,
            run,
            token: created.token,
        })
    }
}

/// Appends a native session id unless this item was stored before or the id is already the
/// latest one (an adapter may repeat it after a resume); true when appended.
async fn append_native_session(
    conn: &mut AnyConnection,
    discussion_id: &str,
    item: &IngestItem,
    session_id: &str,
    now: &str,
) -> Result<bool, StoreError> {
    let latest: Option<(Text,)> = sqlx::query_as(
        "SELECT native_session_id FROM discussion_sessions WHERE discussion_id = $1 \
         ORDER BY seq DESC LIMIT 1",
    )
    .bind(discussion_id)
    .fetch_optional(&mut *conn)
    .await?;
    if latest.is_some_and(|(Text(id),)| id == session_id) {
        return Ok(false);
    }
    let done = sqlx::query(
        "INSERT INTO discussion_sessions (discussion_id, native_session_id, source, source_key, \
         created_at) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
    )
    .bind(discussion_id)
    .bind(text::stored(session_id))
    .bind(text::stored(&item.source))
    .bind(text::stored(&item.source_key))
    .bind(now)
    .execute(conn)
    .await?;
    Ok(done.rows_affected() == 1)
}

/// Revokes the token an earlier request with `start_key` minted for discussion `id`, and frees
/// the key for the token minted now. The key names one request: for another discussion's
/// token it is refused rather than taken over.
async fn revoke_token_minted_by(
    conn: &mut AnyConnection,
    start_key: &str,
    id: &str,
) -> Result<(), StoreError> {
    let row: Option<(String, Option<String>)> =
        sqlx::query_as("SELECT id, subject_id FROM tokens WHERE start_key = $1")
            .bind(start_key)
            .fetch_optional(&mut *conn)
            .await?;
    match row {
        Some((token_id, Some(subject))) if subject == id => {
            sqlx::query("UPDATE tokens SET revoked = 1, start_key = NULL WHERE id = $1")
                .bind(token_id)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
        Some(_) => Err(StoreError::Conflict(format!(
            "the start key {start_key:?} already minted a token for another discussion; use a \
             new key for every request"
        ))),
        None => Ok(()),
    }
}
