//! The pages' live updates: each issue's feed (`sse::feed`, the same cursor, replay and
//! bounds as the API's) with each item rendered to the HTML the page inserts; for the issue
//! list and the board, the workspace's feed, each change sent as the issue's new row.
//!
//! A browser opens at most six HTTP/1.1 connections to a host, and a feed holds one for as
//! long as it is open: a feed per tab would leave the seventh tab, and every other page of the
//! server, waiting. So one connection carries the feeds of every issue a browser has open
//! (`/live?issues=KEY@POSITION,…`), followed by one shared worker (`assets/feed.js`) that hands
//! each page its issue's events. Every event says which issue it is of and its position
//! (`at`), from which the worker reopens the connection when a page joins or leaves, or the
//! connection drops. When the browser's session has ended (logged out, expired, its token
//! revoked or expired), each issue's feed says so in an `ended` event, with a login link back
//! to its page, and ends: a redirect to the login page would only make the EventSource give
//! up without a word.

use std::convert::Infallible;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, Sse};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use wujie_protocol::api::{IssueChange, IssueEvent, RunMessageEvent, RunStatus};
use wujie_protocol::event::MessageKind;
use wujie_protocol::notice;
use wujie_protocol::pricing::PriceTable;
use wujie_store::{Store, StoreError};

use super::WebError;
use super::auth::Viewer;
use super::code;
use super::return_to::ReturnTo;
use super::view;
use crate::AppState;
use crate::fanout::Entry;
use crate::sse::{Cursor, FeedFormat, Follow, event, feed};

/// The most issues one connection follows: bounds what one request makes the server hold.
const MAX_ISSUES: usize = 200;

/// The key that stands for the issue list (and the board) among the issues followed: every
/// issue's changes, each sent as the issue's new row.
const LIST_KEY: &str = "*";

#[derive(Deserialize)]
pub(crate) struct Issues {
    /// `KEY` (from the start) or `KEY@<message seq>.<activity seq>`, comma-separated.
    issues: String,
}

/// One issue asked for: its key as the page spells it (events carry it back) and where the
/// page's rendering ended.
fn parse_issues(list: &str) -> Result<Vec<(String, Cursor)>, WebError> {
    let bad = |what: String| WebError::new(StatusCode::BAD_REQUEST, what);
    let wanted: Vec<&str> = list.split(',').filter(|s| !s.trim().is_empty()).collect();
    if wanted.is_empty() {
        return Err(bad("name at least one issue to follow".to_owned()));
    }
    if wanted.len() > MAX_ISSUES {
        return Err(bad(format!(
            "one page follows at most {MAX_ISSUES} issues at once; close some tabs and reload"
        )));
    }
    wanted
        .into_iter()
        .map(|item| {
            let (key, at) = match item.split_once('@') {
                Some((key, at)) => (key, Some(at)),
                None => (item, None),
            };
            let cursor = match at {
                Some(at) => Cursor::parse(at, true).ok_or_else(|| {
                    bad(format!(
                        "{at:?} is not a position in {key}'s feed; reload the page"
                    ))
                })?,
                None => Cursor::default(),
            };
            Ok((key.trim().to_owned(), cursor))
        })
        .collect()
}

pub(crate) async fn issues_feed(
    State(state): State<AppState>,
    viewer: Result<Viewer, WebError>,
    Query(issues): Query<Issues>,
) -> Result<Response, WebError> {
    let wanted = parse_issues(&issues.issues)?;
    let viewer = match viewer {
        Ok(viewer) => viewer,
        Err(WebError::LoginNeeded { .. }) => {
            let ended: Vec<_> = wanted
                .iter()
                .map(|(key, _)| Ok::<_, Infallible>(session_ended(key)))
                .collect();
            return Ok(Sse::new(futures::stream::iter(ended)).into_response());
        }
        Err(e) => return Err(e),
    };
    let mut follows = Vec::with_capacity(wanted.len());
    for (key, cursor) in wanted {
        let issue_id = match key.as_str() {
            LIST_KEY => None,
            key => Some(state.store.resolve_issue(key).await?),
        };
        follows.push(Follow {
            issue_id: issue_id.clone(),
            cursor,
            format: HtmlFeed {
                store: state.store.clone(),
                prices: state.config.prices.clone(),
                viewer: viewer.clone(),
                issue_id,
                key,
            },
        });
    }
    Ok(feed(state, viewer.token_id().to_owned(), follows)?.into_response())
}

/// Every event's data: which issue it is of, its position in that issue's feed (to reopen
/// from), and what the page does with it.
#[derive(Serialize)]
struct OfIssue<'a, T> {
    issue: &'a str,
    at: Option<String>,
    #[serde(flatten)]
    data: T,
}

/// `ended`: the session ended; a login link back to `page`.
#[derive(Serialize)]
struct EndedHtml {
    html: String,
}

