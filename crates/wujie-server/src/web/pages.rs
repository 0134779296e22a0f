//! The pages people read: the issue list, the board, an issue, the discussions.

use std::collections::HashMap;

use axum::extract::{Path, Query, State};
use axum::response::Html;
use serde::Deserialize;
use wujie_protocol::api::{IssueQuery, IssueStatus};
use wujie_protocol::promotion::IssueDraft;

use super::auth::Viewer;
use super::view::{self, ListFilter};
use super::{WebError, html};
use crate::AppState;
use crate::sse::Cursor;

#[derive(Deserialize)]
pub(crate) struct ListQuery {
    #[serde(default)]
    search: String,
    #[serde(default)]
    status: String,
}

/// Issues shown on the list page at most.
const LIST_LIMIT: u32 = 200;

pub(crate) async fn issues(
    State(state): State<AppState>,
    viewer: Viewer,
    Query(q): Query<ListQuery>,
) -> Result<Html<String>, WebError> {
    let status = match q.status.as_str() {
        "" => None,
        name => Some(IssueStatus::from_name(name).ok_or_else(|| {
            WebError::new(
                axum::http::StatusCode::BAD_REQUEST,
                format!("unknown status {name:?}; choose open, in_progress, done or closed"),
            )
        })?),
    };
    let search = q.search.trim();
    let query = IssueQuery {
        status,
        search: (!search.is_empty()).then(|| search.to_owned()),
        limit: Some(LIST_LIMIT),
    };
    let listed = listed(&state, &query).await?;
    let cost = state
        .config
        .prices
        .cost(&state.store.workspace_usage().await?)
        .text();
    Ok(html(view::issue_list(
        &viewer,
        &listed,
        &ListFilter { search, status },
        &cost,
    )))
}

/// The board: the newest issues, in one column per status.
pub(crate) async fn board(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Html<String>, WebError> {
    let query = IssueQuery {
        status: None,
        search: None,
        limit: Some(LIST_LIMIT),
    };
    let listed = listed(&state, &query).await?;
    Ok(html(view::board(&viewer, &listed)))
}

/// The issues `query` matches, which of them an agent is working on, and where the live
/// updates of the list start: read first, so nothing changed meanwhile is missed.
async fn listed(state: &AppState, query: &IssueQuery) -> Result<view::Listed, WebError> {
    let activity = state.store.workspace_feed_head().await?;
    let issues = state.store.list_issues(query).await?;
    let running = state.store.issues_with_running_runs(None).await?;
    Ok(view::Listed {
        issues,
        running,
        feed_after: Cursor {
            message: 0,
            activity,
        }
        .id(true),
    })
}

/// An issue page's query: which run shows its messages before which position, in place of
/// its latest ones (the "Show earlier messages" link).
#[derive(Deserialize)]
pub(crate) struct EarlierMessages {
    run: Option<String>,
    before: Option<String>,
}

pub(crate) async fn issue(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(key): Path<String>,
    Query(earlier): Query<EarlierMessages>,
) -> Result<Html<String>, WebError> {
    let issue_id = state.store.resolve_issue(&key).await?;
    // Read before the issue: the live feed starts here, so nothing stored while the page is
    // read is missed (something may come twice; the page skips what it shows).
    let (message, activity) = state.store.issue_feed_head(&issue_id).await?;
    let mut issue = state.store.issue(&issue_id).await?;
    if let Some(run_id) = &earlier.run {
        let before = earlier.before.as_deref().unwrap_or("");
        let before: i64 = before.parse().map_err(|_| {
            WebError::new(
                axum::http::StatusCode::BAD_REQUEST,
                format!(
                    "before must be the position of a message (a whole number), not {before:?}"
                ),
            )
        })?;
        let run = issue
            .runs
            .iter_mut()
            .find(|run| &run.id == run_id)
            .ok_or_else(|| {
                WebError::new(
                    axum::http::StatusCode::NOT_FOUND,
                    format!("issue {} has no run {run_id}", issue.key),
                )
            })?;
        let page = state
            .store
            .run_messages_before(run_id, Some(before), wujie_store::ANSWER_MESSAGE_BYTES)
            .await?;
        run.messages = page.messages;
        run.messages_complete = page.complete;
        run.messages_before = page.before;
    }
    let jobs = state
        .store
        .jobs(&wujie_store::JobFilter {
            issue: Some(issue_id),
            statuses: Vec::new(),
            limit: 50,
        })
        .await?;
    let mut code = HashMap::new();
    for run in issue.runs.iter().filter(|r| r.git.is_some()) {
        if let Some(run_code) = super::code::load(&state.store, &run.id).await? {
            code.insert(run.id.clone(), run_code);
        }
    }
    let statuses = state.store.issue_status_changes(&issue.id).await?;
    let after = Cursor { message, activity }.id(true);
    Ok(html(view::issue_page(
        &viewer,
        &issue,
        &code,
        &jobs,
        &statuses,
        &after,
        &state.config.prices,
    )))
}

pub(crate) async fn discussions(
    State(state): State<AppState>,
    viewer: Viewer,
) -> Result<Html<String>, WebError> {
    let discussions = state.store.list_discussions().await?;
    Ok(html(view::discussion_list(&viewer, &discussions)))
}

pub(crate) async fn discussion(
    State(state): State<AppState>,
    viewer: Viewer,
    Path(id): Path<String>,
) -> Result<Html<String>, WebError> {
    let d = state.store.discussion(&id).await?;
    // The promotion form starts from the draft `wujie discussion promote` would create.
    let draft = IssueDraft::from_discussion(&d);
    Ok(html(view::discussion_page(
        &viewer,
        &d,
        &draft,
        &state.config.prices,
    )))
}
