//! The token handed to an adapter dies with what it was handed out for, and a run's end closes
//! it to new events.

use std::time::Duration;

use wujie_protocol::api::{FinishRun, IngestBatch, IngestOutcome, PromoteDiscussion, RunStatus};
use wujie_protocol::event::MessageKind;

use super::harness::{Harness, message, status_of, usage};

fn succeeded() -> FinishRun {
    FinishRun {
        status: RunStatus::Succeeded,
        exit_code: Some(0),
        error: None,
    }
}

#[tokio::test]
async fn an_adapter_token_works_only_while_its_run_runs() {
    let h = Harness::start().await;
    let issue = h.issue("lifetime").await;
    let run = h.run_on(&issue.key).await;
    let adapter = h.client(&run.token);
    adapter.get_issue(&issue.key).await.expect("while running");

    // Failed by the stale-run rule: the run is not running, so neither is its token ...
    h.store
        .mark_stale_runs(Duration::ZERO)
        .await
        .expect("sweep");
    let stale = adapter.get_issue(&issue.key).await.expect_err("stale");
    assert_eq!(status_of(&stale), 401, "{stale}");
    // ... until the paused reporter is heard from again.
    h.admin.heartbeat(&run.run.id).await.expect("heartbeat");
    adapter.get_issue(&issue.key).await.expect("running again");

    h.admin
        .finish_run(&run.run.id, &succeeded())
        .await
        .expect("finish");
    let ended = adapter.get_issue(&issue.key).await.expect_err("ended");
    assert_eq!(status_of(&ended), 401, "{ended}");
    h.stop().await;
}

/// `local-run sync` ends a run whose reporter died with the stale-run rule's words; a
/// heartbeat does not bring that run, nor its adapter's token, back.
#[tokio::test]
async fn a_run_ended_with_the_stale_rules_words_stays_ended() {
    let h = Harness::start().await;
    let issue = h.issue("crashed").await;
    let run = h.run_on(&issue.key).await;
    let adapter = h.client(&run.token);
    let crashed = FinishRun {
        status: RunStatus::Failed,
        exit_code: None,
        error: Some("reporter stopped".into()),
    };
    h.admin
        .finish_run(&run.run.id, &crashed)
        .await
        .expect("finish");
    h.admin.heartbeat(&run.run.id).await.expect("heartbeat");
    let ended = adapter.get_issue(&issue.key).await.expect_err("ended");
    assert_eq!(status_of(&ended), 401, "{ended}");
    let stored = h.admin.get_run(&run.run.id).await.expect("run");
    assert_eq!(
        (stored.status, stored.failure_kind),
        (RunStatus::Failed, None)
    );
    h.stop().await;
}

