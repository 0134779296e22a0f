//! The issue lifecycle over the API: comments keep their author, edits, close and reopen,
//! statuses moved by runs, filtered and searched lists, an issue's runs.

use wujie_protocol::api::{
    AuthorKind, CreateComment, EditIssue, FinishRun, IngestBatch, IssueChange, IssueQuery,
    IssueStatus, RunStatus,
};
use wujie_protocol::event::MessageKind;

use super::harness::{Harness, message, status_of};

#[tokio::test]
async fn comments_keep_their_author_user_or_the_agent_of_a_run() {
    let h = Harness::start().await;
    let issue = h.issue("authors").await;
    let by_user = h
        .admin
        .add_comment(
            &issue.key.to_lowercase(),
            &CreateComment {
                body: "from a user".into(),
            },
        )
        .await
        .expect("user comment");
    assert_eq!(by_user.author_kind, AuthorKind::User);
    assert_eq!(by_user.run_id, None);

    // An agent's comments are the final replies its reporter syncs; the adapter's own run
    // token reads its issue and may not write a comment, on its issue or any other.
    let run = h.run_on(&issue.key).await;
    h.admin
        .ingest_run_events(
            &run.run.id,
            &IngestBatch {
                items: vec![message(MessageKind::Final, "reply", "from the agent")],
            },
        )
        .await
        .expect("ingest");
    let agent = h.client(&run.token);
    let other = h.issue("someone else's").await;
    for key in [issue.key.as_str(), other.key.as_str(), "WUJ-999"] {
        let refused = agent
            .add_comment(key, &CreateComment { body: "no".into() })
            .await
            .expect_err("a run token comments");
        assert_eq!(status_of(&refused), 403, "{key}");
    }

    let detail = h.admin.get_issue(&issue.key).await.expect("issue");
    let authors: Vec<_> = detail
        .comments
        .iter()
        .map(|c| (c.author_kind, c.run_id.clone(), c.body.as_str()))
        .collect();
    assert_eq!(
        authors,
        vec![
            (AuthorKind::User, None, "from a user"),
            (
                AuthorKind::Agent,
                Some(run.run.id.clone()),
                "from the agent"
            ),
        ]
    );
    h.stop().await;
}

#[tokio::test]
async fn edit_changes_only_the_fields_given_and_refuses_an_empty_title() {
    let h = Harness::start().await;
    let issue = h.issue("before").await;
    let edited = h
        .admin
        .edit_issue(
            &issue.key,
            &EditIssue {
                title: Some("after".into()),
                description: None,
            },
        )
        .await
        .expect("edit");
    assert_eq!(edited.title, "after");
    assert_eq!(edited.description, issue.description);

    let edited = h
        .admin
        .edit_issue(
            &issue.key,
            &EditIssue {
                title: None,
                description: Some("new text".into()),
            },
        )
        .await
        .expect("edit description");
    assert_eq!(
        (edited.title.as_str(), edited.description.as_str()),
        ("after", "new text")
    );

    for bad in [
        EditIssue {
            title: Some("  ".into()),
            description: None,
        },
        EditIssue::default(),
    ] {
        let e = h
            .admin
            .edit_issue(&issue.key, &bad)
            .await
            .expect_err("bad edit");
        assert_eq!(status_of(&e), 400, "{e}");
    }
    let still = h.admin.get_issue(&issue.key).await.expect("issue");
    assert_eq!(still.title, "after");

    let missing = h
        .admin
        .edit_issue(
            "WUJ-999",
            &EditIssue {
                title: Some("x".into()),
                description: None,
            },
        )
        .await
        .expect_err("missing");
    assert_eq!(status_of(&missing), 404);
    h.stop().await;
}

#[tokio::test]
async fn a_run_moves_an_issue_to_in_progress_and_close_and_reopen_are_recorded() {
    let h = Harness::start().await;
    let issue = h.issue("lifecycle").await;
    assert_eq!(issue.status, IssueStatus::Open);
    let run = h.run_on(&issue.key).await;
    assert_eq!(
        h.admin.get_issue(&issue.key).await.expect("issue").status,
        IssueStatus::InProgress
    );
    h.admin
        .finish_run(
            &run.run.id,
            &FinishRun {
                status: RunStatus::Succeeded,
                exit_code: Some(0),
                error: None,
            },
        )
        .await
        .expect("finish");

    let done = h
        .admin
        .set_issue_status(&issue.key, IssueStatus::Done)
        .await
        .expect("close");
    assert_eq!(done.status, IssueStatus::Done);
    let reopened = h
        .admin
        .set_issue_status(&issue.key, IssueStatus::Open)
        .await
        .expect("reopen");
    assert_eq!(reopened.status, IssueStatus::Open);
    let closed = h
        .admin
        .set_issue_status(&issue.key, IssueStatus::Closed)
        .await
        .expect("close as not done");
    assert_eq!(closed.status, IssueStatus::Closed);

    let by_hand = h
        .admin
        .set_issue_status(&issue.key, IssueStatus::InProgress)
        .await
        .expect_err("in_progress by hand");
    assert_eq!(status_of(&by_hand), 400);
    let run_token = h
        .client(&run.token)
        .set_issue_status(&issue.key, IssueStatus::Open)
        .await
        .expect_err("run token closes");
    // Its run has ended, so the adapter's token is dead altogether.
    assert_eq!(status_of(&run_token), 401);

    // The log records every change, with its author, in order.
    let log = h
        .store
        .issue_activity_after(Some(&issue.id), 0, 100)
        .await
        .expect("activity");
    let changes: Vec<_> = log
        .iter()
        .map(|e| match &e.change {
            IssueChange::Created { .. } => "created".to_owned(),
            IssueChange::RunStarted { .. } => "run_started".to_owned(),
            IssueChange::RunFinished { status, .. } => format!("run_finished {}", status.as_str()),
            IssueChange::Status { status } => format!("status {}", status.as_str()),
            other => format!("{other:?}"),
        })
        .collect();
    assert_eq!(
        changes,
        [
            "created",
            "run_started",
            "status in_progress",
            "run_finished succeeded",
            "status done",
            "status open",
            "status closed"
        ]
    );
    assert_eq!(log[3].author.kind, AuthorKind::Agent);
    assert_eq!(log[3].author.run_id.as_deref(), Some(run.run.id.as_str()));
    assert_eq!(log[4].author.kind, AuthorKind::User);
    h.stop().await;
}