/// `ended` for the page of issue `key` (or the list's).
fn session_ended(key: &str) -> Event {
    let page = match key {
        LIST_KEY => ReturnTo::parse("/"),
        key => ReturnTo::parse(&format!("/issues/{key}")),
    };
    let data = EndedHtml {
        html: view::session_ended(page.as_ref()).into_string(),
    };
    let data = OfIssue {
        issue: key,
        at: None,
        data,
    };
    event("ended", &data, None)
}

struct HtmlFeed {
    store: Store,
    prices: PriceTable,
    viewer: Viewer,
    /// None for the issue list's feed (every issue's changes).
    issue_id: Option<String>,
    /// The issue's key as the page asked for it, or [`LIST_KEY`].
    key: String,
}

/// `row`: an issue's row in the list (its card on the board), after a change to what it
/// shows (title, status, an agent running).
#[derive(Serialize)]
struct RowHtml<'a> {
    key: &'a str,
    status: &'static str,
    html: String,
}

/// `message`: one transcript entry for the run's list; for a question, the notice (text).
#[derive(Serialize)]
struct MessageHtml<'a> {
    run: &'a str,
    key: String,
    html: String,
    question: Option<String>,
}

/// `run`: a run's status line (and, for a new run, its whole section), with the issue's usage;
/// at its end, the notice (text).
#[derive(Serialize)]
struct RunHtml<'a> {
    run: &'a str,
    head: String,
    section: Option<String>,
    issue_usage: String,
    ended: Option<String>,
    /// At its end, its code section again: the turns that changed nothing at the end are
    /// known only then, with no snapshot of their own to tell the page.
    code: Option<CodeHtml<'a>>,
}

/// `comment`: a new comment.
#[derive(Serialize)]
struct CommentHtml<'a> {
    id: &'a str,
    html: String,
}

/// `status`: the badge and the close/reopen buttons for the new status, and the change's
/// entry on the timeline.
#[derive(Serialize)]
struct StatusHtml {
    badge: String,
    actions: String,
    entry_id: String,
    entry: Option<String>,
}

/// `edited`: a new title (text) and/or description (HTML).
#[derive(Serialize)]
struct EditedHtml<'a> {
    title: Option<&'a str>,
    description: Option<String>,
}

impl HtmlFeed {
    /// An event of this issue; `at` is the position after it.
    fn event(&self, name: &str, data: impl Serialize, at: Option<String>) -> Event {
        // The list's position is the workspace feed's (an activity seq); pages and feed.js
        // give every position as `<message seq>.<activity seq>`.
        let at = match self.issue_id {
            Some(_) => at,
            None => at.map(|activity| format!("0.{activity}")),
        };
        let data = OfIssue {
            issue: &self.key,
            at,
            data,
        };
        event(name, &data, None)
    }

    /// `row` for the list: the issue's row as it is now, for the changes a row shows.
    async fn row_update(&self, change: &IssueEvent, id: String) -> Event {
        let shown = matches!(
            change.change,
            IssueChange::Created { .. }
                | IssueChange::Edited { .. }
                | IssueChange::Status { .. }
                | IssueChange::RunStarted { .. }
                | IssueChange::RunFinished { .. }
        );
        if !shown {
            return self.event("noop", serde_json::json!({}), Some(id));
        }
        let read = async {
            let issue = self.store.issue_summary(&change.issue_id).await?;
            let running = self
                .store
                .issues_with_running_runs(Some(&change.issue_id))
                .await?;
            Ok::<_, StoreError>((issue, !running.is_empty()))
        };
        match read.await {
            Ok((issue, running)) => {
                let data = RowHtml {
                    key: &issue.key,
                    status: issue.status.as_str(),
                    html: view::issue_row(&issue, running).into_string(),
                };
                self.event("row", data, Some(id))
            }
            Err(e) => {
                tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "the live list could not read an issue");
                self.event("reload", serde_json::json!({}), Some(id))
            }
        }
    }

    /// `ended`: the status and error the run ended with, when this is its end.
    async fn run_update(
        &self,
        issue_id: &str,
        run_id: &str,
        new_run: bool,
        id: String,
        ended: Option<(RunStatus, Option<&str>)>,
    ) -> Event {
        let (run, usage) = match (
            self.store.run(run_id).await,
            self.store.issue_usage(issue_id).await,
        ) {
            (Ok(run), Ok(usage)) => (run, usage),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "the live page could not read a run");
                return self.event("reload", serde_json::json!({}), Some(id));
            }
        };
        let code = match ended {
            Some(_) => match self.code_html(run_id).await {
                Ok(code) => Some(code),
                Err(e) => {
                    tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "the live page could not read a run's code changes at its end");
                    None
                }
            },
            None => None,
        };
        let data = RunHtml {
            run: run_id,
            code,
            head: view::run_head(&self.viewer, &run, &self.prices).into_string(),
            // A new run's code comes with the `code` events of its snapshots.
            section: new_run
                .then(|| view::run_section(&self.viewer, &run, None, &self.prices).into_string()),
            issue_usage: view::issue_usage(&usage, &self.prices).into_string(),
            ended: ended.map(|(status, error)| {
                notice::run_ended(view::short_id(run_id), Some(&run.provider), status, error)
            }),
        };
        self.event("run", data, Some(id))
    }
}

