//! A database that cannot take a request in time is answered 503 with `Retry-After` and a
//! message that says to retry, not 500, and nothing of the refused request is stored. On
//! SQLite: another process holds the write lock past the busy timeout. On PostgreSQL: every
//! connection of the server's pool is taken (here its one connection, by a request waiting
//! behind a table lock that another session holds) for longer than a request waits for one.

use sqlx::Connection as _;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use wujie_server::ServerConfig;
use wujie_store::StoreOptions;

use super::harness::{Backing, Harness};

const ONE_CONNECTION: StoreOptions = StoreOptions {
    pg_connections: 1,
    ..StoreOptions::SERVER
};

async fn post_issue(url: &str, token: &str, title: &str) -> reqwest::Response {
    reqwest::Client::new()
        .post(format!("{url}/api/v1/issues"))
        .bearer_auth(token)
        .json(&serde_json::json!({"title": title}))
        .send()
        .await
        .expect("an answer")
}

#[tokio::test]
async fn a_busy_database_is_answered_503_with_retry_after_and_nothing_is_stored() {
    let h = Harness::with_options(ServerConfig::default(), ONE_CONNECTION).await;
    let url = h.url();
    // Whatever keeps the database busy, and (PostgreSQL) the request it keeps waiting.
    let (sqlite_writer, pg_lock, waiting) = match &h.backing {
        Backing::Sqlite(path) => {
            let mut other =
                SqliteConnection::connect_with(&SqliteConnectOptions::new().filename(path))
                    .await
                    .expect("a second connection to the database file");
            sqlx::query("BEGIN IMMEDIATE")
                .execute(&mut other)
                .await
                .expect("take the write lock");
            (Some(other), None, None)
        }
        Backing::Postgres { cluster, name } => {
            let lock = cluster.hold_transaction(name, "LOCK TABLE issues IN ACCESS EXCLUSIVE MODE");
            let (url, token) = (url.clone(), h.admin_token.clone());
            let waiting =
                tokio::spawn(async move { post_issue(&url, &token, "waits for the lock").await });
            let (cluster, name) = (*cluster, name.clone());
            tokio::task::spawn_blocking(move || cluster.wait_for_lock_waiters(&name, 1))
                .await
                .expect("a request waiting for the table lock");
            (None, Some(lock), Some(waiting))
        }
    };

    let refused = post_issue(&url, &h.admin_token, "refused while busy").await;
    assert_eq!(refused.status().as_u16(), 503);
    assert_eq!(
        refused
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok()),
        Some("1")
    );
    let body: serde_json::Value = refused.json().await.expect("a JSON error");
    let error = body["error"].as_str().expect("an error message");
    assert!(error.contains("the database is busy; retry"), "{error}");

    drop(pg_lock);
    if let Some(mut other) = sqlite_writer {
        sqlx::query("ROLLBACK")
            .execute(&mut other)
            .await
            .expect("release the write lock");
    }
    if let Some(waiting) = waiting {
        assert_eq!(waiting.await.expect("request task").status().as_u16(), 201);
    }
    let later = post_issue(&url, &h.admin_token, "once the database is free").await;
    assert_eq!(later.status().as_u16(), 201);
    assert_eq!(
        h.count("SELECT COUNT(*) FROM issues WHERE title = 'refused while busy'")
            .await,
        0
    );
}
