use wujie_protocol::api::{
    CreateIssue, DiscussionStatus, IngestBatch, IngestItem, IngestOutcome, IssueChange,
    PromoteDiscussion, RunStatus,
};
use wujie_protocol::event::{Event, HandoffMode, MessageKind};

use super::harness::{Harness, message, status_of, usage};

fn session(key: &str, id: &str) -> IngestItem {
    IngestItem {
        source: "fake".into(),
        source_key: key.into(),
        event: Event::Session {
            session_id: id.into(),
        },
    }
}

fn promote_req() -> PromoteDiscussion {
    PromoteDiscussion {
        title: "Do the plan".into(),
        description: "the plan".into(),
        provider: "grok".into(),
        cwd: "/tmp/p".into(),
        end_run: false,
    }
}

#[tokio::test]
async fn only_conversation_messages_become_entries() {
    let h = Harness::start().await;
    let created = h.discussion("grok").await;
    assert_eq!(created.discussion.status, DiscussionStatus::Open);
    let reporter = h.admin.clone();
    let id = created.discussion.id.clone();
    let b = IngestBatch {
        items: vec![
            message(MessageKind::UserInput, "1", "let us plan"),
            message(MessageKind::Thinking, "2", "hmm"),
            message(MessageKind::Text, "3", "visible text"),
            message(MessageKind::Question, "4", "which db?"),
            message(MessageKind::ToolResult, "5", "out"),
            message(MessageKind::Plan, "6", "# Plan"),
            message(MessageKind::Final, "7", "done planning"),
            message(MessageKind::Error, "8", "oops"),
            usage("u1", 5),
            IngestItem {
                source: "fake".into(),
                source_key: "h".into(),
                event: Event::HandoffReady {
                    request_id: "r1".into(),
                    mode: HandoffMode::NativeClear,
                },
            },
        ],
    };
    let r = reporter
        .ingest_discussion_events(&id, &b)
        .await
        .expect("ingest");
    use IngestOutcome::*;
    let got: Vec<IngestOutcome> = r.results.iter().map(|i| i.outcome).collect();
    assert_eq!(
        got,
        [
            Stored, Filtered, Filtered, Stored, Filtered, Stored, Stored, Filtered, Stored,
            Filtered
        ]
    );

    let again = reporter
        .ingest_discussion_events(&id, &b)
        .await
        .expect("again");
    let got: Vec<IngestOutcome> = again.results.iter().map(|i| i.outcome).collect();
    assert_eq!(
        got,
        [
            Duplicate, Filtered, Filtered, Duplicate, Filtered, Duplicate, Duplicate, Filtered,
            Duplicate, Filtered
        ]
    );

    let d = reporter.get_discussion(&id).await.expect("get");
    let entries: Vec<(MessageKind, &str)> = d
        .entries
        .iter()
        .map(|e| (e.kind, e.content.as_str()))
        .collect();
    assert_eq!(
        entries,
        [
            (MessageKind::UserInput, "let us plan"),
            (MessageKind::Question, "which db?"),
            (MessageKind::Plan, "# Plan"),
            (MessageKind::Final, "done planning"),
        ]
    );
    assert_eq!(d.usage.len(), 1);
    assert_eq!(h.count("SELECT COUNT(*) FROM discussion_entries").await, 4);
    h.stop().await;
}

#[tokio::test]
async fn native_session_ids_are_kept_in_order_and_found_again() {
    let h = Harness::start().await;
    let first = h.discussion("grok").await;
    let other_provider = h.discussion("hermes").await;
    let reporter = h.admin.clone();
    let id = first.discussion.id.clone();
    let b = IngestBatch {
        items: vec![
            session("s1", "native-A"),
            session("s2", "native-A"),
            session("s3", "native-B"),
        ],
    };
    let r = reporter
        .ingest_discussion_events(&id, &b)
        .await
        .expect("ingest");
    use IngestOutcome::*;
    let got: Vec<IngestOutcome> = r.results.iter().map(|i| i.outcome).collect();
    assert_eq!(got, [Stored, Duplicate, Stored]);
    // A retry of the whole batch changes nothing; a later switch back to A is recorded.
    reporter
        .ingest_discussion_events(&id, &b)
        .await
        .expect("retry");
    let back = IngestBatch {
        items: vec![session("s4", "native-A")],
    };
    reporter
        .ingest_discussion_events(&id, &back)
        .await
        .expect("back to A");
    let d = reporter.get_discussion(&id).await.expect("get");
    assert_eq!(d.native_session_ids, ["native-A", "native-B", "native-A"]);

    h.admin
        .ingest_discussion_events(
            &other_provider.discussion.id,
            &IngestBatch {
                items: vec![session("x", "native-B")],
            },
        )
        .await
        .expect("other");
    let found = h
        .admin
        .find_discussions_by_native_session("grok", "native-B")
        .await
        .expect("find");
    let ids: Vec<&str> = found.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids, [id.as_str()]);
    let found = h
        .admin
        .find_discussions_by_native_session("hermes", "native-B")
        .await
        .expect("find");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].id, other_provider.discussion.id);
    assert!(
        h.admin
            .find_discussions_by_native_session("grok", "nope")
            .await
            .expect("find")
            .is_empty()
    );

    let all = h.admin.list_discussions().await.expect("list");
    let ids: Vec<&str> = all.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(
        ids,
        [other_provider.discussion.id.as_str(), id.as_str()],
        "newest first"
    );
    h.stop().await;
}