/// `code`: a run's code section as of its latest snapshot, which replaces the page's.
#[derive(Serialize)]
struct CodeHtml<'a> {
    run: &'a str,
    snapshot: Option<u32>,
    html: String,
}

impl HtmlFeed {
    async fn code_update(&self, run_id: &str, id: String) -> Event {
        match self.code_html(run_id).await {
            Ok(data) => self.event("code", data, Some(id)),
            Err(e) => {
                tracing::warn!(error = %wujie_protocol::error_text::with_causes(&e), "the live page could not read a run's code changes");
                self.event("reload", serde_json::json!({}), Some(id))
            }
        }
    }

    async fn code_html<'a>(&self, run_id: &'a str) -> Result<CodeHtml<'a>, StoreError> {
        let run_code = code::load(&self.store, run_id).await?;
        Ok(CodeHtml {
            run: run_id,
            snapshot: run_code.as_ref().map(code::RunCode::snapshot),
            html: code::run_code(run_id, run_code.as_ref()).into_string(),
        })
    }
}

impl FeedFormat for HtmlFeed {
    async fn still_allowed(&self, store: &Store) -> Result<bool, StoreError> {
        self.viewer.still_logged_in(store).await
    }

    fn access_ended(&self) -> Option<Event> {
        Some(session_ended(&self.key))
    }

    fn live(&self) -> Event {
        self.event("live", serde_json::json!({}), None)
    }

    /// Every page of the issue gets the same HTML, but for the close/reopen buttons (each
    /// page's own form token).
    fn shared_encoding(&self, entry: &Entry) -> Option<String> {
        match entry {
            Entry::Activity(IssueEvent {
                change: IssueChange::Status { .. },
                ..
            }) => None,
            _ => Some(format!("html:{}", self.key)),
        }
    }

    async fn message(&self, m: &RunMessageEvent, id: String) -> Event {
        let data = MessageHtml {
            run: &m.run_id,
            key: format!("{}/{}", m.message.source, m.message.source_key),
            html: view::message_view(&m.message).into_string(),
            question: match (m.message.kind, &m.message.content) {
                (MessageKind::Question, Some(question)) => Some(notice::question(question)),
                _ => None,
            },
        };
        self.event("message", data, Some(id))
    }

    async fn issue(&self, change: &IssueEvent, id: String) -> Event {
        let Some(issue_id) = &self.issue_id else {
            return self.row_update(change, id).await;
        };
        match &change.change {
            // A run's prompt or reply: its transcript shows it (the page's timeline does
            // not repeat it as a comment).
            IssueChange::Comment { comment } if comment.run_id.is_some() => {
                self.event("noop", serde_json::json!({}), Some(id))
            }
            IssueChange::Comment { comment } => {
                let data = CommentHtml {
                    id: &comment.id,
                    html: view::comment_view(comment).into_string(),
                };
                self.event("comment", data, Some(id))
            }
            IssueChange::Status { status } => {
                let data = StatusHtml {
                    badge: view::status_badge(*status).into_string(),
                    actions: view::issue_actions(&self.viewer, &change.issue_key, *status)
                        .into_string(),
                    entry_id: format!("activity-{}", change.seq),
                    entry: view::status_shown(*status)
                        .then(|| view::status_entry(change, *status).into_string()),
                };
                self.event("status", data, Some(id))
            }
            IssueChange::Edited { title, description } => {
                let data = EditedHtml {
                    title: title.as_deref(),
                    description: description.as_deref().map(super::markdown::to_html),
                };
                self.event("edited", data, Some(id))
            }
            IssueChange::RunStarted { run_id, .. } => {
                self.run_update(issue_id, run_id, true, id, None).await
            }
            IssueChange::RunFinished {
                run_id,
                status,
                error,
                ..
            } => {
                let ended = (*status, error.as_deref());
                self.run_update(issue_id, run_id, false, id, Some(ended))
                    .await
            }
            IssueChange::Usage { run_id, .. } | IssueChange::CancelRequested { run_id } => {
                self.run_update(issue_id, run_id, false, id, None).await
            }
            IssueChange::CodeChanged { run_id, .. } => self.code_update(run_id, id).await,
            // The issue's creation is before any page of it.
            IssueChange::Created { .. } => self.event("noop", serde_json::json!({}), Some(id)),
        }
    }
}
