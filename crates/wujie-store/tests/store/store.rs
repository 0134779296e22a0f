//! The store on a real SQLite file in a temp dir, or (WUJIE_TEST_DATABASE=postgres) on a real
//! PostgreSQL database.

use std::time::Duration;

use super::common::{TestStore, finish_succeeded};

use wujie_protocol::api::{
    CreateDiscussion, CreateIssue, CreateRun, FailureKind, FinishRun, RunStatus,
};
use wujie_store::{Principal, Store, StoreError};

fn issue(title: &str) -> CreateIssue {
    CreateIssue {
        title: title.into(),
        description: String::new(),
        discussion_id: None,
    }
}

fn run_req() -> CreateRun {
    CreateRun {
        provider: "fake".into(),
        cwd: "/tmp".into(),
        job: None,
    }
}

#[tokio::test]
async fn open_creates_directories_and_reopening_keeps_data_and_one_workspace() {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("nested").join("deeper").join("wujie.db");
    let store = Store::open(&path).await.expect("open");
    assert!(path.exists());
    let ws = store.workspace().await.expect("workspace");
    assert_eq!((ws.name.as_str(), ws.key_prefix.as_str()), ("Wujie", "WUJ"));
    store.create_issue(&issue("kept")).await.expect("issue");
    store.close().await;

    let again = Store::open(&path).await.expect("reopen");
    assert_eq!(again.workspace().await.expect("workspace").id, ws.id);
    let next = again.create_issue(&issue("next")).await.expect("issue");
    assert_eq!(next.key, "WUJ-2");
    assert_eq!(
        again
            .list_issues(&Default::default())
            .await
            .expect("list")
            .len(),
        2
    );
}

#[tokio::test]
async fn tokens_verify_to_their_principal_until_revoked() {
    let t = TestStore::open().await;
    let store = &t.store;
    let user = store.create_user_token("me").await.expect("user token");
    assert_eq!(
        store.verify_token(&user.token).await.expect("verify"),
        Some(Principal::User {
            token_id: user.id.clone()
        })
    );
    let i = store.create_issue(&issue("x")).await.expect("issue");
    let run = store.create_run(&i.key, &run_req()).await.expect("run");
    assert!(matches!(
        store.verify_token(&run.token).await.expect("verify"),
        Some(Principal::Run { run_id, issue_id, .. })
            if run_id == run.run.id && issue_id == i.id
    ));
    let d = store
        .create_discussion(&CreateDiscussion {
            provider: "grok".into(),
            cwd: "/".into(),
        })
        .await
        .expect("discussion");
    assert!(matches!(
        store.verify_token(&d.token).await.expect("verify"),
        Some(Principal::Discussion { discussion_id, .. }) if discussion_id == d.discussion.id
    ));
    assert_eq!(store.verify_token("wjt_nope").await.expect("verify"), None);
    assert_eq!(
        store
            .verify_token(wujie_protocol::api::DISABLED_TOKEN)
            .await
            .expect("verify"),
        None
    );
    store.revoke_token(&user.id).await.expect("revoke");
    assert_eq!(store.verify_token(&user.token).await.expect("verify"), None);
    assert!(matches!(
        store.create_user_token("  ").await,
        Err(StoreError::Invalid(_))
    ));
}

#[tokio::test]
async fn stale_runs_fail_with_reporter_stopped_and_only_running_ones() {
    let t = TestStore::open().await;
    let store = &t.store;
    let i = store.create_issue(&issue("x")).await.expect("issue");
    let finished = store.create_run(&i.key, &run_req()).await.expect("run").run;
    finish_succeeded(store, &finished.id).await;
    let running = store.create_run(&i.key, &run_req()).await.expect("run").run;

    assert_eq!(
        store
            .mark_stale_runs(Duration::from_secs(3600))
            .await
            .expect("sweep"),
        0
    );
    assert_eq!(
        store.mark_stale_runs(Duration::ZERO).await.expect("sweep"),
        1
    );
    let failed = store.run(&running.id).await.expect("run");
    assert_eq!(failed.status, RunStatus::Failed);
    assert_eq!(failed.error.as_deref(), Some(wujie_store::REPORTER_STOPPED));
    assert_eq!(failed.failure_kind, Some(FailureKind::Stale));
    assert!(failed.ended_at.is_some());
    assert_eq!(
        store.run(&finished.id).await.expect("run").status,
        RunStatus::Succeeded
    );
    // Already failed: a second sweep changes nothing.
    assert_eq!(
        store.mark_stale_runs(Duration::ZERO).await.expect("sweep"),
        0
    );
}

