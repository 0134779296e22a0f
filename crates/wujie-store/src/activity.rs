//! The activity log: every change to an issue (what, by whom, from which run) in one ordered
//! table, written in the transaction of the change itself, and the paged reads behind the live
//! feeds. Feeds page by stored order (`seq`), so a follower that reconnects with the last `seq`
//! it saw replays exactly what it missed.

use sqlx::AnyConnection;
use wujie_protocol::api::{Author, AuthorKind, IssueChange, IssueEvent, RunMessageEvent};

use crate::rows::{MESSAGE_COLUMNS, MessageRow, issue_key, message_from_row};
use crate::transcript::{MESSAGE_BYTES, fitting};
use crate::{Store, StoreError, time};

/// Most rows one feed read returns; a follower behind by more reads again.
pub const MAX_FEED_PAGE: u32 = 500;

/// Most bytes of messages one feed read returns (as [`crate::transcript`] counts them): a
/// feed replaying big messages holds a few at a time, not 500.
pub const FEED_PAGE_BYTES: u64 = 4 << 20;

pub(crate) fn author_kind_str(kind: AuthorKind) -> &'static str {
    match kind {
        AuthorKind::User => "user",
        AuthorKind::Agent => "agent",
    }
}

pub(crate) fn parse_author_kind(s: &str) -> AuthorKind {
    // The schema's CHECK allows only these two.
    if s == "agent" {
        AuthorKind::Agent
    } else {
        AuthorKind::User
    }
}

/// A user acting directly (not through a run).
pub(crate) fn user() -> Author {
    Author {
        kind: AuthorKind::User,
        run_id: None,
    }
}

