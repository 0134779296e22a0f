//! Issues and user comments. Keys are `<prefix>-<n>` with a per-workspace sequence.

use std::collections::HashSet;

use sqlx::AnyConnection;
use wujie_protocol::api::{
    Author, Comment, CreateIssue, EditIssue, IssueChange, IssueDetail, IssueQuery, IssueStatus,
    IssueSummary, MAX_ISSUE_LIST, RunSummary,
};

use wujie_protocol::limits;

use crate::activity::{self, author_kind_str};
use crate::rows::{
    RUN_COLUMNS, RUNS_WITH_ISSUES, RunRow, issue_key, load_issue, parse_issue_status,
};
use crate::text::{Text, stored, stored_opt};
use crate::{DEFAULT_KEY_PREFIX, Store, StoreError, new_id, time};

/// Creates an issue in the default workspace inside the caller's transaction, for the user
/// token `token` (see [`activity::record`]); returns its id.
pub(crate) async fn insert_issue(
    conn: &mut AnyConnection,
    req: &CreateIssue,
    token: Option<&str>,
) -> Result<String, StoreError> {
    let title = req.title.trim();
    if title.is_empty() {
        return Err(StoreError::Invalid(
            "an issue needs a non-empty title".into(),
        ));
    }
    check_title_and_description(Some(title), Some(&req.description))?;
    // Taking the next number and bumping it in one statement keeps keys unique and gap-free.
    let (workspace_id, seq): (String, i64) = sqlx::query_as(
        "UPDATE workspaces SET next_issue_seq = next_issue_seq + 1 WHERE key_prefix = $1 \
         RETURNING id, next_issue_seq - 1",
    )
    .bind(DEFAULT_KEY_PREFIX)
    .fetch_one(&mut *conn)
    .await?;
    let id = new_id();
    sqlx::query(
        "INSERT INTO issues (id, workspace_id, seq, title, description, status, discussion_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(&id)
    .bind(workspace_id)
    .bind(seq)
    .bind(stored(title))
    .bind(stored(&req.description))
    .bind(IssueStatus::Open.as_str())
    .bind(&req.discussion_id)
    .bind(time::now())
    .execute(&mut *conn)
    .await?;
    let created = IssueChange::Created {
        title: title.to_owned(),
    };
    activity::record(conn, &id, &activity::user(), token, &created).await?;
    Ok(id)
}

/// Adds a comment (and its activity entry) inside the caller's transaction.
pub(crate) async fn insert_comment(
    conn: &mut AnyConnection,
    issue_id: &str,
    author: &Author,
    token: Option<&str>,
    body: &str,
) -> Result<Comment, StoreError> {
    let comment = Comment {
        id: new_id(),
        author_kind: author.kind,
        body: body.to_owned(),
        run_id: author.run_id.clone(),
        created_at: time::now(),
    };
    sqlx::query(
        "INSERT INTO comments (id, issue_id, author_kind, body, run_id, created_at) VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(&comment.id)
    .bind(issue_id)
    .bind(author_kind_str(comment.author_kind))
    .bind(stored(body))
    .bind(&comment.run_id)
    .bind(&comment.created_at)
    .execute(&mut *conn)
    .await?;
    let change = IssueChange::Comment {
        comment: comment.clone(),
    };
    activity::record(conn, issue_id, author, token, &change).await?;
    Ok(comment)
}

/// Finds an issue by key (`WUJ-3`, any case) or by id; returns its id.
pub(crate) async fn resolve_issue(
    conn: &mut AnyConnection,
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
                 WHERE w.key_prefix = $1 AND i.seq = $2 \
                 UNION ALL SELECT id FROM issues WHERE id = $3 LIMIT 1",
            )
            .bind(prefix)
            .bind(seq)
            .bind(wanted)
            .fetch_optional(conn)
            .await?
        }
        None => {
            sqlx::query_as("SELECT id FROM issues WHERE id = $1")
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
        let id = insert_issue(&mut w.tx, req, w.author_token).await?;
        let detail = load_issue(&mut w.tx, &id).await?;
        w.commit().await?;
        Ok(detail)
    }

    /// Issues of the default workspace matching `query`, newest first.
    pub async fn list_issues(&self, query: &IssueQuery) -> Result<Vec<IssueSummary>, StoreError> {
        let limit = query.limit.unwrap_or(MAX_ISSUE_LIST);
        if limit == 0 || limit > MAX_ISSUE_LIST {
            return Err(StoreError::Invalid(format!(
                "limit {limit} is out of range; ask for 1 to {MAX_ISSUE_LIST} issues"
            )));
        }
        let mut sql = format!("{SUMMARY_SELECT} w.key_prefix = $1");
        let mut binds: Vec<String> = vec![DEFAULT_KEY_PREFIX.to_owned()];
        if let Some(status) = query.status {
            binds.push(status.as_str().to_owned());
            sql.push_str(&format!(" AND i.status = ${}", binds.len()));
        }
        if let Some(text) = query
            .search
            .as_deref()
            .map(str::trim)
            .filter(|t| !t.is_empty())
        {
            // SQLite's lower() folds ASCII only; folding the needle the same way keeps both
            // sides comparable (and a position function, unlike LIKE, has no wildcards to
            // escape).
            binds.push(stored(&text.to_ascii_lowercase()).into_owned());
            let (pos, n) = (self.backend.position_fn(), binds.len());
            sql.push_str(&format!(
                " AND ({pos}(lower(i.title), ${n}) > 0 OR {pos}(lower(i.description), ${n}) > 0 \
                 OR EXISTS (SELECT 1 FROM comments c WHERE c.issue_id = i.id \
                 AND {pos}(lower(c.body), ${n}) > 0))"
            ));
        }
        sql.push_str(&format!(" ORDER BY i.seq DESC LIMIT ${}", binds.len() + 1));
        let mut select = sqlx::query_as(&sql);
        for value in &binds {
            select = select.bind(value);
        }
        let rows: Vec<IssueSummaryRow> =
            select.bind(i64::from(limit)).fetch_all(self.pool()).await?;
        Ok(rows.into_iter().map(IssueSummaryRow::summary).collect())
    }

    /// One issue as the issue list shows it.
    pub async fn issue_summary(&self, key_or_id: &str) -> Result<IssueSummary, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let id = resolve_issue(&mut conn, key_or_id).await?;
        let row: IssueSummaryRow = sqlx::query_as(&format!("{SUMMARY_SELECT} i.id = $1"))
            .bind(&id)
            .fetch_one(&mut *conn)
            .await?;
        Ok(row.summary())
    }

    /// The ids of the issues an agent is working on now (a run of theirs is running); of
    /// `issue_id` alone when given.
    pub async fn issues_with_running_runs(
        &self,
        issue_id: Option<&str>,
    ) -> Result<HashSet<String>, StoreError> {
        let ids: Vec<(String,)> =
            match issue_id {
                Some(id) => sqlx::query_as(
                    "SELECT DISTINCT issue_id FROM runs WHERE status = 'running' AND issue_id = $1",
                )
                .bind(id)
                .fetch_all(self.pool())
                .await?,
                None => {
                    sqlx::query_as("SELECT DISTINCT issue_id FROM runs WHERE status = 'running'")
                        .fetch_all(self.pool())
                        .await?
                }
            };
        Ok(ids.into_iter().map(|(id,)| id).collect())
    }

    /// The id of the issue with key (any case) or id `key_or_id`.
    pub async fn resolve_issue(&self, key_or_id: &str) -> Result<String, StoreError> {
        let mut conn = self.pool().acquire().await?;
        resolve_issue(&mut conn, key_or_id).await
    }

    /// An issue with its comments and runs (usage, and their latest messages in arrival order:
    /// [`crate::ANSWER_MESSAGE_BYTES`] for all of them, the newest run first).
    pub async fn issue(&self, key_or_id: &str) -> Result<IssueDetail, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let id = resolve_issue(&mut conn, key_or_id).await?;
        load_issue(&mut conn, &id).await
    }

    /// Adds a comment by `author` (a user, or an agent through its run).
    pub async fn add_comment(
        &self,
        key_or_id: &str,
        body: &str,
        author: &Author,
    ) -> Result<Comment, StoreError> {
        if body.trim().is_empty() {
            return Err(StoreError::Invalid(
                "a comment needs a non-empty body".into(),
            ));
        }
        limits::check_text_len("comment", body, limits::MAX_COMMENT_BYTES)
            .map_err(StoreError::Invalid)?;
        let mut w = self.write().await?;
        let issue_id = resolve_issue(&mut w.tx, key_or_id).await?;
        let comment = insert_comment(&mut w.tx, &issue_id, author, w.author_token, body).await?;
        w.commit().await?;
        Ok(comment)
    }

    /// Changes an issue's title and/or description. Fields equal to the stored ones are not
    /// recorded as changed.
    pub async fn edit_issue(
        &self,
        key_or_id: &str,
        edit: &EditIssue,
        author: &Author,
    ) -> Result<IssueDetail, StoreError> {
        let title = edit.title.as_deref().map(str::trim);
        if title == Some("") {
            return Err(StoreError::Invalid(
                "an issue needs a non-empty title; pass a title with text in it".into(),
            ));
        }
        check_title_and_description(title, edit.description.as_deref())?;
        if title.is_none() && edit.description.is_none() {
            return Err(StoreError::Invalid(
                "nothing to change: give a new title and/or description".into(),
            ));
        }
        let mut w = self.write().await?;
        let issue_id = resolve_issue(&mut w.tx, key_or_id).await?;
        let (Text(old_title), Text(old_description)): (Text, Text) =
            sqlx::query_as("SELECT title, description FROM issues WHERE id = $1")
                .bind(&issue_id)
                .fetch_one(&mut *w.tx)
                .await?;
        let change = IssueChange::Edited {
            title: title.filter(|t| *t != old_title).map(str::to_owned),
            description: edit.description.clone().filter(|d| *d != old_description),
        };
        if let IssueChange::Edited {
            title: new_title,
            description: new_description,
        } = &change
            && (new_title.is_some() || new_description.is_some())
        {
            sqlx::query(
                "UPDATE issues SET title = COALESCE($1, title), description = COALESCE($2, description) \
                 WHERE id = $3",
            )
            .bind(stored_opt(new_title.as_deref()))
            .bind(stored_opt(new_description.as_deref()))
            .bind(&issue_id)
            .execute(&mut *w.tx)
            .await?;
            activity::record(&mut w.tx, &issue_id, author, w.author_token, &change).await?;
        }
        let detail = load_issue(&mut w.tx, &issue_id).await?;
        w.commit().await?;
        Ok(detail)
    }

    /// Closes (as `done` or `closed`) or reopens (`open`) an issue. `in_progress` is not set by
    /// hand: starting a run sets it. Setting the current status again changes nothing.
    pub async fn set_issue_status(
        &self,
        key_or_id: &str,
        status: IssueStatus,
        author: &Author,
    ) -> Result<IssueDetail, StoreError> {
        if status == IssueStatus::InProgress {
            return Err(StoreError::Invalid(
                "an issue becomes in_progress when a run starts on it; set open, done or closed"
                    .into(),
            ));
        }
        let mut w = self.write().await?;
        let issue_id = resolve_issue(&mut w.tx, key_or_id).await?;
        let changed = sqlx::query("UPDATE issues SET status = $1 WHERE id = $2 AND status <> $3")
            .bind(status.as_str())
            .bind(&issue_id)
            .bind(status.as_str())
            .execute(&mut *w.tx)
            .await?;
        if changed.rows_affected() == 1 {
            activity::record(
                &mut w.tx,
                &issue_id,
                author,
                w.author_token,
                &IssueChange::Status { status },
            )
            .await?;
        }
        let detail = load_issue(&mut w.tx, &issue_id).await?;
        w.commit().await?;
        Ok(detail)
    }

    /// The runs of an issue, oldest first, without their transcripts.
    pub async fn issue_runs(&self, key_or_id: &str) -> Result<Vec<RunSummary>, StoreError> {
        let mut conn = self.pool().acquire().await?;
        let issue_id = resolve_issue(&mut conn, key_or_id).await?;
        let rows: Vec<RunSummaryRow> = sqlx::query_as(&format!(
            "SELECT {RUN_COLUMNS}, \
                 (SELECT COUNT(*) FROM run_messages m WHERE m.run_id = r.id) AS message_count \
             FROM {RUNS_WITH_ISSUES} WHERE r.issue_id = $1 AND r.did_not_start = 0 \
             ORDER BY r.started_at, r.id"
        ))
        .bind(&issue_id)
        .fetch_all(&mut *conn)
        .await?;
        rows.into_iter()
            .map(|row| row.run.into_summary(row.message_count))
            .collect()
    }
}

