//! Bearer-token authentication and scope checks. A user token may do everything; a run token
//! only its own run (and reading its issue); a discussion token only its own discussion.

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;
use wujie_protocol::api::{Author, AuthorKind};
use wujie_store::Principal;

use crate::AppState;
use crate::error::Failure;

/// The verified caller of a request.
#[derive(Debug)]
pub(crate) struct Caller(pub(crate) Principal);

impl FromRequestParts<AppState> for Caller {
    type Rejection = Failure;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, Failure> {
        let header = parts.headers.get(AUTHORIZATION).ok_or_else(|| {
            Failure::unauthorized(
                "missing Authorization header; send `Authorization: Bearer <token>` with a \
                 Wujie token",
            )
        })?;
        let secret = header
            .to_str()
            .ok()
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| {
                Failure::unauthorized("malformed Authorization header; expected `Bearer <token>`")
            })?;
        match state.store.verify_token(secret).await? {
            Some(principal) => Ok(Caller(principal)),
            None => Err(Failure::unauthorized(
                "the token is unknown or revoked; use a valid token or create a new one",
            )),
        }
    }
}

impl Caller {
    pub(crate) fn require_user(&self, action: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token is scoped to one run or discussion and cannot {action}; use a user token"
            ))),
        }
    }

    /// Users, or the run's own token.
    pub(crate) fn require_run(&self, run_id: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            Principal::Run { run_id: own, .. } if own == run_id => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token is not allowed to access run {run_id}; a run token only reaches its own run"
            ))),
        }
    }

    /// Users, or the token of a run on this issue.
    pub(crate) fn require_issue_read(&self, issue_id: &str, shown_as: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            Principal::Run { issue_id: own, .. } if own == issue_id => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token is not allowed to read issue {shown_as}; a run token only reads its own run's issue"
            ))),
        }
    }

    /// Users, or the discussion's own token.
    pub(crate) fn require_discussion(&self, discussion_id: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            Principal::Discussion { discussion_id: own } if own == discussion_id => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token is not allowed to access discussion {discussion_id}; \
                 a discussion token only reaches its own discussion"
            ))),
        }
    }

    /// Users, or the token of a run on this issue (an agent commenting on its own issue).
    pub(crate) fn require_issue_comment(
        &self,
        issue_id: &str,
        shown_as: &str,
    ) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            Principal::Run { issue_id: own, .. } if own == issue_id => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token is not allowed to comment on issue {shown_as}; a run token only comments on its own run's issue"
            ))),
        }
    }

    /// Who the caller's writes are recorded as: a user, or the agent of the token's run.
    pub(crate) fn author(&self) -> Author {
        match &self.0 {
            Principal::Run { run_id, .. } => Author {
                kind: AuthorKind::Agent,
                run_id: Some(run_id.clone()),
            },
            _ => Author {
                kind: AuthorKind::User,
                run_id: None,
            },
        }
    }
}
