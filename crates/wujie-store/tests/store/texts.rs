//! What people and agents write comes back as written, on both backends: PostgreSQL's text
//! type holds no NUL character, SQLite's does, and the same request must not be stored on one
//! and refused for ever on the other.

use super::common::TestStore;

use wujie_protocol::api::{
    Author, AuthorKind, CreateDiscussion, CreateIssue, CreateRun, IngestItem, IngestOutcome,
    IssueQuery,
};
use wujie_protocol::event::{Event, Message, MessageKind, Usage};

/// NUL, the character the store escapes with, that character followed by what its escapes
/// use, and text around them.
const AWKWARD: &str = "a\0b \u{10FFFF} \u{10FFFF}0 \u{10FFFF}1 \0\0 end\0";

fn message(key: &str) -> IngestItem {
    IngestItem {
        source: "s".into(),
        source_key: key.into(),
        event: Event::Message(Message {
            kind: MessageKind::ToolUse,
            content: Some(format!("content {AWKWARD}")),
            tool: Some(format!("tool {AWKWARD}")),
            input: Some(input()),
            output: Some(format!("output {AWKWARD}")),
            source: "s".into(),
            source_key: key.into(),
        }),
    }
}

fn input() -> serde_json::Map<String, serde_json::Value> {
    let mut input = serde_json::Map::new();
    input.insert(format!("k {AWKWARD}"), format!("v {AWKWARD}").into());
    input
}

fn usage(key: &str) -> IngestItem {
    IngestItem {
        source: "s".into(),
        source_key: key.into(),
        event: Event::Usage(Usage {
            provider: format!("p {AWKWARD}"),
            model: format!("m {AWKWARD}"),
            input_tokens: 1,
            output_tokens: 2,
            cache_read_tokens: 3,
            cache_write_tokens: 4,
        }),
    }
}

#[tokio::test]
async fn texts_with_nul_characters_are_stored_and_returned_as_written() {
    let t = TestStore::open().await;
    let store = &t.store;
    let title = format!("title {AWKWARD}");
    let description = format!("description {AWKWARD}");
    let issue = store
        .create_issue(&CreateIssue {
            title: title.clone(),
            description: description.clone(),
            discussion_id: None,
        })
        .await
        .expect("an issue with NUL in its title is stored");
    let body = format!("comment {AWKWARD}");
    let user = Author {
        kind: AuthorKind::User,
        run_id: None,
    };
    store
        .add_comment(&issue.key, &body, &user)
        .await
        .expect("a comment with NUL is stored");
    let run = store
        .create_run(
            &issue.key,
            &CreateRun {
                provider: "fake".into(),
                cwd: format!("/tmp/{AWKWARD}"),
                job: None,
            },
        )
        .await
        .expect("run")
        .run;
    let key = format!("key {AWKWARD}");
    let items = [message(&key), usage("u"), message("other key")];
    let result = store
        .ingest_run_events(&run.id, &items, 1 << 20)
        .await
        .expect("a batch with NUL in its events is stored");
    let outcomes: Vec<IngestOutcome> = result.results.iter().map(|r| r.outcome).collect();
    assert_eq!(
        outcomes,
        [
            IngestOutcome::Stored,
            IngestOutcome::Stored,
            IngestOutcome::Stored
        ]
    );
    // The same key again is the same event, not a new one.
    let again = store
        .ingest_run_events(&run.id, &items[..1], 1 << 20)
        .await
        .expect("ingest again");
    assert_eq!(again.results[0].outcome, IngestOutcome::Duplicate);

    let read = store.issue(&issue.key).await.expect("issue");
    assert_eq!(read.title, title);
    assert_eq!(read.description, description);
    assert_eq!(read.comments[0].body, body);
    let run = &read.runs[0];
    assert_eq!(run.cwd, format!("/tmp/{AWKWARD}"));
    let m = &run.messages[0];
    assert_eq!(m.source_key, key);
    assert_eq!(
        m.content.as_deref(),
        Some(format!("content {AWKWARD}").as_str())
    );
    assert_eq!(m.tool.as_deref(), Some(format!("tool {AWKWARD}").as_str()));
    assert_eq!(m.input, Some(input()));
    assert_eq!(
        m.output.as_deref(),
        Some(format!("output {AWKWARD}").as_str())
    );
    assert_eq!(run.usage[0].provider, format!("p {AWKWARD}"));
    assert_eq!(run.usage[0].model, format!("m {AWKWARD}"));

    // Search finds them by the text as written, and not by what it is stored as.
    let search = |text: &str| IssueQuery {
        search: Some(text.into()),
        ..Default::default()
    };
    let found = store
        .list_issues(&search("\0b \u{10FFFF} \u{10FFFF}0"))
        .await
        .expect("search");
    assert_eq!(found.len(), 1, "{found:?}");
    let found = store
        .list_issues(&search("\u{10FFFF}0b"))
        .await
        .expect("search");
    assert_eq!(found.len(), 0, "{found:?}");
    let listed = store
        .list_issues(&IssueQuery::default())
        .await
        .expect("list");
    assert_eq!(listed[0].title, title);
}

#[tokio::test]
async fn discussions_and_tokens_with_nul_characters_are_stored_and_returned_as_written() {
    let t = TestStore::open().await;
    let store = &t.store;
    let d = store
        .create_discussion(&CreateDiscussion {
            provider: "p".into(),
            cwd: format!("/{AWKWARD}"),
        })
        .await
        .expect("discussion")
        .discussion;
    let entry = IngestItem {
        source: "s".into(),
        source_key: format!("k {AWKWARD}"),
        event: Event::Message(Message {
            kind: MessageKind::UserInput,
            content: Some(format!("asked {AWKWARD}")),
            tool: None,
            input: None,
            output: None,
            source: "s".into(),
            source_key: format!("k {AWKWARD}"),
        }),
    };
    store
        .ingest_discussion_events(&d.id, &[entry, usage("u")], 1 << 20)
        .await
        .expect("discussion events with NUL are stored");
    let read = store.discussion(&d.id).await.expect("discussion");
    assert_eq!(read.cwd, format!("/{AWKWARD}"));
    assert_eq!(
        read.entries[0].content,
        format!("asked {AWKWARD}"),
        "{:?}",
        read.entries
    );
    assert_eq!(read.usage[0].model, format!("m {AWKWARD}"));

    let name = format!("laptop {AWKWARD}");
    store.create_user_token(&name).await.expect("token");
    let tokens = store.list_user_tokens().await.expect("tokens");
    assert!(tokens.iter().any(|t| t.name == name), "{tokens:?}");
}