#[tokio::test]
async fn a_promotion_no_agent_continues_ends_its_run_with_it() {
    let h = Harness::start().await;
    let id = h.discussion("grok").await.discussion.id;
    let promoted = h
        .admin
        .promote_discussion(
            &id,
            &PromoteDiscussion {
                end_run: true,
                ..promote_req()
            },
        )
        .await
        .expect("promote");
    assert_eq!(promoted.run.status, RunStatus::Succeeded);
    assert!(promoted.run.ended_at.is_some());
    assert_eq!(promoted.issue.runs[0].status, RunStatus::Succeeded);
    let dead = h
        .client(&promoted.token)
        .get_issue(&promoted.issue.key)
        .await
        .expect_err("the ended run's token");
    assert_eq!(status_of(&dead), 401);
    let log = h
        .store
        .issue_activity_after(Some(&promoted.issue.id), 0, 100)
        .await
        .expect("activity");
    let ends: Vec<&IssueChange> = log
        .iter()
        .map(|e| &e.change)
        .filter(|c| matches!(c, IssueChange::RunFinished { .. }))
        .collect();
    assert!(
        matches!(
            ends[..],
            [IssueChange::RunFinished {
                status: RunStatus::Succeeded,
                ..
            }]
        ),
        "{log:?}"
    );
    h.stop().await;
}

#[tokio::test]
async fn promotion_happens_once_and_late_entries_are_still_accepted() {
    let h = Harness::start().await;
    h.admin
        .create_issue(&CreateIssue {
            title: "earlier".into(),
            description: String::new(),
            discussion_id: None,
        })
        .await
        .expect("issue");
    let created = h.discussion("grok").await;
    let id = created.discussion.id.clone();
    let reporter = h.admin.clone();

    let promoted = h
        .admin
        .promote_discussion(&id, &promote_req())
        .await
        .expect("promote");
    assert_eq!(promoted.issue.key, "WUJ-2");
    assert_eq!(promoted.issue.discussion_id.as_deref(), Some(id.as_str()));
    assert_eq!(promoted.issue.runs.len(), 1);
    assert_eq!(promoted.run.issue_id, promoted.issue.id);
    assert_eq!(promoted.run.status, RunStatus::Running);
    assert_eq!(promoted.run.provider, "grok");
    let run_reporter = h.client(&promoted.token);
    run_reporter
        .get_issue(&promoted.issue.key)
        .await
        .expect("run token works");

    let d = h.admin.get_discussion(&id).await.expect("get");
    assert_eq!(d.status, DiscussionStatus::Promoted);
    assert_eq!(d.issue_key.as_deref(), Some("WUJ-2"));
    assert_eq!(d.issue_id.as_deref(), Some(promoted.issue.id.as_str()));

    let again = h
        .admin
        .promote_discussion(&id, &promote_req())
        .await
        .expect_err("second");
    assert_eq!(status_of(&again), 409);
    assert!(again.to_string().contains("WUJ-2"), "{again}");
    assert_eq!(h.admin.list_issues().await.expect("list").len(), 2);

    let late = IngestBatch {
        items: vec![message(MessageKind::Final, "late", "late final")],
    };
    let r = reporter
        .ingest_discussion_events(&id, &late)
        .await
        .expect("late");
    assert_eq!(r.results[0].outcome, IngestOutcome::Stored);
    h.stop().await;
}

