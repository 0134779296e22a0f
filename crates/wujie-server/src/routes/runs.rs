use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use wujie_protocol::api::{
    ApiError, CreateRun, CreatedRun, FinishRun, FinishedRun, IngestBatch, IngestResult, Run,
    RunCancel, RunControl, RunMessagePage,
};

use serde::Deserialize;
use wujie_protocol::git::{GitChanges, TurnSpan};
use wujie_store::GitTurn;

use super::{Body, IngestBody, PageQuery, StartKey};
use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiResult, Failure};

#[utoipa::path(post, path = "/api/v1/issues/{key_or_id}/runs", tag = "runs",
    security(("bearer" = [])),
    params(("key_or_id" = String, Path, description = "Issue key or id"),
        ("Idempotency-Key" = Option<String>, Header, description = "A key the client chose for \
         this start (a UUID): the same request sent again with it returns the run the first one \
         created, with a new token, instead of creating another")),
    request_body = CreateRun,
    responses((status = 201, body = CreatedRun, description = "The run and its run-scoped token"),
        (status = 404, body = ApiError), (status = 409, body = ApiError, description = "The key started a run on another issue"),
        (status = 401, body = ApiError), (status = 403, body = ApiError),
        (status = 503, body = ApiError, description = "The database is busy; retry after Retry-After seconds")))]
pub(crate) async fn create_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(key_or_id): Path<String>,
    StartKey(start_key): StartKey,
    Body(req): Body<CreateRun>,
) -> ApiResult<(StatusCode, Json<CreatedRun>)> {
    caller.require_user("start runs")?;
    let store = caller.store(&state);
    let created = match start_key {
        Some(key) => store.create_run_once(&key_or_id, &req, &key).await?,
        None => store.create_run(&key_or_id, &req).await?,
    };
    Ok((StatusCode::CREATED, Json(created)))
}

#[utoipa::path(get, path = "/api/v1/runs/{id}", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, body = Run), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn get_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<Run>> {
    caller.require_user("read runs")?;
    Ok(Json(state.store.run(&id).await?))
}