/// `local-run sync` finishes a run whose reporter died with the stale-run rule's words,
/// "reporter stopped"; that is still the run's end, which only the rule's own failure is not.
#[tokio::test]
async fn a_run_finished_with_the_stale_rules_words_is_ended() {
    let t = TestStore::open().await;
    let store = &t.store;
    let i = store.create_issue(&issue("x")).await.expect("issue");
    let run = store.create_run(&i.key, &run_req()).await.expect("run").run;
    let crashed = FinishRun {
        status: RunStatus::Failed,
        exit_code: None,
        error: Some(wujie_store::REPORTER_STOPPED.to_owned()),
    };
    store.finish_run(&run.id, &crashed).await.expect("finish");

    let late = usage("after-the-end", "m", 1);
    let result = store
        .ingest_run_events(&run.id, &[late], 1 << 20)
        .await
        .expect("ingest");
    assert_eq!(
        result.results[0].outcome,
        wujie_protocol::api::IngestOutcome::Rejected,
        "{result:?}"
    );
    // A heartbeat does not make it run again, nor may another outcome replace its end.
    store.heartbeat(&run.id).await.expect("heartbeat");
    let after = store.run(&run.id).await.expect("run");
    assert_eq!(
        (after.status, after.failure_kind),
        (RunStatus::Failed, None)
    );
    assert!(after.usage.is_empty(), "{:?}", after.usage);
    let other = FinishRun {
        status: RunStatus::Succeeded,
        exit_code: Some(0),
        error: None,
    };
    assert!(matches!(
        store.finish_run(&run.id, &other).await,
        Err(StoreError::Conflict(_))
    ));
    store
        .finish_run(&run.id, &crashed)
        .await
        .expect("the same end again");
}

fn usage(key: &str, model: &str, input_tokens: u64) -> wujie_protocol::api::IngestItem {
    wujie_protocol::api::IngestItem {
        source: "s".into(),
        source_key: key.into(),
        event: wujie_protocol::event::Event::Usage(wujie_protocol::event::Usage {
            provider: "p".into(),
            model: model.into(),
            input_tokens,
            output_tokens: 1,
            cache_read_tokens: 2,
            cache_write_tokens: 3,
        }),
    }
}

#[tokio::test]
async fn usage_is_summed_per_provider_and_model_for_an_issue_and_the_workspace() {
    let t = TestStore::open().await;
    let store = &t.store;
    let i = store.create_issue(&issue("x")).await.expect("issue");
    for keys in [["a", "b"], ["c", "d"]] {
        let run = store.create_run(&i.key, &run_req()).await.expect("run").run;
        let items = [usage(keys[0], "m1", 10), usage(keys[1], "m2", 5)];
        store
            .ingest_run_events(&run.id, &items, 1 << 20)
            .await
            .expect("ingest");
    }
    let d = store
        .create_discussion(&CreateDiscussion {
            provider: "p".into(),
            cwd: "/".into(),
        })
        .await
        .expect("discussion");
    store
        .ingest_discussion_events(&d.discussion.id, &[usage("e", "m1", 100)], 1 << 20)
        .await
        .expect("ingest");

    let sums = |usage: Vec<wujie_protocol::event::Usage>| -> Vec<(String, u64, u64, u64, u64)> {
        usage
            .into_iter()
            .map(|u| {
                (
                    u.model,
                    u.input_tokens,
                    u.output_tokens,
                    u.cache_read_tokens,
                    u.cache_write_tokens,
                )
            })
            .collect()
    };
    let of_issue = sums(store.issue_usage(&i.id).await.expect("issue usage"));
    assert_eq!(
        of_issue,
        [("m1".into(), 20, 2, 4, 6), ("m2".into(), 10, 2, 4, 6)]
    );
    let of_workspace = sums(store.workspace_usage().await.expect("workspace usage"));
    assert_eq!(
        of_workspace,
        [("m1".into(), 120, 3, 6, 9), ("m2".into(), 10, 2, 4, 6)]
    );
}

