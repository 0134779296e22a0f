//! What people write has limits, refused with the limit named: a 5 MB title made every
//! listing of issues slow for everyone. (Usage counts have theirs: `database_files.rs`.)

use super::common::TestStore;

use wujie_protocol::api::{Author, AuthorKind, CreateIssue, EditIssue};
use wujie_protocol::limits::{
    MAX_COMMENT_BYTES, MAX_DESCRIPTION_BYTES, MAX_TITLE_BYTES, MAX_TOKEN_NAME_BYTES,
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
