//! A run or discussion start sent again with its `Idempotency-Key` (the answer to the first was
//! lost) returns what the first one started, with a fresh token, and stores nothing twice.

use wujie_protocol::api::{CreateDiscussion, CreateRun};

use super::harness::{Harness, status_of};

fn run_req() -> CreateRun {
    CreateRun {
        provider: "fake-provider".into(),
        cwd: "/tmp/project".into(),
        job: None,
    }
}

#[tokio::test]
async fn a_run_start_sent_again_with_its_key_returns_the_first_run() {
    let h = Harness::start().await;
    let issue = h.issue("started twice").await;
    let first = h
        .admin
        .create_run_once(&issue.key, &run_req(), "start-1")
        .await
        .expect("first start");
    let again = h
        .admin
        .create_run_once(&issue.key, &run_req(), "start-1")
        .await
        .expect("the same start again");
    assert_eq!(again.run.id, first.run.id);
    assert_eq!(h.count("SELECT COUNT(*) FROM runs").await, 1);
    assert_eq!(
        h.count("SELECT COUNT(*) FROM issue_activity WHERE change LIKE '%run_started%'")
            .await,
        1
    );
    // The adapter gets the token of the answer that arrived; the lost one is dead.
    assert_ne!(again.token, first.token);
    let lost = h.client(&first.token).get_issue(&issue.key).await;
    assert_eq!(status_of(&lost.expect_err("revoked")), 401);
    let kept = h.client(&again.token).get_issue(&issue.key).await;
    assert_eq!(kept.expect("the new token reads its issue").key, issue.key);

    // Another key is another start; a key names one start, not one on every issue.
    let second = h
        .admin
        .create_run_once(&issue.key, &run_req(), "start-2")
        .await
        .expect("second start");
    assert_ne!(second.run.id, first.run.id);
    let other = h.issue("another issue").await;
    let reused = h
        .admin
        .create_run_once(&other.key, &run_req(), "start-1")
        .await
        .expect_err("a key of another issue's run");
    assert_eq!(status_of(&reused), 409);
    let empty = h.admin.create_run_once(&other.key, &run_req(), " ").await;
    assert_eq!(status_of(&empty.expect_err("an empty key")), 400);
    assert_eq!(h.count("SELECT COUNT(*) FROM runs").await, 2);
}

#[tokio::test]
async fn a_discussion_start_sent_again_with_its_key_returns_the_first_discussion() {
    let h = Harness::start().await;
    let req = CreateDiscussion {
        provider: "fake-provider-v2".into(),
        cwd: "/tmp/project".into(),
    };
    let first = h
        .admin
        .create_discussion_once(&req, "discuss-1")
        .await
        .expect("first start");
    let again = h
        .admin
        .create_discussion_once(&req, "discuss-1")
        .await
        .expect("the same start again");
    assert_eq!(again.discussion.id, first.discussion.id);
    assert_eq!(h.count("SELECT COUNT(*) FROM discussions").await, 1);
    let lost = h
        .client(&first.token)
        .get_discussion(&first.discussion.id)
        .await;
    assert_eq!(status_of(&lost.expect_err("revoked")), 401);
    h.client(&again.token)
        .get_discussion(&first.discussion.id)
        .await
        .expect("the new token reads its discussion");
    let other = h
        .admin
        .create_discussion_once(&req, "discuss-2")
        .await
        .expect("another start");
    assert_ne!(other.discussion.id, first.discussion.id);
}

#[tokio::test]
async fn a_resume_token_request_sent_again_with_its_key_leaves_only_the_new_token_live() {
    let h = Harness::start().await;
    let req = CreateDiscussion {
        provider: "fake-provider-v2".into(),
        cwd: "/tmp/project".into(),
    };
    let d = h.admin.create_discussion(&req).await.expect("discussion");
    let id = &d.discussion.id;
    let lost = h
        .admin
        .discussion_token_once(id, "resume-1")
        .await
        .expect("first request");
    let again = h
        .admin
        .discussion_token_once(id, "resume-1")
        .await
        .expect("the same request again");
    assert_ne!(again, lost);
    let refused = h.client(&lost).get_discussion(id).await;
    assert_eq!(status_of(&refused.expect_err("revoked")), 401);
    h.client(&again)
        .get_discussion(id)
        .await
        .expect("the new token reads its discussion");
    // The discussion's first token and another resume are not touched by the key.
    h.client(&d.token)
        .get_discussion(id)
        .await
        .expect("the first adapter's token still works");
    let other = h
        .admin
        .discussion_token_once(id, "resume-2")
        .await
        .expect("another resume");
    h.client(&again)
        .get_discussion(id)
        .await
        .expect("still live after another resume");
    h.client(&other)
        .get_discussion(id)
        .await
        .expect("the other resume's token");

    let elsewhere = h.admin.create_discussion(&req).await.expect("discussion");
    let reused = h
        .admin
        .discussion_token_once(&elsewhere.discussion.id, "resume-1")
        .await;
    assert_eq!(
        status_of(&reused.expect_err("a key of another discussion")),
        409
    );
    let empty = h.admin.discussion_token_once(id, " ").await;
    assert_eq!(status_of(&empty.expect_err("an empty key")), 400);
}
