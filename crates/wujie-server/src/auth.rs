//! Bearer-token authentication and scope checks. A user token may do everything (the reporter
//! delivers events and finishes runs with one); the token handed to an adapter reads its run's
//! issue or its discussion and nothing more, and only while the run runs or the discussion is
//! open.

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

    /// The store, writing for this caller: a user token's changes record that token as who
    /// made them.
    pub(crate) fn store(&self, state: &AppState) -> wujie_store::Store {
        match &self.0 {
            Principal::User { token_id } => state.store.written_by(token_id),
            _ => state.store.clone(),
        }
    }

    pub(crate) fn is_user(&self) -> bool {
        matches!(self.0, Principal::User { .. })
    }

    /// Users, or the adapter's token of a run on this issue.
    pub(crate) fn require_issue_read(&self, issue_id: &str, shown_as: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            Principal::Run { issue_id: own, .. } if own == issue_id => Ok(()),
            _ => Err(Caller::cannot_read_issue(shown_as)),
        }
    }

    /// The answer to a scoped token asking for an issue that is not its own, or that does not
    /// exist: the same in both cases.
    pub(crate) fn cannot_read_issue(shown_as: &str) -> Failure {
        Failure::forbidden(format!(
            "this token is not allowed to read issue {shown_as}; a run token only reads its own run's issue"
        ))
    }

    /// Users, or the discussion's own token.
    pub(crate) fn require_discussion_read(&self, discussion_id: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            Principal::Discussion {
                discussion_id: own, ..
            } if own == discussion_id => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token is not allowed to read discussion {discussion_id}; \
                 a discussion token only reads its own discussion"
            ))),
        }
    }

    /// The id of the token that authorised this request.
    pub(crate) fn token_id(&self) -> &str {
        match &self.0 {
            Principal::User { token_id }
            | Principal::Run { token_id, .. }
            | Principal::Discussion { token_id, .. } => token_id,
        }
    }

    /// Users only. The adapter's run token reads its own issue and nothing more (a forged
    /// comment is what it must not be able to write); an agent's comments are the `user_input`
    /// and `final` events its reporter syncs, recorded with the run.
    pub(crate) fn require_issue_comment(&self, shown_as: &str) -> Result<(), Failure> {
        match &self.0 {
            Principal::User { .. } => Ok(()),
            _ => Err(Failure::forbidden(format!(
                "this token may not comment on issue {shown_as}: a run's token only reads its own issue"
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