#[tokio::test]
async fn a_discussion_token_reads_only_its_own_discussion() {
    let h = Harness::start().await;
    let mine = h.discussion("grok").await;
    let theirs = h.discussion("grok").await;
    let issue = h.issue("an issue").await;
    let run = h.run_on(&issue.key).await;
    let adapter = h.client(&mine.token);
    let b = IngestBatch {
        items: vec![message(MessageKind::UserInput, "k", "hi")],
    };

    adapter
        .get_discussion(&mine.discussion.id)
        .await
        .expect("own");
    let denied = vec![
        adapter
            .ingest_discussion_events(&mine.discussion.id, &b)
            .await
            .expect_err("own events: only the reporter writes"),
        adapter
            .get_discussion(&theirs.discussion.id)
            .await
            .expect_err("other"),
        adapter
            .ingest_discussion_events(&theirs.discussion.id, &b)
            .await
            .expect_err("other events"),
        adapter
            .promote_discussion(&mine.discussion.id, &promote_req())
            .await
            .expect_err("promote"),
        adapter.list_discussions().await.expect_err("list"),
        adapter.get_issue(&issue.key).await.expect_err("issue"),
        adapter.get_run(&run.run.id).await.expect_err("run"),
        adapter
            .ingest_run_events(&run.run.id, &b)
            .await
            .expect_err("run events"),
        h.client(&run.token)
            .get_discussion(&mine.discussion.id)
            .await
            .expect_err("run token"),
    ];
    for e in &denied {
        assert_eq!(status_of(e), 403, "{e}");
    }
    let missing = h.admin.get_discussion("nope").await.expect_err("missing");
    assert_eq!(status_of(&missing), 404);
    h.stop().await;
}

#[tokio::test]
async fn only_an_empty_open_discussion_can_be_deleted() {
    let h = Harness::start().await;
    let empty = h.discussion("grok").await;
    let used = h.discussion("grok").await;
    let b = IngestBatch {
        items: vec![message(MessageKind::UserInput, "k", "hi")],
    };
    h.admin
        .ingest_discussion_events(&used.discussion.id, &b)
        .await
        .expect("ingest");
    let by_adapter = h
        .client(&empty.token)
        .delete_empty_discussion(&empty.discussion.id)
        .await
        .expect_err("adapter");
    assert_eq!(status_of(&by_adapter), 403);
    let refused = h
        .admin
        .delete_empty_discussion(&used.discussion.id)
        .await
        .expect_err("not empty");
    assert_eq!(status_of(&refused), 409);
    h.admin
        .delete_empty_discussion(&empty.discussion.id)
        .await
        .expect("empty");
    let gone = h
        .admin
        .get_discussion(&empty.discussion.id)
        .await
        .expect_err("gone");
    assert_eq!(status_of(&gone), 404);
    assert_eq!(h.admin.list_discussions().await.expect("list").len(), 1);
    h.stop().await;
}

#[tokio::test]
async fn a_long_discussion_is_answered_in_pages_within_their_budget_and_read_whole() {
    const ENTRIES: usize = 30;
    let h = Harness::start().await;
    let id = h.discussion("grok").await.discussion.id;
    let pad = "x".repeat(1000);
    let items = (0..ENTRIES)
        .map(|n| {
            message(
                MessageKind::UserInput,
                &n.to_string(),
                &format!("{n} {pad}"),
            )
        })
        .collect();
    h.admin
        .ingest_discussion_events(&id, &IngestBatch { items })
        .await
        .expect("ingest");
    let number = |content: &str| -> usize { content.split(' ').next().unwrap().parse().unwrap() };
    // About five entries' stored texts (each about 1,000 bytes) a page.
    let budget = 5_000;
    let mut got = Vec::new();
    let mut after = 0;
    let mut pages = 0;
    loop {
        let page = h
            .admin
            .discussion_page(&id, after, Some(budget))
            .await
            .expect("a page");
        let bytes: u64 = page
            .entries
            .iter()
            .map(|e| (e.content.len() + e.source.len() + e.source_key.len()) as u64)
            .sum();
        assert!(bytes <= budget, "a page of {bytes} bytes");
        got.extend(page.entries.iter().map(|e| number(&e.content)));
        pages += 1;
        after = page.next_after;
        if !page.more {
            break;
        }
    }
    assert_eq!(got, (0..ENTRIES).collect::<Vec<_>>());
    assert!(pages >= ENTRIES / 5, "{pages} pages");
    let whole = h.admin.get_discussion(&id).await.expect("every page");
    let all: Vec<usize> = whole.entries.iter().map(|e| number(&e.content)).collect();
    assert_eq!(all, (0..ENTRIES).collect::<Vec<_>>());
    assert!(!whole.more);
    let refused = h
        .admin
        .discussion_page(&id, -1, None)
        .await
        .expect_err("a position before the first");
    assert_eq!(status_of(&refused), 400);
    assert!(
        refused
            .to_string()
            .contains("after must be a discussion entry position"),
        "{refused}"
    );
    h.stop().await;
}
