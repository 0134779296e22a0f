//! A live feed wakes for writes that another server on the same database commits (on SQLite,
//! `wujie run`'s embedded server beside `wujie ui`), not only at its periodic re-read: the
//! feeds here re-read only once an hour, so whatever reaches them came by the store's signal.

use std::time::Duration;

use wujie_client::{Client, FeedEvent, IssueFeed, Token};
use wujie_protocol::api::{CreateComment, IssueChange};
use wujie_server::{EmbeddedServer, ServerConfig};
use wujie_store::{Database, Store, StoreOptions};

use super::harness::{Backing, Harness};

/// Far beyond the test's deadlines: a feed never re-reads on its own here.
fn no_reread() -> ServerConfig {
    ServerConfig {
        reread_interval: Duration::from_secs(3600),
        ..ServerConfig::default()
    }
}

/// The next comment on `feed`, failing the test if none comes within a generous bound.
async fn next_comment(feed: &mut IssueFeed) -> String {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), feed.next())
            .await
            .expect("an event within 30 s")
            .expect("the feed is open")
            .expect("a readable event");
        if let FeedEvent::Issue { event, .. } = event
            && let IssueChange::Comment { comment } = event.change
        {
            return comment.body;
        }
    }
}

async fn until_live(feed: &mut IssueFeed) {
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), feed.next())
            .await
            .expect("an event within 30 s")
            .expect("the feed is open")
            .expect("a readable event");
        if event == FeedEvent::Live {
            return;
        }
    }
}

#[tokio::test]
async fn feeds_take_another_servers_writes_on_the_same_database_without_rereading() {
    let h = Harness::with_config(no_reread()).await;
    let issue = h.issue("written elsewhere").await;
    let mut issue_feed = h
        .admin
        .follow_issue(&issue.key, None)
        .await
        .expect("issue feed");
    let mut workspace_feed = h
        .admin
        .follow_workspace(None)
        .await
        .expect("workspace feed");
    until_live(&mut issue_feed).await;
    until_live(&mut workspace_feed).await;

    // Another server on the same database, with a store of its own: its commits do not pass
    // through the first server's store.
    let database = match &h.backing {
        Backing::Sqlite(path) => Database::Sqlite(path.clone()),
        Backing::Postgres { cluster, name } => Database::Postgres(cluster.url(name)),
    };
    let other_store = Store::open_database(&database, StoreOptions::EMBEDDED)
        .await
        .expect("a second store on the database");
    let other = EmbeddedServer::start(other_store.clone(), no_reread())
        .await
        .expect("a second server");
    let writer = Client::new(&other.url(), Token::new(h.admin_token.clone())).expect("client");

    for body in ["first from elsewhere", "second from elsewhere"] {
        writer
            .add_comment(&issue.key, &CreateComment { body: body.into() })
            .await
            .expect("comment through the other server");
        assert_eq!(next_comment(&mut issue_feed).await, body);
        assert_eq!(next_comment(&mut workspace_feed).await, body);
    }
    other.shutdown().await;
    other_store.close().await;
}