#[derive(sqlx::FromRow)]
struct IssueSummaryRow {
    id: String,
    seq: i64,
    key_prefix: String,
    title: Text,
    status: String,
    created_at: String,
}

/// The columns of an [`IssueSummaryRow`], up to the conditions of a `WHERE`.
const SUMMARY_SELECT: &str = "SELECT i.id, i.seq, w.key_prefix, i.title, i.status, i.created_at \
     FROM issues i JOIN workspaces w ON w.id = i.workspace_id WHERE";

impl IssueSummaryRow {
    fn summary(self) -> IssueSummary {
        IssueSummary {
            key: issue_key(&self.key_prefix, self.seq),
            id: self.id,
            title: self.title.into(),
            status: parse_issue_status(&self.status),
            created_at: self.created_at,
        }
    }
}

#[derive(sqlx::FromRow)]
struct RunSummaryRow {
    #[sqlx(flatten)]
    run: RunRow,
    message_count: i64,
}

/// A title and a description (either absent when unchanged) within their limits.
fn check_title_and_description(
    title: Option<&str>,
    description: Option<&str>,
) -> Result<(), StoreError> {
    if let Some(title) = title {
        limits::check_text_len("title", title, limits::MAX_TITLE_BYTES)
            .map_err(StoreError::Invalid)?;
    }
    if let Some(description) = description {
        limits::check_text_len("description", description, limits::MAX_DESCRIPTION_BYTES)
            .map_err(StoreError::Invalid)?;
    }
    Ok(())
}