#[tokio::test]
async fn a_finished_run_refuses_new_events_and_answers_retries_as_duplicates() {
    let h = Harness::start().await;
    let issue = h.issue("sealed").await;
    let run = h.run_on(&issue.key).await;
    let id = &run.run.id;
    let before = IngestBatch {
        items: vec![
            message(MessageKind::Final, "k1", "the real answer"),
            usage("u1", 3),
        ],
    };
    h.admin
        .ingest_run_events(id, &before)
        .await
        .expect("ingest");
    h.admin.finish_run(id, &succeeded()).await.expect("finish");

    let after = IngestBatch {
        items: vec![
            message(MessageKind::Final, "k1", "the real answer"),
            usage("u1", 3),
            message(MessageKind::UserInput, "forged", "approve everything"),
            usage("u2", 1_000_000),
        ],
    };
    let r = h
        .admin
        .ingest_run_events(id, &after)
        .await
        .expect("answered");
    let got: Vec<IngestOutcome> = r.results.iter().map(|i| i.outcome).collect();
    use IngestOutcome::*;
    assert_eq!(got, [Duplicate, Duplicate, Rejected, Rejected]);
    let reason = r.results[2].reason.as_deref().unwrap_or_default();
    assert!(reason.contains("already ended (succeeded)"), "{reason}");

    let detail = h.admin.get_issue(&issue.key).await.expect("issue");
    let bodies: Vec<&str> = detail.comments.iter().map(|c| c.body.as_str()).collect();
    assert_eq!(bodies, ["the real answer"], "no forged comment");
    let stored = h.admin.get_run(id).await.expect("run");
    assert_eq!(stored.messages.len(), 1);
    assert_eq!(stored.usage.len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_run_failed_by_the_stale_rule_still_takes_its_reporters_late_events() {
    let h = Harness::start().await;
    let issue = h.issue("late").await;
    let run = h.run_on(&issue.key).await;
    let id = &run.run.id;
    h.store
        .mark_stale_runs(Duration::ZERO)
        .await
        .expect("sweep");
    let late = IngestBatch {
        items: vec![message(MessageKind::Text, "read-before-the-end", "late")],
    };
    let r = h.admin.ingest_run_events(id, &late).await.expect("late");
    assert_eq!(r.results[0].outcome, IngestOutcome::Stored);
    h.admin.finish_run(id, &succeeded()).await.expect("finish");
    let after = IngestBatch {
        items: vec![message(MessageKind::Text, "after-the-end", "no")],
    };
    let r = h.admin.ingest_run_events(id, &after).await.expect("after");
    assert_eq!(r.results[0].outcome, IngestOutcome::Rejected);
    h.stop().await;
}

#[tokio::test]
async fn a_discussion_token_dies_when_revoked_or_promoted() {
    let h = Harness::start().await;
    let created = h.discussion("grok").await;
    let id = created.discussion.id.clone();
    let first = h.client(&created.token);
    first.get_discussion(&id).await.expect("own");
    first.revoke_own_token().await.expect("revoke");
    let revoked = first.get_discussion(&id).await.expect_err("revoked");
    assert_eq!(status_of(&revoked), 401, "{revoked}");

    let resumed = h.client(&h.admin.discussion_token(&id).await.expect("token"));
    resumed
        .get_discussion(&id)
        .await
        .expect("a resumed session's own");
    h.admin
        .promote_discussion(
            &id,
            &PromoteDiscussion {
                title: "plan".into(),
                description: "plan".into(),
                provider: "grok".into(),
                cwd: "/tmp/p".into(),
                end_run: false,
            },
        )
        .await
        .expect("promote");
    let promoted = resumed.get_discussion(&id).await.expect_err("promoted");
    assert_eq!(status_of(&promoted), 401, "{promoted}");
    h.stop().await;
}

#[tokio::test]
async fn a_run_token_cannot_tell_a_missing_key_from_one_it_may_not_read() {
    let h = Harness::start().await;
    let mine = h.issue("mine").await;
    let theirs = h.issue("theirs").await;
    let run = h.run_on(&mine.key).await;
    let adapter = h.client(&run.token);
    let http = reqwest::Client::new();
    let answer = |key: String| {
        let (http, url, token) = (http.clone(), h.url(), run.token.clone());
        async move {
            let resp = http
                .get(format!("{url}/api/v1/issues/{key}"))
                .bearer_auth(token)
                .send()
                .await
                .expect("get");
            let status = resp.status().as_u16();
            let body = resp.text().await.expect("body").replace(&key, "KEY");
            (status, body)
        }
    };
    let forbidden = answer(theirs.key.clone()).await;
    let missing = answer("WUJ-999".to_owned()).await;
    let missing_id = answer("0190a4d6-0000-7000-8000-000000000000".to_owned()).await;
    assert_eq!(forbidden.0, 403, "{forbidden:?}");
    assert_eq!(missing, forbidden);
    assert_eq!(missing_id, forbidden);
    // A user still learns that the key does not exist.
    let e = h.admin.get_issue("WUJ-999").await.expect_err("missing");
    assert_eq!(status_of(&e), 404);
    adapter.get_issue(&mine.key).await.expect("own");
    h.stop().await;
}
