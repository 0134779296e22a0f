//! The issue page's live updates: the issue's feed (`sse::feed`, the same cursor, replay and
//! bounds as the API's) with each item rendered to the HTML the page inserts. The page starts
//! the feed where its own rendering ended (`?after=`); a reconnect resumes from Last-Event-ID.
//! When the browser's session has ended (logged out, expired, its token revoked or expired),
//! the feed says so in an `ended` event, with a login link back to the page, and ends: a
//! redirect to the login page would only make the page's EventSource give up without a word.

use std::convert::Infallible;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use wujie_protocol::api::{IssueChange, IssueEvent, RunMessageEvent};
use wujie_protocol::pricing::PriceTable;
use wujie_store::{Store, StoreError};

use super::WebError;
use super::auth::Viewer;
use super::return_to::ReturnTo;
use super::view;
use crate::AppState;
use crate::sse::{Cursor, FeedFormat, event, feed, start_cursor};

#[derive(Deserialize)]
pub(crate) struct After {
    after: Option<String>,
}

pub(crate) async fn issue_feed(
    State(state): State<AppState>,
    viewer: Result<Viewer, WebError>,
    Path(key): Path<String>,
    Query(after): Query<After>,
    headers: HeaderMap,
) -> Result<Response, WebError> {
    let page = ReturnTo::parse(&format!("/issues/{key}"));
    let viewer = match viewer {
        Ok(viewer) => viewer,
        Err(WebError::LoginNeeded { .. }) => {
            let ended =
                futures::stream::once(
                    async move { Ok::<_, Infallible>(session_ended(page.as_ref())) },
                );
            return Ok(Sse::new(ended).into_response());
        }
        Err(e) => return Err(e),
    };
    let issue_id = state.store.resolve_issue(&key).await?;
    let cursor = if headers.contains_key("last-event-id") {
        start_cursor(&headers, true)?
    } else {
        match after.after.as_deref() {
            Some(a) => Cursor::parse(a, true).ok_or_else(|| {
                WebError::new(
                    StatusCode::BAD_REQUEST,
                    "`after` is not a feed position; reload the page",
                )
            })?,
            None => Cursor::default(),
        }
    };
    let format = HtmlFeed {
        store: state.store.clone(),
        prices: state.config.prices.clone(),
        viewer,
        issue_id: issue_id.clone(),
        page,
    };
    Ok(feed(state, Some(issue_id), cursor, format).into_response())
}

/// `ended`: the session ended; a login link back to `page`.
#[derive(Serialize)]
struct EndedHtml {
    html: String,
}

fn session_ended(page: Option<&ReturnTo>) -> Event {
    let data = EndedHtml {
        html: view::session_ended(page).into_string(),
    };
    event("ended", &data, None)
}

struct HtmlFeed {
    store: Store,
    prices: PriceTable,
    viewer: Viewer,
    issue_id: String,
    /// The issue's page, to come back to after logging in again.
    page: Option<ReturnTo>,
}

/// `message`: one transcript entry for the run's list.
#[derive(Serialize)]
struct MessageHtml<'a> {
    run: &'a str,
    key: String,
    html: String,
}

/// `run`: a run's status line (and, for a new run, its whole section), with the issue's usage.
#[derive(Serialize)]
struct RunHtml<'a> {
    run: &'a str,
    head: String,
    section: Option<String>,
    issue_usage: String,
}

/// `comment`: a new comment.
#[derive(Serialize)]
struct CommentHtml<'a> {
    id: &'a str,
    html: String,
}

/// `status`: the badge and the close/reopen buttons for the new status.
#[derive(Serialize)]
struct StatusHtml {
    badge: String,
    actions: String,
}

/// `edited`: a new title (text) and/or description (HTML).
#[derive(Serialize)]
struct EditedHtml<'a> {
    title: Option<&'a str>,
    description: Option<String>,
}

impl HtmlFeed {
    async fn run_update(&self, run_id: &str, new_run: bool, id: String) -> Event {
        let (run, usage) = match (
            self.store.run(run_id).await,
            self.store.issue_usage(&self.issue_id).await,
        ) {
            (Ok(run), Ok(usage)) => (run, usage),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "the live page could not read a run");
                return event("reload", &serde_json::json!({}), Some(id));
            }
        };
        let data = RunHtml {
            run: run_id,
            head: view::run_head(&run, &self.prices).into_string(),
            section: new_run.then(|| view::run_section(&run, &self.prices).into_string()),
            issue_usage: view::issue_usage(&usage, &self.prices).into_string(),
        };
        event("run", &data, Some(id))
    }
}

impl FeedFormat for HtmlFeed {
    async fn still_allowed(&self, store: &Store) -> Result<bool, StoreError> {
        self.viewer.still_logged_in(store).await
    }

    fn access_ended(&self) -> Option<Event> {
        Some(session_ended(self.page.as_ref()))
    }

    async fn message(&self, m: RunMessageEvent, id: String) -> Event {
        let data = MessageHtml {
            run: &m.run_id,
            key: format!("{}/{}", m.message.source, m.message.source_key),
            html: view::message_view(&m.message).into_string(),
        };
        event("message", &data, Some(id))
    }

    async fn issue(&self, change: IssueEvent, id: String) -> Event {
        match &change.change {
            IssueChange::Comment { comment } => {
                let data = CommentHtml {
                    id: &comment.id,
                    html: view::comment_view(comment).into_string(),
                };
                event("comment", &data, Some(id))
            }
            IssueChange::Status { status } => {
                let data = StatusHtml {
                    badge: view::status_badge(*status).into_string(),
                    actions: view::issue_actions(&self.viewer, &change.issue_key, *status)
                        .into_string(),
                };
                event("status", &data, Some(id))
            }
            IssueChange::Edited { title, description } => {
                let data = EditedHtml {
                    title: title.as_deref(),
                    description: description.as_deref().map(super::markdown::to_html),
                };
                event("edited", &data, Some(id))
            }
            IssueChange::RunStarted { run_id, .. } => self.run_update(run_id, true, id).await,
            IssueChange::RunFinished { run_id, .. } | IssueChange::Usage { run_id, .. } => {
                self.run_update(run_id, false, id).await
            }
            // The issue's creation is before any page of it.
            IssueChange::Created { .. } => event("noop", &serde_json::json!({}), Some(id)),
        }
    }
}