#[utoipa::path(get, path = "/api/v1/runs/{id}/messages", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id"), PageQuery),
    responses((status = 200, body = RunMessagePage, description = "The next page of the run's \
         transcript, in arrival order"),
        (status = 400, body = ApiError), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn run_messages(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<PageQuery>, QueryRejection>,
) -> ApiResult<Json<RunMessagePage>> {
    let (after, max_bytes) = super::page_asked(query, "message")?;
    // A run token of the issue may read it too: the agent can read its own transcript.
    if !caller.is_user() {
        let (issue_id, issue_key) = state.store.run_issue(&id).await?;
        caller.require_issue_read(&issue_id, &issue_key)?;
    }
    Ok(Json(
        state
            .store
            .run_messages_after(&id, after, max_bytes)
            .await?,
    ))
}

/// `GET /runs/{id}/git` query.
#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
pub(crate) struct GitQuery {
    /// Only what turn N changed (from 1, counted by the run's final replies): `files` are
    /// that turn's, `commits` those it made, `turns` the turns they belong to (more than N
    /// alone when turns ended while the code was being read). A turn that changed nothing has
    /// no files; a turn past the run's last is not found.
    turn: Option<u32>,
}

#[utoipa::path(get, path = "/api/v1/runs/{id}/git", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id"), GitQuery),
    responses((status = 200, body = GitChanges, description = "The run's code changes as of its latest snapshot (or one turn's), with the patches"),
        (status = 400, body = ApiError, description = "Not a turn number"),
        (status = 404, body = ApiError, description = "No such run, it recorded no code changes, or it has no such turn"),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn get_run_git(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    query: Result<Query<GitQuery>, QueryRejection>,
) -> ApiResult<Json<GitChanges>> {
    let query = super::query_params(query, "")?;
    // A run token of the issue may read it too: the agent can look at its own changes.
    if !caller.is_user() {
        let (issue_id, issue_key) = state.store.run_issue(&id).await?;
        caller.require_issue_read(&issue_id, &issue_key)?;
    }
    if let Some(turn) = query.turn {
        return run_turn(&state, &id, turn).await.map(Json);
    }
    match state.store.run_git_changes(&id).await? {
        Some(changes) => Ok(Json(changes)),
        None => {
            // Tells a missing run apart from one that recorded nothing.
            state.store.run_issue(&id).await?;
            Err(Failure::new(
                StatusCode::NOT_FOUND,
                format!(
                    "run {id} recorded no code changes: it did not run in a git work tree, or \
                     git was not installed"
                ),
            ))
        }
    }
}

/// What turn `turn` of run `id` changed.
async fn run_turn(state: &AppState, id: &str, turn: u32) -> Result<GitChanges, Failure> {
    if turn == 0 {
        return Err(Failure::new(
            StatusCode::BAD_REQUEST,
            "turns count from 1 (turn 1 is what the run changed up to its first final reply)",
        ));
    }
    let found = state.store.run_git_turn(id, turn).await?;
    if matches!(found, GitTurn::Beyond { .. } | GitTurn::NoneRecorded) {
        // Tells a missing run apart from one without that turn.
        state.store.run_issue(id).await?;
    }
    match found {
        GitTurn::Changed { before, after } => {
            let commits_before = before.map(|b| b.commits).unwrap_or_default();
            after.turn(&commits_before).ok_or_else(|| {
                Failure::new(
                    StatusCode::NOT_FOUND,
                    format!(
                        "turn {turn} of run {id} was recorded without its own changes (by a \
                         wujie from before turns were kept); read the run's whole changes instead"
                    ),
                )
            })
        }
        GitTurn::Unchanged(as_of) => Ok(GitChanges {
            commits: Vec::new(),
            files: Vec::new(),
            turn_files: None,
            turns: Some(TurnSpan {
                first: turn,
                last: turn,
            }),
            ..as_of
        }),
        GitTurn::NotYet => Err(Failure::new(
            StatusCode::NOT_FOUND,
            format!(
                "what turn {turn} of run {id} changed is not recorded yet: the code is read after \
                 each turn, and a turn that changed nothing is known once a later turn's changes \
                 are recorded or the run ends"
            ),
        )),
        GitTurn::Beyond { turns } => Err(Failure::new(
            StatusCode::NOT_FOUND,
            match turns {
                0 => format!("run {id} has no turns yet"),
                1 => format!("run {id} has 1 turn"),
                n => format!("run {id} has {n} turns"),
            },
        )),
        GitTurn::NoneRecorded => Err(Failure::new(
            StatusCode::NOT_FOUND,
            format!(
                "run {id} recorded no code changes: it did not run in a git work tree, or git \
                 was not installed"
            ),
        )),
    }
}

#[utoipa::path(post, path = "/api/v1/runs/{id}/events", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id")),
    request_body = IngestBatch,
    responses((status = 200, body = IngestResult, description = "One result per item, in order"),
        (status = 404, body = ApiError), (status = 413, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn ingest_events(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    IngestBody(batch): IngestBody,
) -> ApiResult<Json<IngestResult>> {
    caller.require_user("report events")?;
    let result = caller
        .store(&state)
        .ingest_run_events(&id, &batch.items, state.config.max_event_bytes)
        .await?;
    Ok(Json(result))
}

#[utoipa::path(post, path = "/api/v1/runs/{id}/heartbeat", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id")),
    responses((status = 204, description = "Recorded"), (status = 404, body = ApiError),
        (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn heartbeat(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<StatusCode> {
    caller.require_user("send heartbeats")?;
    state.store.heartbeat(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/api/v1/runs/{id}/finish", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id")),
    request_body = FinishRun,
    responses((status = 200, body = FinishedRun, description = "The recorded outcome"), (status = 409, body = ApiError),
        (status = 404, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn finish_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Body(req): Body<FinishRun>,
) -> ApiResult<Json<FinishedRun>> {
    caller.require_user("finish runs")?;
    Ok(Json(caller.store(&state).finish_run(&id, &req).await?))
}

#[utoipa::path(post, path = "/api/v1/runs/{id}/cancel", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, body = RunCancel, description = "The cancel is asked for (or was \
         already): the run's reporter stops the agent within seconds and records the end"),
        (status = 409, body = ApiError, description = "The run already ended"),
        (status = 404, body = ApiError), (status = 401, body = ApiError),
        (status = 403, body = ApiError, description = "A run or discussion token cannot cancel")))]
pub(crate) async fn cancel_run(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RunCancel>> {
    caller.require_user("cancel runs")?;
    Ok(Json(caller.store(&state).cancel_run(&id).await?))
}

#[utoipa::path(get, path = "/api/v1/runs/{id}/control", tag = "runs", security(("bearer" = [])),
    params(("id" = String, Path, description = "Run id")),
    responses((status = 200, body = RunControl, description = "What the run's reporter is asked \
         to do; it asks every few seconds while the run runs"),
        (status = 404, body = ApiError), (status = 401, body = ApiError), (status = 403, body = ApiError)))]
pub(crate) async fn run_control(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> ApiResult<Json<RunControl>> {
    caller.require_user("read a run's control state")?;
    Ok(Json(state.store.run_control(&id).await?))
}
