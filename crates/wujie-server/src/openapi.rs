//! The OpenAPI document of `/api/v1`, generated from the handlers' annotations and the api.rs
//! types.

use utoipa::OpenApi;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use wujie_protocol::{api, jobs as job_api};

use crate::routes::{browser_logins, discussions, issues, jobs, meta, runs, tokens};
use crate::sse;

#[derive(OpenApi)]
#[openapi(
    info(title = "Wujie API", version = "1", description = "Issues worked on by local coding agents. \
        Every route but health and this document needs `Authorization: Bearer <token>`."),
    paths(
        meta::health, meta::openapi, meta::workspace, meta::workspace_usage,
        issues::create_issue, issues::list_issues, issues::get_issue, issues::add_comment,
        issues::edit_issue, issues::set_status, issues::list_runs, sse::issue_feed,
        sse::workspace_feed,
        runs::create_run, runs::get_run, runs::get_run_git, runs::run_messages, runs::ingest_events, runs::heartbeat, runs::finish_run,
        runs::cancel_run, runs::run_control,
        tokens::create_token, tokens::revoke_current, tokens::list_tokens, tokens::revoke_token,
        discussions::create_discussion, discussions::list_discussions,
        discussions::get_discussion, discussions::ingest_events, discussions::promote,
        discussions::create_token, discussions::delete_empty,
        browser_logins::create_browser_login,
        jobs::create_job, jobs::list_jobs, jobs::get_job, jobs::claim_job, jobs::renew_lease,
        jobs::finish_job, jobs::release_job, jobs::rerun_job, jobs::cancel_job,
    ),
    components(schemas(
        api::Workspace, api::CreateIssue, api::IssueStatus, api::IssueSummary, api::AuthorKind,
        api::Comment, api::RunStatus, api::RunMessage, api::Run, api::IssueDetail, api::CreateRun,
        api::CreatedRun, api::FinishRun, api::FinishedRun, api::IngestItem, api::IngestBatch, api::IngestOutcome,
        api::IngestItemResult, api::IngestResult, api::CreateComment, api::CreateToken,
        api::CreatedToken, api::ApiError, api::DiscussionStatus, api::CreateDiscussion,
        api::DiscussionEntry, api::Discussion, api::CreatedDiscussion, api::PromoteDiscussion,
        api::Promoted, api::EditIssue, api::SetIssueStatus, api::RunSummary, api::Author,
        api::IssueChange, api::IssueEvent, api::RunMessageEvent, api::FailureKind,
        api::BrowserLogin, api::TokenStatus, api::TokenInfo,
        job_api::JobStatus, job_api::CreateJob, job_api::Job, job_api::ClaimJob,
        job_api::ClaimedJob, job_api::RenewLease, job_api::FinishJob, job_api::ReleaseJob,
        job_api::JobAttempt,
        api::CancelRequest, api::RunControl, api::RunCancel, api::RunMessagePage,
    )),
    modifiers(&BearerAuth),
)]
struct ApiDoc;

struct BearerAuth;

impl utoipa::Modify for BearerAuth {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let components = doc.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(HttpBuilder::new().scheme(HttpAuthScheme::Bearer).build()),
        );
    }
}

/// The OpenAPI document served at `/api/v1/openapi.json`.
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    ApiDoc::openapi()
}
