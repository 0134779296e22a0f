//! Reading rows back into the API types. Every loader takes a connection so that it works both
//! on a pooled read connection and inside a write transaction.

use serde_json::{Map, Value};
use sqlx::AnyConnection;
use wujie_protocol::api::{
    AuthorKind, CancelRequest, Comment, FailureKind, IssueDetail, IssueStatus, Run, RunMessage,
    RunStatus, RunSummary,
};
use wujie_protocol::event::{MessageKind, Usage};
use wujie_protocol::git::RunGit;

use crate::StoreError;
use crate::text::Text;
use crate::transcript::{ANSWER_MESSAGE_BYTES, LatestMessages, latest_messages};

pub(crate) fn issue_key(prefix: &str, seq: i64) -> String {
    format!("{prefix}-{seq}")
}

/// The schema's CHECK allows only known statuses, so the fallback is never taken.
pub(crate) fn parse_issue_status(s: &str) -> IssueStatus {
    IssueStatus::from_name(s).unwrap_or(IssueStatus::Open)
}

pub(crate) fn parse_run_status(s: &str) -> Result<RunStatus, StoreError> {
    Ok(match s {
        "running" => RunStatus::Running,
        "succeeded" => RunStatus::Succeeded,
        "failed" => RunStatus::Failed,
        "cancelled" => RunStatus::Cancelled,
        other => {
            return Err(StoreError::Invalid(format!(
                "unknown run status {other:?} in the database"
            )));
        }
    })
}

pub(crate) fn parse_failure_kind(s: Option<&str>) -> Result<Option<FailureKind>, StoreError> {
    s.map(|name| {
        FailureKind::from_name(name).ok_or_else(|| {
            StoreError::Invalid(format!("unknown run failure kind {name:?} in the database"))
        })
    })
    .transpose()
}

pub(crate) fn parse_kind(s: &str) -> Result<MessageKind, StoreError> {
    MessageKind::from_name(s)
        .ok_or_else(|| StoreError::Invalid(format!("unknown message type {s:?} in the database")))
}

/// SQLite integers are signed. Ingest refuses token counts beyond i64::MAX before they get
/// here (`ingest::precheck`), so the fallback never stores a made-up number.
pub(crate) fn to_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

/// A usage row of a run or a discussion, or a sum of them per provider and model.
#[derive(sqlx::FromRow)]
pub(crate) struct UsageRow {
    provider: Text,
    model: Text,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
}

pub(crate) fn usage_from_row(row: UsageRow) -> Usage {
    Usage {
        provider: row.provider.into(),
        model: row.model.into(),
        input_tokens: to_u64(row.input_tokens),
        output_tokens: to_u64(row.output_tokens),
        cache_read_tokens: to_u64(row.cache_read_tokens),
        cache_write_tokens: to_u64(row.cache_write_tokens),
    }
}

/// Usage rows of a run (`table` = run_usage, `owner` = run_id) or a discussion, in arrival order.
pub(crate) async fn load_usage(
    conn: &mut AnyConnection,
    sql: &'static str,
    owner_id: &str,
) -> Result<Vec<Usage>, StoreError> {
    let rows: Vec<UsageRow> = sqlx::query_as(sql).bind(owner_id).fetch_all(conn).await?;
    Ok(rows.into_iter().map(usage_from_row).collect())
}

pub(crate) const RUN_USAGE_SQL: &str = "SELECT provider, model, input_tokens, output_tokens, \
     cache_read_tokens, cache_write_tokens FROM run_usage WHERE run_id = $1 ORDER BY seq";

pub(crate) const DISCUSSION_USAGE_SQL: &str = "SELECT provider, model, input_tokens, \
     output_tokens, cache_read_tokens, cache_write_tokens FROM discussion_usage \
     WHERE discussion_id = $1 ORDER BY seq";

/// A stored run message, as [`MESSAGE_COLUMNS`] selects it.
#[derive(sqlx::FromRow)]
pub(crate) struct MessageRow {
    kind: String,
    content: Option<Text>,
    tool: Option<Text>,
    input: Option<Text>,
    output: Option<Text>,
    source: Text,
    source_key: Text,
    created_at: String,
}

