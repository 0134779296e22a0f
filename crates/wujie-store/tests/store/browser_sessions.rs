//! The web UI's browser sessions: kept hashed, good on every handle of the database (a server
//! restarted, a replica), and ended by logging out, by time, and with their token.

use std::time::Duration;

use wujie_store::MAX_BROWSER_SESSIONS;

use super::common::TestStore;

const HOUR: Duration = Duration::from_secs(3600);

#[tokio::test]
async fn a_session_outlives_its_server_and_only_its_hash_is_stored() {
    let t = TestStore::open().await;
    let token = t.store.create_user_token("browser").await.unwrap();
    let session = t.store.open_browser_session(&token.id, HOUR).await.unwrap();
    assert_eq!(session.len(), 64);
    assert_eq!(
        t.store.browser_session_token(&session).await.unwrap(),
        Some(token.id.clone())
    );
    // Another process on the same database: the server after a restart, or a replica.
    let restarted = TestStore::connect(&t.database).await;
    assert_eq!(
        restarted.browser_session_token(&session).await.unwrap(),
        Some(token.id.clone())
    );
    let stored: Vec<(String,)> = sqlx::query_as("SELECT hash FROM browser_sessions")
        .fetch_all(t.store.pool())
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0].0, session, "the id itself is never stored");
    assert_eq!(
        restarted
            .browser_session_token("not-a-session")
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn a_session_ends_on_logout_in_time_and_with_its_token() {
    let t = TestStore::open().await;
    let store = &t.store;
    let token = store.create_user_token("browser").await.unwrap();

    let logged_out = store.open_browser_session(&token.id, HOUR).await.unwrap();
    store.close_browser_session(&logged_out).await.unwrap();
    assert_eq!(
        store.browser_session_token(&logged_out).await.unwrap(),
        None
    );
    store.close_browser_session(&logged_out).await.unwrap();

    let over = store
        .open_browser_session(&token.id, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(store.browser_session_token(&over).await.unwrap(), None);

    let kept = store.open_browser_session(&token.id, HOUR).await.unwrap();
    store.revoke_token(&token.id).await.unwrap();
    assert_eq!(store.browser_session_token(&kept).await.unwrap(), None);
    assert!(!store.token_active(&token.id).await.unwrap());

    let brief = store.create_team_token("brief", Some(HOUR)).await.unwrap();
    let session = store.open_browser_session(&brief.id, HOUR).await.unwrap();
    assert!(store.token_active(&brief.id).await.unwrap());
    sqlx::query("UPDATE tokens SET expires_at = '2000-01-01T00:00:00.000000Z' WHERE id = $1")
        .bind(&brief.id)
        .execute(store.pool())
        .await
        .unwrap();
    assert_eq!(store.browser_session_token(&session).await.unwrap(), None);
    assert!(!store.token_active(&brief.id).await.unwrap());
}

#[tokio::test]
async fn sessions_are_bounded_and_the_nearest_to_their_end_goes_first() {
    let t = TestStore::open().await;
    let store = &t.store;
    let token = store.create_user_token("browser").await.unwrap();
    // The most sessions there may be, each ending a minute after the one before; the first
    // ends soonest.
    let full = usize::try_from(MAX_BROWSER_SESSIONS).unwrap();
    let rows: Vec<String> = (0..full)
        .map(|n| {
            format!(
                "('{n:064x}', '{}', '2026-01-01T00:00:00.000000Z', '9000-01-01T{:02}:{:02}:00.000000Z')",
                token.id,
                n / 60,
                n % 60
            )
        })
        .collect();
    for chunk in rows.chunks(512) {
        sqlx::query(&format!(
            "INSERT INTO browser_sessions (hash, token_id, created_at, expires_at) VALUES {}",
            chunk.join(", ")
        ))
        .execute(store.pool())
        .await
        .unwrap();
    }
    let newest = store.open_browser_session(&token.id, HOUR).await.unwrap();
    let count: (i64,) = sqlx::query_as("SELECT COUNT(*) FROM browser_sessions")
        .fetch_one(store.pool())
        .await
        .unwrap();
    assert_eq!(count.0, MAX_BROWSER_SESSIONS);
    let soonest: Option<(String,)> =
        sqlx::query_as("SELECT hash FROM browser_sessions WHERE hash = $1")
            .bind(format!("{:064x}", 0))
            .fetch_optional(store.pool())
            .await
            .unwrap();
    assert_eq!(soonest, None, "the session nearest to its end went");
    assert!(
        store
            .browser_session_token(&newest)
            .await
            .unwrap()
            .is_some()
    );
}