/// Appends a change of `issue_id` to the log, inside the caller's transaction; `token` is
/// the user token of the request that made it ([`crate::WriteTx::author_token`]).
pub(crate) async fn record(
    conn: &mut AnyConnection,
    issue_id: &str,
    author: &Author,
    token: Option<&str>,
    change: &IssueChange,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO issue_activity (issue_id, author_kind, author_run_id, author_token_id, \
         change, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(issue_id)
    .bind(author_kind_str(author.kind))
    .bind(&author.run_id)
    .bind(token)
    .bind(serde_json::to_string(change)?)
    .bind(time::now())
    .execute(conn)
    .await?;
    Ok(())
}

/// A change of the activity log, with its issue's key and the name of the user token that
/// made it.
#[derive(sqlx::FromRow)]
struct ActivityRow {
    seq: i64,
    issue_id: String,
    issue_seq: i64,
    key_prefix: String,
    author_kind: String,
    author_run_id: Option<String>,
    token_name: Option<String>,
    change: String,
    created_at: String,
}

const ACTIVITY_SELECT: &str = "SELECT a.seq, a.issue_id, i.seq AS issue_seq, w.key_prefix, \
     a.author_kind, a.author_run_id, t.name AS token_name, a.change, a.created_at \
     FROM issue_activity a \
     JOIN issues i ON i.id = a.issue_id JOIN workspaces w ON w.id = i.workspace_id \
     LEFT JOIN tokens t ON t.id = a.author_token_id";

fn event_from_row(row: ActivityRow) -> Result<IssueEvent, StoreError> {
    Ok(IssueEvent {
        seq: row.seq,
        issue_key: issue_key(&row.key_prefix, row.issue_seq),
        issue_id: row.issue_id,
        author: Author {
            kind: parse_author_kind(&row.author_kind),
            run_id: row.author_run_id,
        },
        by: row.token_name,
        change: serde_json::from_str(&row.change)?,
        created_at: row.created_at,
    })
}

fn page(limit: u32) -> i64 {
    i64::from(limit.clamp(1, MAX_FEED_PAGE))
}

impl Store {
    /// Changes recorded after `after` (a `seq`), oldest first, at most `limit`: of one issue,
    /// or of every issue when `issue_id` is `None`.
    pub async fn issue_activity_after(
        &self,
        issue_id: Option<&str>,
        after: i64,
        limit: u32,
    ) -> Result<Vec<IssueEvent>, StoreError> {
        let rows: Vec<ActivityRow> =
            match issue_id {
                Some(id) => sqlx::query_as(&format!(
                    "{ACTIVITY_SELECT} WHERE a.issue_id = $1 AND a.seq > $2 ORDER BY a.seq LIMIT $3"
                ))
                .bind(id)
                .bind(after)
                .bind(page(limit))
                .fetch_all(self.pool())
                .await?,
                None => {
                    sqlx::query_as(&format!(
                        "{ACTIVITY_SELECT} WHERE a.seq > $1 ORDER BY a.seq LIMIT $2"
                    ))
                    .bind(after)
                    .bind(page(limit))
                    .fetch_all(self.pool())
                    .await?
                }
            };
        rows.into_iter().map(event_from_row).collect()
    }

    /// The issue's latest status changes (at most [`MAX_FEED_PAGE`]), oldest first, for its
    /// page's timeline. A change is stored as JSON whose first field is its type (serde
    /// writes an internally tagged enum's tag first), so a prefix finds them without reading
    /// every usage change besides.
    pub async fn issue_status_changes(
        &self,
        issue_id: &str,
    ) -> Result<Vec<IssueEvent>, StoreError> {
        let mut rows: Vec<ActivityRow> = sqlx::query_as(&format!(
            "{ACTIVITY_SELECT} WHERE a.issue_id = $1 AND a.change LIKE '{{\"type\":\"status\"%' \
             ORDER BY a.seq DESC LIMIT $2"
        ))
        .bind(issue_id)
        .bind(page(MAX_FEED_PAGE))
        .fetch_all(self.pool())
        .await?;
        rows.reverse();
        rows.into_iter().map(event_from_row).collect()
    }

    /// Messages stored on any run of `issue_id` after `after` (a message `seq`), in arrival
    /// order, at most `limit` and as many as fit in [`FEED_PAGE_BYTES`] (one bigger comes
    /// alone); and whether more follow.
    pub async fn issue_messages_after(
        &self,
        issue_id: &str,
        after: i64,
        limit: u32,
    ) -> Result<(Vec<RunMessageEvent>, bool), StoreError> {
        #[derive(sqlx::FromRow)]
        struct Row {
            seq: i64,
            run_id: String,
            #[sqlx(flatten)]
            message: MessageRow,
        }
        let mut conn = self.pool().acquire().await?;
        let limit = page(limit);
        let sizes: Vec<(i64, i64)> = sqlx::query_as(&format!(
            "SELECT m.seq, {MESSAGE_BYTES} AS bytes FROM run_messages m \
             WHERE m.run_id IN (SELECT id FROM runs WHERE issue_id = $1) AND m.seq > $2 \
             ORDER BY m.seq LIMIT $3"
        ))
        .bind(issue_id)
        .bind(after)
        .bind(limit + 1)
        .fetch_all(&mut *conn)
        .await?;
        let in_limit = sizes
            .len()
            .min(usize::try_from(limit).unwrap_or(usize::MAX));
        let (taken, _) = fitting(&sizes[..in_limit], FEED_PAGE_BYTES);
        let Some(&(last, _)) = taken.checked_sub(1).map(|i| &sizes[i]) else {
            return Ok((Vec::new(), false));
        };
        let rows: Vec<Row> = sqlx::query_as(&format!(
            "SELECT m.seq, m.run_id, {MESSAGE_COLUMNS} FROM run_messages m \
             WHERE m.run_id IN (SELECT id FROM runs WHERE issue_id = $1) AND m.seq > $2 \
             AND m.seq <= $3 ORDER BY m.seq"
        ))
        .bind(issue_id)
        .bind(after)
        .bind(last)
        .fetch_all(&mut *conn)
        .await?;
        let messages = rows
            .into_iter()
            .map(|row| {
                Ok(RunMessageEvent {
                    seq: row.seq,
                    run_id: row.run_id,
                    message: message_from_row(row.message)?,
                })
            })
            .collect::<Result<_, StoreError>>()?;
        Ok((messages, taken < sizes.len()))
    }
}
