//! Reading rows back into the API types. Every loader takes a connection so that it works both
//! on a pooled read connection and inside a write transaction.

use serde_json::{Map, Value};
use sqlx::AnyConnection;
use wujie_protocol::api::{
    AuthorKind, Comment, FailureKind, IssueDetail, IssueStatus, Run, RunMessage, RunStatus,
};
use wujie_protocol::event::{MessageKind, Usage};

use crate::StoreError;

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

pub(crate) type UsageRow = (String, String, i64, i64, i64, i64);

pub(crate) fn usage_from_row((provider, model, i, o, cr, cw): UsageRow) -> Usage {
    Usage {
        provider,
        model,
        input_tokens: to_u64(i),
        output_tokens: to_u64(o),
        cache_read_tokens: to_u64(cr),
        cache_write_tokens: to_u64(cw),
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

pub(crate) type MessageRow = (
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    String,
    String,
);

/// Columns of a [`MessageRow`], for queries that select more around them.
pub(crate) const MESSAGE_COLUMNS: &str =
    "kind, content, tool, input, output, source, source_key, created_at";

pub(crate) fn message_from_row(row: MessageRow) -> Result<RunMessage, StoreError> {
    let (kind, content, tool, input, output, source, source_key, created_at) = row;
    let input = match input {
        Some(text) => Some(serde_json::from_str::<Map<String, Value>>(&text)?),
        None => None,
    };
    Ok(RunMessage {
        kind: parse_kind(&kind)?,
        content,
        tool,
        input,
        output,
        source,
        source_key,
        created_at,
    })
}

async fn load_messages(
    conn: &mut AnyConnection,
    run_id: &str,
) -> Result<Vec<RunMessage>, StoreError> {
    let rows: Vec<MessageRow> = sqlx::query_as(&format!(
        "SELECT {MESSAGE_COLUMNS} FROM run_messages WHERE run_id = $1 ORDER BY seq"
    ))
    .bind(run_id)
    .fetch_all(conn)
    .await?;
    rows.into_iter().map(message_from_row).collect()
}

type RunRow = (
    String,
    String,
    i64,
    String,
    String,
    String,
    String,
    Option<i64>,
    Option<String>,
    Option<String>,
    String,
    Option<String>,
);

const RUN_SELECT: &str = "SELECT r.id, r.issue_id, i.seq, w.key_prefix, r.provider, r.cwd, r.status, \
     r.exit_code, r.error, r.failure_kind, r.started_at, r.ended_at FROM runs r \
     JOIN issues i ON i.id = r.issue_id JOIN workspaces w ON w.id = i.workspace_id";

async fn run_from_row(conn: &mut AnyConnection, row: RunRow) -> Result<Run, StoreError> {
    let (
        id,
        issue_id,
        seq,
        prefix,
        provider,
        cwd,
        status,
        exit_code,
        error,
        failure_kind,
        started_at,
        ended_at,
    ) = row;
    let messages = load_messages(conn, &id).await?;
    let usage = load_usage(conn, RUN_USAGE_SQL, &id).await?;
    Ok(Run {
        issue_key: issue_key(&prefix, seq),
        issue_id,
        provider,
        cwd,
        status: parse_run_status(&status)?,
        exit_code: exit_code.and_then(|c| i32::try_from(c).ok()),
        error,
        failure_kind: parse_failure_kind(failure_kind.as_deref())?,
        started_at,
        ended_at,
        messages,
        usage,
        id,
    })
}

pub(crate) async fn load_run(conn: &mut AnyConnection, run_id: &str) -> Result<Run, StoreError> {
    let row: Option<RunRow> = sqlx::query_as(&format!("{RUN_SELECT} WHERE r.id = $1"))
        .bind(run_id)
        .fetch_optional(&mut *conn)
        .await?;
    let row = row.ok_or_else(|| run_not_found(run_id))?;
    run_from_row(conn, row).await
}

pub(crate) fn run_not_found(run_id: &str) -> StoreError {
    StoreError::NotFound(format!(
        "run {run_id} not found; check the id (an issue's detail lists its runs)"
    ))
}

async fn load_comments(
    conn: &mut AnyConnection,
    issue_id: &str,
) -> Result<Vec<Comment>, StoreError> {
    let rows: Vec<(String, String, String, Option<String>, String)> = sqlx::query_as(
        "SELECT id, author_kind, body, run_id, created_at FROM comments WHERE issue_id = $1 ORDER BY seq",
    )
    .bind(issue_id)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(id, author, body, run_id, created_at)| Comment {
            id,
            author_kind: if author == "agent" {
                AuthorKind::Agent
            } else {
                AuthorKind::User
            },
            body,
            run_id,
            created_at,
        })
        .collect())
}

type IssueRow = (
    String,
    i64,
    String,
    String,
    String,
    String,
    Option<String>,
    String,
);

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
    let (id, seq, prefix, title, description, status, discussion_id, created_at) =
        row.ok_or_else(|| StoreError::NotFound(format!("issue {issue_id} not found")))?;
    let comments = load_comments(conn, &id).await?;
    let run_rows: Vec<RunRow> = sqlx::query_as(&format!(
        "{RUN_SELECT} WHERE r.issue_id = $1 ORDER BY r.started_at, r.id"
    ))
    .bind(&id)
    .fetch_all(&mut *conn)
    .await?;
    let mut runs = Vec::with_capacity(run_rows.len());
    for row in run_rows {
        runs.push(run_from_row(conn, row).await?);
    }
    Ok(IssueDetail {
        key: issue_key(&prefix, seq),
        id,
        title,
        description,
        status: parse_issue_status(&status),
        created_at,
        discussion_id,
        comments,
        runs,
    })
}
