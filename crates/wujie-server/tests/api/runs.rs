use std::time::Duration;

use wujie_protocol::api::{FailureKind, FinishRun, RunStatus};
use wujie_server::ServerConfig;

use super::harness::{Harness, eventually, status_of};

fn finish(status: RunStatus, exit_code: Option<i32>) -> FinishRun {
    FinishRun {
        status,
        exit_code,
        error: None,
    }
}

#[tokio::test]
async fn finish_once_then_only_the_same_outcome() {
    let h = Harness::start().await;
    let issue = h.issue("finish").await;
    let created = h.run_on(&issue.key).await;
    let reporter = h.admin.clone();
    let id = created.run.id;

    let bad = reporter
        .finish_run(&id, &finish(RunStatus::Running, None))
        .await
        .expect_err("running");
    assert_eq!(status_of(&bad), 400);

    let done = reporter
        .finish_run(&id, &finish(RunStatus::Succeeded, Some(0)))
        .await
        .expect("finish");
    assert_eq!(done.status, RunStatus::Succeeded);
    assert_eq!(done.exit_code, Some(0));
    assert!(done.ended_at.is_some());

    let same = reporter
        .finish_run(&id, &finish(RunStatus::Succeeded, Some(0)))
        .await
        .expect("same");
    assert_eq!(same.status, RunStatus::Succeeded);

    let other = reporter
        .finish_run(&id, &finish(RunStatus::Failed, Some(1)))
        .await
        .expect_err("other");
    assert_eq!(status_of(&other), 409);
    assert!(!other.is_retryable());
    assert!(other.to_string().contains("succeeded"), "{other}");

    let missing = h
        .admin
        .finish_run("no-such-run", &finish(RunStatus::Failed, None))
        .await
        .expect_err("404");
    assert_eq!(status_of(&missing), 404);
    h.stop().await;
}

#[tokio::test]
async fn a_run_without_heartbeats_is_failed_and_a_late_reporter_may_still_finish_it() {
    let h = Harness::with_config(ServerConfig {
        stale_after: Duration::from_millis(200),
        ..ServerConfig::default()
    })
    .await;
    let issue = h.issue("stale").await;
    let created = h.run_on(&issue.key).await;
    let reporter = h.admin.clone();
    let id = created.run.id.clone();

    let failed = eventually("the sweeper to fail the run", || {
        let (reporter, id) = (reporter.clone(), id.clone());
        async move {
            let run = reporter.get_run(&id).await.expect("get run");
            (run.status == RunStatus::Failed).then_some(run)
        }
    })
    .await;
    assert_eq!(failed.error.as_deref(), Some("reporter stopped"));
    assert_eq!(failed.failure_kind, Some(FailureKind::Stale));
    let listed = reporter.issue_runs(&issue.key).await.expect("runs");
    assert_eq!(listed[0].failure_kind, Some(FailureKind::Stale));

    let finished = reporter
        .finish_run(&id, &finish(RunStatus::Succeeded, Some(0)))
        .await
        .expect("late finish");
    assert_eq!(finished.status, RunStatus::Succeeded);
    assert_eq!(finished.error, None);
    assert_eq!(reporter.get_run(&id).await.expect("run").failure_kind, None);
    h.stop().await;
}

#[tokio::test]
async fn heartbeats_keep_a_run_running() {
    let h = Harness::start().await;
    let issue = h.issue("heartbeat").await;
    let created = h.run_on(&issue.key).await;
    let reporter = h.admin.clone();
    reporter
        .heartbeat(&created.run.id)
        .await
        .expect("heartbeat");
    // A sweep with a generous window leaves the freshly heartbeating run alone.
    assert_eq!(
        h.store
            .mark_stale_runs(Duration::from_secs(3600))
            .await
            .expect("sweep"),
        0
    );
    assert_eq!(
        reporter.get_run(&created.run.id).await.expect("run").status,
        RunStatus::Running
    );
    // A zero window fails it, and the next heartbeat brings it back.
    assert_eq!(
        h.store
            .mark_stale_runs(Duration::ZERO)
            .await
            .expect("sweep"),
        1
    );
    assert_eq!(
        reporter.get_run(&created.run.id).await.expect("run").status,
        RunStatus::Failed
    );
    reporter
        .heartbeat(&created.run.id)
        .await
        .expect("heartbeat");
    let run = reporter.get_run(&created.run.id).await.expect("run");
    assert_eq!(
        (run.status, run.error, run.failure_kind),
        (RunStatus::Running, None, None)
    );
    let missing = reporter.heartbeat("other").await.expect_err("other run");
    assert_eq!(status_of(&missing), 404);
    h.stop().await;
}

#[tokio::test]
async fn a_runs_code_changes_are_served_to_users_and_to_run_tokens_of_the_issue() {
    use wujie_protocol::api::{IngestBatch, IngestItem};
    use wujie_protocol::event::Event;
    use wujie_protocol::git::{GitChanges, TurnSpan};

    let h = Harness::start().await;
    let issue = h.issue("code").await;
    let created = h.run_on(&issue.key).await;
    let id = created.run.id.clone();
    let missing = h
        .admin
        .run_git(&id)
        .await
        .expect_err("nothing recorded yet");
    assert_eq!(status_of(&missing), 404);
    assert!(
        missing.to_string().contains("recorded no code changes"),
        "{missing}"
    );

    let changes = GitChanges {
        snapshot: 1,
        tree: "t1".into(),
        repo: "project".into(),
        remotes: Vec::new(),
        branch: Some("main".into()),
        base_commit: None,
        head_commit: None,
        commits: Vec::new(),
        files: Vec::new(),
        turn_files: Some(Vec::new()),
        worktree: None,
        turns: Some(TurnSpan { first: 1, last: 1 }),
    };
    let item = IngestItem {
        source: "wujie-reporter".into(),
        source_key: "git:1:t1".into(),
        event: Event::GitChanges(changes.clone()),
    };
    h.admin
        .ingest_run_events(&id, &IngestBatch { items: vec![item] })
        .await
        .expect("ingest");
    assert_eq!(h.admin.run_git(&id).await.expect("user reads"), changes);
    let own = h.client(&created.token);
    assert_eq!(own.run_git(&id).await.expect("run token reads"), changes);
    // One turn: its own changes, and turns not recorded said by number.
    let turn = own.run_git_turn(&id, 1).await.expect("turn 1");
    assert_eq!(turn.snapshot, 1);
    assert_eq!(turn.turn_files, None);
    let missing = h.admin.run_git_turn(&id, 2).await.expect_err("no turn 2");
    assert_eq!(status_of(&missing), 404);
    assert!(
        missing
            .to_string()
            .ends_with(&format!("run {id} has 1 turn")),
        "{missing}"
    );
    let zero = h.admin.run_git_turn(&id, 0).await.expect_err("turn 0");
    assert_eq!(status_of(&zero), 400);

    let other_issue = h.issue("other").await;
    let other = h.run_on(&other_issue.key).await;
    let refused = h
        .client(&other.token)
        .run_git(&id)
        .await
        .expect_err("another issue's run token");
    assert_eq!(status_of(&refused), 403);
}