/// Columns of a [`MessageRow`], for queries that select more around them.
pub(crate) const MESSAGE_COLUMNS: &str =
    "kind, content, tool, input, output, source, source_key, created_at";

pub(crate) fn message_from_row(row: MessageRow) -> Result<RunMessage, StoreError> {
    let input = match row.input {
        Some(Text(text)) => Some(serde_json::from_str::<Map<String, Value>>(&text)?),
        None => None,
    };
    Ok(RunMessage {
        kind: parse_kind(&row.kind)?,
        content: row.content.map(String::from),
        tool: row.tool.map(String::from),
        input,
        output: row.output.map(String::from),
        source: row.source.into(),
        source_key: row.source_key.into(),
        created_at: row.created_at,
    })
}

/// A run without its messages and usage, as [`RUN_COLUMNS`] selects it.
#[derive(sqlx::FromRow)]
pub(crate) struct RunRow {
    id: String,
    issue_id: String,
    /// The issue's number: its key is `<key_prefix>-<issue_seq>`.
    issue_seq: i64,
    key_prefix: String,
    provider: Text,
    cwd: Text,
    status: String,
    exit_code: Option<i64>,
    error: Option<Text>,
    failure_kind: Option<String>,
    started_at: String,
    ended_at: Option<String>,
    cancel_requested_at: Option<String>,
    cancel_requested_by: Option<Text>,
}

/// Columns of a [`RunRow`] over [`RUNS_WITH_ISSUES`], for queries that select more around
/// them.
pub(crate) const RUN_COLUMNS: &str = "r.id, r.issue_id, i.seq AS issue_seq, w.key_prefix, \
     r.provider, r.cwd, r.status, r.exit_code, r.error, r.failure_kind, r.started_at, r.ended_at, \
     r.cancel_requested_at, r.cancel_requested_by";

/// Runs (`r`) with their issue (`i`) and its workspace (`w`).
pub(crate) const RUNS_WITH_ISSUES: &str = "runs r JOIN issues i ON i.id = r.issue_id \
     JOIN workspaces w ON w.id = i.workspace_id";

impl RunRow {
    /// The run as the API shows it, with (the latest of) its `messages` and `usage`.
    pub(crate) fn into_run(
        self,
        messages: LatestMessages,
        usage: Vec<Usage>,
        git: Option<RunGit>,
    ) -> Result<Run, StoreError> {
        let cancel = self.cancel_requested_at.map(|at| CancelRequest {
            by: self.cancel_requested_by.map(String::from),
            at,
        });
        Ok(Run {
            issue_key: issue_key(&self.key_prefix, self.issue_seq),
            issue_id: self.issue_id,
            provider: self.provider.into(),
            cwd: self.cwd.into(),
            status: parse_run_status(&self.status)?,
            exit_code: self.exit_code.and_then(|c| i32::try_from(c).ok()),
            error: self.error.map(String::from),
            failure_kind: parse_failure_kind(self.failure_kind.as_deref())?,
            started_at: self.started_at,
            ended_at: self.ended_at,
            messages: messages.messages,
            messages_complete: messages.complete,
            messages_before: messages.before,
            usage,
            git,
            cancel,
            id: self.id,
        })
    }

    /// The run as an issue's run list shows it, with the number of its messages.
    pub(crate) fn into_summary(self, message_count: i64) -> Result<RunSummary, StoreError> {
        Ok(RunSummary {
            issue_key: issue_key(&self.key_prefix, self.issue_seq),
            provider: self.provider.into(),
            cwd: self.cwd.into(),
            status: parse_run_status(&self.status)?,
            exit_code: self.exit_code.and_then(|c| i32::try_from(c).ok()),
            error: self.error.map(String::from),
            failure_kind: parse_failure_kind(self.failure_kind.as_deref())?,
            started_at: self.started_at,
            ended_at: self.ended_at,
            message_count: u64::try_from(message_count).unwrap_or(0),
            id: self.id,
        })
    }
}

