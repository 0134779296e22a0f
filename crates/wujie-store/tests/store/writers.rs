//! Every change in the activity log records the user token whose request made it
//! (`Store::written_by`), shown by its name; changes the server makes itself name nobody.
//! Runs on the suite's backend (SQLite, or PostgreSQL with WUJIE_TEST_DATABASE=postgres).

use std::time::Duration;

use super::common::TestStore;
use wujie_protocol::api::{Author, AuthorKind, CreateIssue, CreateRun, IssueChange};

#[tokio::test]
async fn each_change_names_the_token_that_wrote_it() {
    let t = TestStore::open().await;
    let alice = t.store.create_team_token("alice", None).await.unwrap();
    let bob = t.store.create_team_token("bob", None).await.unwrap();
    let as_alice = t.store.written_by(&alice.id);
    let as_bob = t.store.written_by(&bob.id);
    let issue = as_alice
        .create_issue(&CreateIssue {
            title: "who wrote this".into(),
            description: String::new(),
            discussion_id: None,
        })
        .await
        .unwrap();
    let user = Author {
        kind: AuthorKind::User,
        run_id: None,
    };
    as_bob
        .add_comment(&issue.id, "bob was here", &user)
        .await
        .unwrap();
    // A run started by bob and left silent: the sweep that fails it is the server's own doing.
    as_bob
        .create_run(
            &issue.id,
            &CreateRun {
                provider: "fake".into(),
                cwd: "/tmp".into(),
                job: None,
            },
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(
        t.store
            .mark_stale_runs(Duration::from_millis(1))
            .await
            .unwrap(),
        1
    );

    let events = t
        .store
        .issue_activity_after(Some(&issue.id), 0, 100)
        .await
        .unwrap();
    let by: Vec<(&str, Option<&str>)> = events
        .iter()
        .map(|e| {
            let what = match &e.change {
                IssueChange::Created { .. } => "created",
                IssueChange::Comment { .. } => "comment",
                IssueChange::RunStarted { .. } => "run started",
                IssueChange::Status { .. } => "status",
                IssueChange::RunFinished { .. } => "run finished",
                _ => "other",
            };
            (what, e.by.as_deref())
        })
        .collect();
    assert_eq!(
        by,
        [
            ("created", Some("alice")),
            ("comment", Some("bob")),
            ("run started", Some("bob")),
            ("status", Some("bob")),
            ("run finished", None),
        ]
    );
}
