use wujie_client::{Client, ClientError, Token};
use wujie_protocol::api::{CreateIssue, CreateToken, FinishRun, IngestBatch, RunStatus};
use wujie_protocol::event::MessageKind;

use super::harness::{Harness, message, status_of};

#[tokio::test]
async fn missing_unknown_and_revoked_tokens_get_401() {
    let h = Harness::start().await;
    let http = reqwest::Client::new();
    let resp = http
        .get(format!("{}/api/v1/workspace", h.url()))
        .send()
        .await
        .expect("get");
    assert_eq!(resp.status().as_u16(), 401);

    let bad_secret = "wjt_0000000000000000000000000000000000000000000000000000000000000000";
    let bad = h.client(bad_secret);
    bad.health().await.expect("health is public");
    let e = bad.workspace().await.expect_err("bad token");
    assert_eq!(status_of(&e), 401);
    assert!(!e.is_retryable());
    assert!(!e.to_string().contains(bad_secret));
    assert!(!format!("{e:?}").contains(bad_secret));

    let created = h
        .admin
        .create_token(&CreateToken {
            name: "laptop".into(),
            expires_in_secs: None,
        })
        .await
        .expect("token");
    let user = h.client(&created.token);
    user.workspace().await.expect("new token works");
    h.store.revoke_token(&created.id).await.expect("revoke");
    assert_eq!(
        status_of(&user.workspace().await.expect_err("revoked")),
        401
    );
    h.stop().await;
}

#[tokio::test]
async fn a_run_token_reads_its_own_issue_and_nothing_more() {
    let h = Harness::start().await;
    let mine = h.issue("mine").await;
    let theirs = h.issue("theirs").await;
    let my_run = h.run_on(&mine.key).await;
    let other_run = h.run_on(&theirs.key).await;
    let adapter = h.client(&my_run.token);

    assert_eq!(
        adapter.get_issue(&mine.key).await.expect("own issue").key,
        mine.key
    );
    let b = IngestBatch {
        items: vec![message(MessageKind::Text, "k", "hi")],
    };
    let finish = FinishRun {
        status: RunStatus::Succeeded,
        exit_code: Some(0),
        error: None,
    };
    let denied: Vec<ClientError> = vec![
        // What the reporter does is not the adapter's to do, not even on its own run.
        adapter
            .ingest_run_events(&my_run.run.id, &b)
            .await
            .expect_err("own events"),
        adapter
            .heartbeat(&my_run.run.id)
            .await
            .expect_err("own heartbeat"),
        adapter
            .finish_run(&my_run.run.id, &finish)
            .await
            .expect_err("own finish"),
        adapter.get_run(&my_run.run.id).await.expect_err("own run"),
        adapter
            .get_run(&other_run.run.id)
            .await
            .expect_err("other run"),
        adapter
            .ingest_run_events(&other_run.run.id, &b)
            .await
            .expect_err("other events"),
        adapter
            .get_issue(&theirs.key)
            .await
            .expect_err("other issue"),
        adapter
            .create_issue(&CreateIssue {
                title: "x".into(),
                description: String::new(),
                discussion_id: None,
            })
            .await
            .expect_err("create issue"),
        adapter.list_issues().await.expect_err("list"),
        adapter
            .create_token(&CreateToken {
                name: "escalate".into(),
                expires_in_secs: None,
            })
            .await
            .expect_err("token"),
    ];
    for e in &denied {
        assert_eq!(status_of(e), 403, "{e}");
        assert!(!e.to_string().contains(&my_run.token));
    }
    let run = h.admin.get_run(&my_run.run.id).await.expect("run");
    assert_eq!(
        run.status,
        RunStatus::Running,
        "the adapter could not finish it"
    );
    assert!(run.messages.is_empty(), "nor report into it");
    h.stop().await;
}

#[tokio::test]
async fn tokens_are_stored_hashed() {
    let h = Harness::start().await;
    let issue = h.issue("hashed").await;
    let run = h.run_on(&issue.key).await;
    let user = h
        .admin
        .create_token(&CreateToken {
            name: "ci".into(),
            expires_in_secs: None,
        })
        .await
        .expect("token");
    for secret in [&h.admin_token, &run.token, &user.token] {
        assert!(secret.starts_with("wjt_"), "token prefix");
        assert_eq!(secret.len(), 4 + 64);
    }
    h.store.close().await;
    let haystack = h.database_bytes().await;
    assert!(haystack.len() > 1000, "database files were read");
    for secret in [&h.admin_token, &run.token, &user.token] {
        let plain = secret.trim_start_matches("wjt_");
        assert!(
            !haystack.windows(plain.len()).any(|w| w == plain.as_bytes()),
            "plaintext token in the database"
        );
    }
    // What is stored instead: the SHA-256 hex of each token.
    let hashes = h.strings("SELECT hash FROM tokens").await;
    assert_eq!(hashes.len(), 3);
    assert!(
        hashes
            .iter()
            .all(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
    );
}

#[tokio::test]
async fn client_errors_say_what_failed_and_whether_to_retry() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let client =
        Client::new(&format!("http://127.0.0.1:{port}"), Token::new("wjt_x")).expect("client");
    let e = client
        .get_issue("WUJ-1")
        .await
        .expect_err("nothing listens");
    assert!(e.is_retryable(), "{e}");
    assert!(e.to_string().contains("/issues/WUJ-1"), "{e}");
    assert!(!e.to_string().contains("wjt_x"));
    assert!(Client::new("not a url", Token::new("t")).is_err());
}