/// The run of `row` with its latest messages that fit in `budget` bytes, and their bytes.
async fn run_from_row(
    conn: &mut AnyConnection,
    row: RunRow,
    budget: u64,
) -> Result<(Run, u64), StoreError> {
    let messages = latest_messages(conn, &row.id, None, budget).await?;
    let bytes = messages.bytes;
    let usage = load_usage(conn, RUN_USAGE_SQL, &row.id).await?;
    let git = crate::git_snapshots::latest(conn, &row.id)
        .await?
        .map(|changes| changes.summary());
    Ok((row.into_run(messages, usage, git)?, bytes))
}

pub(crate) async fn load_run(conn: &mut AnyConnection, run_id: &str) -> Result<Run, StoreError> {
    let row: Option<RunRow> = sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS} FROM {RUNS_WITH_ISSUES} WHERE r.id = $1"
    ))
    .bind(run_id)
    .fetch_optional(&mut *conn)
    .await?;
    let row = row.ok_or_else(|| run_not_found(run_id))?;
    Ok(run_from_row(conn, row, ANSWER_MESSAGE_BYTES).await?.0)
}

pub(crate) fn run_not_found(run_id: &str) -> StoreError {
    StoreError::NotFound(format!(
        "run {run_id} not found; check the id (an issue's detail lists its runs)"
    ))
}

#[derive(sqlx::FromRow)]
struct CommentRow {
    id: String,
    author_kind: String,
    body: Text,
    run_id: Option<String>,
    created_at: String,
}

async fn load_comments(
    conn: &mut AnyConnection,
    issue_id: &str,
) -> Result<Vec<Comment>, StoreError> {
    let rows: Vec<CommentRow> = sqlx::query_as(
        "SELECT id, author_kind, body, run_id, created_at FROM comments WHERE issue_id = $1 ORDER BY seq",
    )
    .bind(issue_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| Comment {
            id: row.id,
            author_kind: if row.author_kind == "agent" {
                AuthorKind::Agent
            } else {
                AuthorKind::User
            },
            body: row.body.into(),
            run_id: row.run_id,
            created_at: row.created_at,
        })
        .collect())
}

#[derive(sqlx::FromRow)]
struct IssueRow {
    id: String,
    seq: i64,
    key_prefix: String,
    title: Text,
    description: Text,
    status: String,
    discussion_id: Option<String>,
    created_at: String,
}

pub(crate) async fn load_issue(
    conn: &mut AnyConnection,
    issue_id: &str,
) -> Result<IssueDetail, StoreError> {
    let row: Option<IssueRow> = sqlx::query_as(
        "SELECT i.id, i.seq, w.key_prefix, i.title, i.description, i.status, i.discussion_id, \
             i.created_at FROM issues i JOIN workspaces w ON w.id = i.workspace_id WHERE i.id = $1",
    )
    .bind(issue_id)
    .fetch_optional(&mut *conn)
    .await?;
    let issue = row.ok_or_else(|| StoreError::NotFound(format!("issue {issue_id} not found")))?;
    let comments = load_comments(conn, &issue.id).await?;
    let run_rows: Vec<RunRow> = sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS} FROM {RUNS_WITH_ISSUES} WHERE r.issue_id = $1 \
         AND r.did_not_start = 0 ORDER BY r.started_at, r.id"
    ))
    .bind(&issue.id)
    .fetch_all(&mut *conn)
    .await?;
    // The runs share one budget of messages, the newest run first: it is the one being read.
    let mut budget = ANSWER_MESSAGE_BYTES;
    let mut runs = Vec::with_capacity(run_rows.len());
    for row in run_rows.into_iter().rev() {
        let (run, bytes) = run_from_row(conn, row, budget).await?;
        budget = budget.saturating_sub(bytes);
        runs.push(run);
    }
    runs.reverse();
    Ok(IssueDetail {
        key: issue_key(&issue.key_prefix, issue.seq),
        id: issue.id,
        title: issue.title.into(),
        description: issue.description.into(),
        status: parse_issue_status(&issue.status),
        created_at: issue.created_at,
        discussion_id: issue.discussion_id,
        comments,
        runs,
    })
}
