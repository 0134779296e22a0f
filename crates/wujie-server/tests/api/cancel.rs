//! Cancelling a run from anywhere: who asked is recorded once, on the run and in the issue's
//! activity; an ended run is a conflict; a run token cancels nothing.

use wujie_protocol::api::{FinishRun, IssueChange, RunStatus};

use super::harness::{Harness, status_of};

#[tokio::test]
async fn a_cancel_is_recorded_once_with_who_asked_and_the_reporter_reads_it() {
    let h = Harness::start().await;
    let issue = h.issue("cancel").await;
    let created = h.run_on(&issue.key).await;
    let id = created.run.id.clone();
    let alice = h.store.create_user_token("alice").await.expect("token");
    let alice = h.client(&alice.token);

    let before = h.admin.run_control(&id).await.expect("control");
    assert_eq!(before.cancel, None);

    let first = alice.cancel_run(&id).await.expect("cancel");
    assert_eq!(first.run_id, id);
    assert_eq!(first.issue_key, issue.key);
    assert_eq!(first.cancel.by.as_deref(), Some("alice"));
    assert!(!first.already_requested);

    // The reporter's poll and the run itself say so; the run runs until its reporter ends it.
    let control = h.admin.run_control(&id).await.expect("control");
    assert_eq!(control.cancel.as_ref(), Some(&first.cancel));
    let run = h.admin.get_run(&id).await.expect("run");
    assert_eq!(run.status, RunStatus::Running);
    assert_eq!(run.cancel.as_ref(), Some(&first.cancel));

    // Asking again, by anyone, changes nothing and answers the first request.
    let again = h.admin.cancel_run(&id).await.expect("again");
    assert!(again.already_requested);
    assert_eq!(again.cancel, first.cancel);

    let asked: Vec<Option<String>> = h
        .store
        .issue_activity_after(Some(&issue.id), 0, 500)
        .await
        .expect("activity")
        .into_iter()
        .filter(|e| matches!(&e.change, IssueChange::CancelRequested { run_id } if *run_id == id))
        .map(|e| e.by)
        .collect();
    assert_eq!(asked, vec![Some("alice".to_owned())]);
    h.stop().await;
}

#[tokio::test]
async fn an_ended_run_cannot_be_cancelled_and_says_how_it_ended() {
    let h = Harness::start().await;
    let issue = h.issue("ended").await;
    let id = h.run_on(&issue.key).await.run.id;
    let finish = FinishRun {
        status: RunStatus::Succeeded,
        exit_code: Some(0),
        error: None,
    };
    h.admin.finish_run(&id, &finish).await.expect("finish");

    let e = h.admin.cancel_run(&id).await.expect_err("ended");
    assert_eq!(status_of(&e), 409);
    assert!(!e.is_retryable());
    assert!(
        e.to_string()
            .contains(&format!("run {id} already ended as succeeded")),
        "{e}"
    );
    let run = h.admin.get_run(&id).await.expect("run");
    assert_eq!(run.cancel, None);

    let missing = h.admin.cancel_run("no-such-run").await.expect_err("404");
    assert_eq!(status_of(&missing), 404);
    h.stop().await;
}

#[tokio::test]
async fn a_run_token_cancels_nothing_not_even_its_own_run() {
    let h = Harness::start().await;
    let issue = h.issue("scoped").await;
    let created = h.run_on(&issue.key).await;
    let agent = h.client(&created.token);

    let e = agent.cancel_run(&created.run.id).await.expect_err("scoped");
    assert_eq!(status_of(&e), 403);
    assert!(e.to_string().contains("cannot cancel runs"), "{e}");
    let e = agent
        .run_control(&created.run.id)
        .await
        .expect_err("scoped");
    assert_eq!(status_of(&e), 403);

    let run = h.admin.get_run(&created.run.id).await.expect("run");
    assert_eq!(run.cancel, None);
    h.stop().await;
}
