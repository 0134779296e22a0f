//! What people write has limits, refused with the limit named: a 5 MB title made every
//! listing of issues slow for everyone, and usage counts near `i64::MAX` made every sum of
//! usage fail for good.

use super::common::TestStore;

use wujie_protocol::api::{Author, AuthorKind, CreateIssue, CreateRun, EditIssue, IngestItem};
use wujie_protocol::event::{Event, Usage};
use wujie_protocol::limits::{
    MAX_COMMENT_BYTES, MAX_DESCRIPTION_BYTES, MAX_TITLE_BYTES, MAX_TOKEN_NAME_BYTES,
    MAX_USAGE_TOKENS,
};
use wujie_store::StoreError;

fn issue(title: &str, description: &str) -> CreateIssue {
    CreateIssue {
        title: title.into(),
        description: description.into(),
        discussion_id: None,
    }
}

/// The error is `Invalid` and names what was too long and its limit.
fn assert_refused(result: Result<impl std::fmt::Debug, StoreError>, what: &str, limit: usize) {
    match result {
        Err(StoreError::Invalid(message)) => assert!(
            message.contains(what) && message.contains(&limit.to_string()),
            "{message}"
        ),
        other => panic!("{what} over {limit} bytes was not refused: {other:?}"),
    }
}

#[tokio::test]
async fn titles_descriptions_comments_and_token_names_over_their_limits_are_refused() {
    let t = TestStore::open().await;
    let store = &t.store;
    // At the limit is fine, in bytes: three-byte characters count three.
    let at_limit = "题".repeat(MAX_TITLE_BYTES / 3);
    let i = store
        .create_issue(&issue(&at_limit, &"d".repeat(MAX_DESCRIPTION_BYTES)))
        .await
        .expect("at the limits");
    assert_refused(
        store
            .create_issue(&issue(&"t".repeat(MAX_TITLE_BYTES + 1), ""))
            .await,
        "title",
        MAX_TITLE_BYTES,
    );
    assert_refused(
        store
            .create_issue(&issue("t", &"d".repeat(MAX_DESCRIPTION_BYTES + 1)))
            .await,
        "description",
        MAX_DESCRIPTION_BYTES,
    );
    let user = Author {
        kind: AuthorKind::User,
        run_id: None,
    };
    let edit =
        |title: Option<String>, description: Option<String>| EditIssue { title, description };
    assert_refused(
        store
            .edit_issue(
                &i.key,
                &edit(Some("t".repeat(MAX_TITLE_BYTES + 1)), None),
                &user,
            )
            .await,
        "title",
        MAX_TITLE_BYTES,
    );
    assert_refused(
        store
            .edit_issue(
                &i.key,
                &edit(None, Some("d".repeat(MAX_DESCRIPTION_BYTES + 1))),
                &user,
            )
            .await,
        "description",
        MAX_DESCRIPTION_BYTES,
    );
    store
        .add_comment(&i.key, &"c".repeat(MAX_COMMENT_BYTES), &user)
        .await
        .expect("a comment at the limit");
    assert_refused(
        store
            .add_comment(&i.key, &"c".repeat(MAX_COMMENT_BYTES + 1), &user)
            .await,
        "comment",
        MAX_COMMENT_BYTES,
    );
    assert_refused(
        store
            .create_user_token(&"n".repeat(MAX_TOKEN_NAME_BYTES + 1))
            .await,
        "token name",
        MAX_TOKEN_NAME_BYTES,
    );
    // Nothing refused was stored.
    let read = store.issue(&i.key).await.unwrap();
    assert_eq!((read.title, read.comments.len()), (at_limit, 1));
}

fn usage(key: &str, input_tokens: u64) -> IngestItem {
    IngestItem {
        source: "s".into(),
        source_key: key.into(),
        event: Event::Usage(Usage {
            provider: "p".into(),
            model: "m".into(),
            input_tokens,
            output_tokens: 1,
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        }),
    }
}

#[tokio::test]
async fn usage_past_the_limit_is_refused_alone_and_sums_keep_working() {
    let t = TestStore::open().await;
    let store = &t.store;
    let i = store.create_issue(&issue("x", "")).await.unwrap();
    let run = store
        .create_run(
            &i.key,
            &CreateRun {
                provider: "fake".into(),
                cwd: "/tmp".into(),
            },
        )
        .await
        .unwrap()
        .run;
    let items = [
        usage("a", MAX_USAGE_TOKENS),
        usage("b", MAX_USAGE_TOKENS + 1),
        usage("c", i64::MAX as u64),
        usage("d", 5),
    ];
    let result = store
        .ingest_run_events(&run.id, &items, 1 << 20)
        .await
        .unwrap();
    let outcomes: Vec<_> = result.results.iter().map(|r| r.outcome).collect();
    use wujie_protocol::api::IngestOutcome::{Rejected, Stored};
    assert_eq!(outcomes, [Stored, Rejected, Rejected, Stored], "{result:?}");
    let reason = result.results[1].reason.as_deref().unwrap();
    assert!(reason.contains(&MAX_USAGE_TOKENS.to_string()), "{reason}");
    let totals = store.workspace_usage().await.expect("sums still work");
    assert_eq!(totals[0].input_tokens, MAX_USAGE_TOKENS + 5);
}