#[tokio::test]
async fn list_filters_by_status_searches_titles_descriptions_and_comments_and_limits() {
    let h = Harness::start().await;
    let a = h.issue("Parser crash").await;
    let b = h.issue("Slow startup").await;
    let c = h.issue("Docs typo").await;
    h.admin
        .add_comment(
            &c.key,
            &CreateComment {
                body: "the PARSER docs are wrong".into(),
            },
        )
        .await
        .expect("comment");
    h.admin
        .set_issue_status(&b.key, IssueStatus::Done)
        .await
        .expect("close");

    let keys = |list: Vec<wujie_protocol::api::IssueSummary>| {
        list.into_iter().map(|i| i.key).collect::<Vec<_>>()
    };
    let search = |text: &str| IssueQuery {
        search: Some(text.into()),
        ..IssueQuery::default()
    };
    // Title of a, comment of c; case-insensitive; newest first.
    let found = h
        .admin
        .search_issues(&search("parser"))
        .await
        .expect("search");
    assert_eq!(keys(found), [c.key.clone(), a.key.clone()]);
    // The harness's descriptions are "<title> description".
    let found = h
        .admin
        .search_issues(&search("startup desc"))
        .await
        .expect("search");
    assert_eq!(keys(found), vec![b.key.clone()]);
    // Wildcards are plain text.
    assert!(
        h.admin
            .search_issues(&search("%"))
            .await
            .expect("search")
            .is_empty()
    );

    let done = IssueQuery {
        status: Some(IssueStatus::Done),
        ..IssueQuery::default()
    };
    assert_eq!(
        keys(h.admin.search_issues(&done).await.expect("done")),
        vec![b.key.clone()]
    );
    let limited = IssueQuery {
        limit: Some(2),
        ..IssueQuery::default()
    };
    assert_eq!(
        keys(h.admin.search_issues(&limited).await.expect("limit")),
        [c.key.clone(), b.key.clone()]
    );
    for bad in [
        "/issues?limit=0",
        "/issues?limit=lots",
        "/issues?status=finished",
    ] {
        let resp = reqwest::Client::new()
            .get(format!("{}/api/v1{bad}", h.url()))
            .bearer_auth(&h.admin_token)
            .send()
            .await
            .expect("request");
        assert_eq!(resp.status().as_u16(), 400, "{bad}");
        let body: serde_json::Value = resp.json().await.expect("error body");
        assert!(
            body["error"].as_str().is_some_and(|e| !e.is_empty()),
            "{bad}: {body}"
        );
    }
    h.stop().await;
}

#[tokio::test]
async fn an_issues_runs_are_listed_without_transcripts() {
    let h = Harness::start().await;
    let issue = h.issue("runs").await;
    assert!(
        h.admin
            .issue_runs(&issue.key)
            .await
            .expect("none")
            .is_empty()
    );
    let first = h.run_on(&issue.key).await;
    let second = h.run_on(&issue.key).await;
    h.admin
        .ingest_run_events(
            &first.run.id,
            &IngestBatch {
                items: vec![
                    message(MessageKind::Text, "1", "one"),
                    message(MessageKind::Text, "2", "two"),
                ],
            },
        )
        .await
        .expect("ingest");
    let runs = h
        .admin
        .issue_runs(&issue.key.to_lowercase())
        .await
        .expect("runs");
    let summary: Vec<_> = runs
        .iter()
        .map(|r| (r.id.clone(), r.status, r.message_count, r.issue_key.clone()))
        .collect();
    assert_eq!(
        summary,
        [
            (
                first.run.id.clone(),
                RunStatus::Running,
                2,
                issue.key.clone()
            ),
            (
                second.run.id.clone(),
                RunStatus::Running,
                0,
                issue.key.clone()
            ),
        ]
    );
    h.stop().await;
}
