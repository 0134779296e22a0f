//! Issues and user comments. Keys are `<prefix>-<n>` with a per-workspace sequence.

use sqlx::SqliteConnection;
use wujie_protocol::api::{
    AuthorKind, Comment, CreateIssue, IssueDetail, IssueStatus, IssueSummary,
};

use crate::rows::{issue_key, issue_status_str, load_issue, parse_issue_status};
use crate::{DEFAULT_KEY_PREFIX, Store, StoreError, new_id, time};

/// Creates an issue in the default workspace inside the caller's transaction; returns its id.
pub(crate) async fn insert_issue(
    conn: &mut SqliteConnection,
    req: &CreateIssue,
) -> Result<String, StoreError> {
    let title = req.title.trim();
    if title.is_empty() {
        return Err(StoreError::Invalid(
            "an issue needs a non-empty title".into(),
        ));
    }
    // Taking the next number and bumping it in one statement keeps keys unique and gap-free.
    let (workspace_id, seq): (String, i64) = sqlx::query_as(
        "UPDATE workspaces SET next_issue_seq = next_issue_seq + 1 WHERE key_prefix = ? \
         RETURNING id, next_issue_seq - 1",
    )
    .bind(DEFAULT_KEY_PREFIX)
    .fetch_one(&mut *conn)
    .await?;
    let id = new_id();
    sqlx::query(
        "INSERT INTO issues (id, workspace_id, seq, title, description, status, discussion_id, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(workspace_id)
    .bind(seq)
    .bind(title)
    .bind(&req.description)
    .bind(issue_status_str(IssueStatus::Open))
    .bind(&req.discussion_id)
    .bind(time::now())
    .execute(conn)
    .await?;
    Ok(id)
}

pub(crate) async fn insert_comment(
    conn: &mut SqliteConnection,
    issue_id: &str,
    author: AuthorKind,
    body: &str,
    run_id: Option<&str>,
) -> Result<(String, String), StoreError> {
    let id = new_id();
    let created_at = time::now();
    sqlx::query(
        "INSERT INTO comments (id, issue_id, author_kind, body, run_id, created_at) VALUES (?, ?, ?, ?, ?, ?)",
    )
    .bind(&id)
    .bind(issue_id)
    .bind(match author {
        AuthorKind::User => "user",
        AuthorKind::Agent => "agent",
    })
    .bind(body)
    .bind(run_id)
    .bind(&created_at)
    .execute(conn)
    .await?;
    Ok((id, created_at))
}

/// Finds an issue by key (`WUJ-3`, any case) or by id; returns its id.
pub(crate) async fn resolve_issue(
    conn: &mut SqliteConnection,
    key_or_id: &str,
) -> Result<String, StoreError> {
    let wanted = key_or_id.trim();
    let by_key = wanted
        .rsplit_once('-')
        .and_then(|(prefix, n)| Some((prefix.to_ascii_uppercase(), n.parse::<i64>().ok()?)));
    let found: Option<(String,)> = match by_key {
        Some((prefix, seq)) => {
            sqlx::query_as(
                "SELECT i.id FROM issues i JOIN workspaces w ON w.id = i.workspace_id \
                 WHERE w.key_prefix = ? AND i.seq = ? \
                 UNION ALL SELECT id FROM issues WHERE id = ? LIMIT 1",
            )
            .bind(prefix)
            .bind(seq)
            .bind(wanted)
            .fetch_optional(conn)
            .await?
        }
        None => {
            sqlx::query_as("SELECT id FROM issues WHERE id = ?")
                .bind(wanted)
                .fetch_optional(conn)
                .await?
        }
    };
    found.map(|(id,)| id).ok_or_else(|| {
        StoreError::NotFound(format!(
            "issue {wanted} not found; check the key (listing issues shows the existing ones)"
        ))
    })
}

impl Store {
    pub async fn create_issue(&self, req: &CreateIssue) -> Result<IssueDetail, StoreError> {
        let mut w = self.write().await?;
        let id = insert_issue(&mut w.tx, req).await?;
        let detail = load_issue(&mut w.tx, &id).await?;
        w.commit().await?;
        Ok(detail)
    }

    /// All issues of the default workspace, newest first.
    pub async fn list_issues(&self) -> Result<Vec<IssueSummary>, StoreError> {
        let rows: Vec<(String, i64, String, String, String, String)> = sqlx::query_as(
            "SELECT i.id, i.seq, w.key_prefix, i.title, i.status, i.created_at FROM issues i \
             JOIN workspaces w ON w.id = i.workspace_id WHERE w.key_prefix = ? ORDER BY i.seq DESC",
        )
        .bind(DEFAULT_KEY_PREFIX)
        .fetch_all(self.pool())
        .await?;
        Ok(rows
            .into_iter()
            .map(
                |(id, seq, prefix, title, status, created_at)| IssueSummary {
                    id,
                    key: issue_key(&prefix, seq),
                    title,
                    status: parse_issue_status(&status),
                    created_at,
                },
            )
            .collect())
    }

    /// The id of the issue with key (any case) or id `key_or_id`.
    pub async fn resolve_issue(&self, key_or_id: &str) -> Result<String, StoreError> {
        let mut conn = self.pool().acquire().await?;
        resolve_issue(&mut conn, key_or_id).await
    }

    /// An issue with its comments and runs (messages in arrival order, usage).
    pub async fn issue(&self, key_or_id: &str) -> Result<IssueDetail, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let id = resolve_issue(&mut conn, key_or_id).await?;
        load_issue(&mut conn, &id).await
    }

    /// Adds a user comment.
    pub async fn add_comment(&self, key_or_id: &str, body: &str) -> Result<Comment, StoreError> {
        if body.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a comment needs a non-empty body".into(),
            ));
        }
        let mut w = self.write().await?;
        let issue_id = resolve_issue(&mut w.tx, key_or_id).await?;
        let (id, created_at) =
            insert_comment(&mut w.tx, &issue_id, AuthorKind::User, body, None).await?;
        w.commit().await?;
        Ok(Comment {
            id,
            author_kind: AuthorKind::User,
            body: body.to_string(),
            run_id: None,
            created_at,
        })
    }
}
