//! What the pages' forms do: create or edit an issue, comment, close or reopen, cancel a run,
//! queue or cancel a job, promote a discussion.
//! Each takes a [`CsrfForm`] (same origin, the session's CSRF token) and answers with a
//! redirect to the page that shows the result.

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde::Deserialize;
use wujie_protocol::api::{Author, AuthorKind, CreateIssue, EditIssue, IssueStatus};
use wujie_protocol::jobs::CreateJob;
use wujie_protocol::promotion::IssueDraft;

use super::auth::CsrfForm;
use super::{WebError, see_other};
use crate::AppState;

/// Changes made from a page are the user's.
fn user() -> Author {
    Author {
        kind: AuthorKind::User,
        run_id: None,
    }
}

#[derive(Deserialize)]
pub(crate) struct NewIssue {
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
}

pub(crate) async fn create_issue(
    State(state): State<AppState>,
    CsrfForm { form, token_id }: CsrfForm<NewIssue>,
) -> Result<Response, WebError> {
    let issue = state
        .store
        .written_by(&token_id)
        .create_issue(&CreateIssue {
            title: form.title,
            description: form.description,
            discussion_id: None,
        })
        .await?;
    Ok(see_other(&format!("/issues/{}", issue.key)))
}

#[derive(Deserialize)]
pub(crate) struct IssueEdit {
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
}

/// Changes the title and description, as `PATCH /issues/{key}` does (what is unchanged is not
/// recorded); pages open on the issue show the change live.
pub(crate) async fn edit_issue(
    State(state): State<AppState>,
    Path(key): Path<String>,
    CsrfForm { form, token_id }: CsrfForm<IssueEdit>,
) -> Result<Response, WebError> {
    let issue = state
        .store
        .written_by(&token_id)
        .edit_issue(
            &key,
            &EditIssue {
                title: Some(form.title),
                description: Some(form.description),
            },
            &user(),
        )
        .await?;
    Ok(see_other(&format!("/issues/{}", issue.key)))
}

#[derive(Deserialize)]
pub(crate) struct NewComment {
    #[serde(default)]
    body: String,
}

pub(crate) async fn comment(
    State(state): State<AppState>,
    Path(key): Path<String>,
    CsrfForm { form, token_id }: CsrfForm<NewComment>,
) -> Result<Response, WebError> {
    let issue_id = state.store.resolve_issue(&key).await?;
    let comment = state
        .store
        .written_by(&token_id)
        .add_comment(&issue_id, &form.body, &user())
        .await?;
    Ok(see_other(&format!(
        "/issues/{}#comment-{}",
        key.to_ascii_uppercase(),
        comment.id
    )))
}

#[derive(Deserialize)]
pub(crate) struct NewStatus {
    #[serde(default)]
    status: String,
}

pub(crate) async fn set_status(
    State(state): State<AppState>,
    Path(key): Path<String>,
    CsrfForm { form, token_id }: CsrfForm<NewStatus>,
) -> Result<Response, WebError> {
    let status = IssueStatus::from_name(&form.status).ok_or_else(|| {
        WebError::new(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown status {:?}; a page may set open, done or closed",
                form.status
            ),
        )
    })?;
    let issue = state
        .store
        .written_by(&token_id)
        .set_issue_status(&key, status, &user())
        .await?;
    Ok(see_other(&format!("/issues/{}", issue.key)))
}

/// The form has nothing but its CSRF token.
#[derive(Deserialize)]
pub(crate) struct NoFields {}

/// Asks for a running run to be cancelled, as `wujie issue cancel --run` does, and goes back to
/// the run on its issue's page (which shows who cancelled it until the run's end comes).
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    Path(id): Path<String>,
    CsrfForm { token_id, .. }: CsrfForm<NoFields>,
) -> Result<Response, WebError> {
    let cancel = state.store.written_by(&token_id).cancel_run(&id).await?;
    Ok(see_other(&format!("/issues/{}#run-{id}", cancel.issue_key)))
}

#[derive(Deserialize)]
pub(crate) struct NewJob {
    #[serde(default)]
    agent: String,
    #[serde(default)]
    prompt: String,
    #[serde(default)]
    worker: String,
}

/// Queues a job, as `wujie issue assign` does; empty fields are left out.
pub(crate) async fn assign(
    State(state): State<AppState>,
    Path(key): Path<String>,
    CsrfForm { form, token_id }: CsrfForm<NewJob>,
) -> Result<Response, WebError> {
    let given = |text: String| Some(text.trim().to_owned()).filter(|t| !t.is_empty());
    let job = state
        .store
        .written_by(&token_id)
        .create_job(
            &key,
            &CreateJob {
                provider: form.agent.trim().to_ascii_lowercase(),
                args: Vec::new(),
                prompt: given(form.prompt),
                worker_label: given(form.worker),
            },
        )
        .await?;
    Ok(see_other(&format!(
        "/issues/{}#job-{}",
        job.issue_key, job.id
    )))
}

/// Cancels a job no worker has taken yet, as `POST /jobs/{id}/cancel` does.
pub(crate) async fn cancel_job(
    State(state): State<AppState>,
    Path((key, id)): Path<(String, String)>,
    CsrfForm { token_id, .. }: CsrfForm<NoFields>,
) -> Result<Response, WebError> {
    let job = state.store.written_by(&token_id).cancel_job(&id).await?;
    if !job.issue_key.eq_ignore_ascii_case(&key) {
        return Err(WebError::new(
            StatusCode::NOT_FOUND,
            format!("job {id} is not a job of {key}"),
        ));
    }
    Ok(see_other(&format!(
        "/issues/{}#job-{}",
        job.issue_key, job.id
    )))
}

#[derive(Deserialize)]
pub(crate) struct Promotion {
    #[serde(default)]
    title: String,
    #[serde(default)]
    description: String,
}

/// Turns an open discussion into an issue, as `wujie discussion promote` does: the same
/// request from the title and description the form gave, and, no agent being attached here,
/// the promotion's run ends with it.
pub(crate) async fn promote(
    State(state): State<AppState>,
    Path(id): Path<String>,
    CsrfForm { form, token_id }: CsrfForm<Promotion>,
) -> Result<Response, WebError> {
    if form.title.trim().is_empty() {
        return Err(WebError::new(
            StatusCode::BAD_REQUEST,
            "the issue needs a title; go back and give one",
        ));
    }
    let d = state.store.discussion(&id).await?;
    let draft = IssueDraft {
        title: form.title,
        description: form.description,
    };
    let promoted = state
        .store
        .written_by(&token_id)
        .promote_discussion(&id, &draft.request(&d, &d.cwd, false))
        .await?;
    Ok(see_other(&format!("/issues/{}", promoted.issue.key)))
}