#[tokio::test]
async fn reconnecting_keeps_data_and_one_workspace() {
    let t = TestStore::open().await;
    let ws = t.store.workspace().await.expect("workspace");
    t.store.create_issue(&issue("kept")).await.expect("issue");
    t.store.close().await;
    let again = TestStore::connect(&t.database).await;
    assert_eq!(again.workspace().await.expect("workspace").id, ws.id);
    assert_eq!(
        again.create_issue(&issue("next")).await.expect("issue").key,
        "WUJ-2"
    );
}

#[tokio::test]
async fn issue_search_finds_title_description_and_comment_text_in_any_ascii_case() {
    let t = TestStore::open().await;
    let store = &t.store;
    let a = store
        .create_issue(&issue("Parser Crash"))
        .await
        .expect("issue");
    let b = store
        .create_issue(&CreateIssue {
            title: "other".into(),
            description: "the PARSER again".into(),
            discussion_id: None,
        })
        .await
        .expect("issue");
    let c = store.create_issue(&issue("third")).await.expect("issue");
    store
        .add_comment(
            &c.key,
            "seen in the parser too",
            &wujie_protocol::api::Author {
                kind: wujie_protocol::api::AuthorKind::User,
                run_id: None,
            },
        )
        .await
        .expect("comment");
    store
        .create_issue(&issue("unrelated"))
        .await
        .expect("issue");
    let found = store
        .list_issues(&wujie_protocol::api::IssueQuery {
            search: Some("parser".into()),
            ..Default::default()
        })
        .await
        .expect("search");
    let keys: Vec<&str> = found.iter().map(|i| i.key.as_str()).collect();
    assert_eq!(keys, [c.key.as_str(), b.key.as_str(), a.key.as_str()]);
}

/// A run whose adapter ended 127 or 2 having recorded nothing never started: the issue does not
/// list it and is open again. One that recorded something is a run like any other.
#[tokio::test]
async fn a_run_that_never_started_is_left_out_of_the_issue() {
    let t = TestStore::open().await;
    let store = &t.store;
    let not_started = |code| FinishRun {
        status: RunStatus::Failed,
        exit_code: Some(code),
        error: Some(format!("adapter exited with code {code}")),
    };
    for code in [127, 2] {
        let i = store.create_issue(&issue("x")).await.expect("issue");
        let run = store.create_run(&i.key, &run_req()).await.expect("run").run;
        store
            .finish_run(&run.id, &not_started(code))
            .await
            .expect("finish");
        assert!(store.issue_runs(&i.key).await.expect("runs").is_empty());
        let detail = store.issue(&i.key).await.expect("issue");
        assert!(detail.runs.is_empty(), "{:?}", detail.runs);
        assert_eq!(detail.status.as_str(), "open");
        // Still there, by its id, with its end.
        assert_eq!(store.run(&run.id).await.expect("run").exit_code, Some(code));
    }

    let i = store.create_issue(&issue("y")).await.expect("issue");
    let run = store.create_run(&i.key, &run_req()).await.expect("run").run;
    store
        .ingest_run_events(&run.id, &[usage("u1", "m", 1)], 1 << 20)
        .await
        .expect("ingest");
    store
        .finish_run(&run.id, &not_started(127))
        .await
        .expect("finish");
    assert_eq!(store.issue_runs(&i.key).await.expect("runs").len(), 1);
    assert_eq!(
        store.issue(&i.key).await.expect("issue").status.as_str(),
        "in_progress"
    );
}
