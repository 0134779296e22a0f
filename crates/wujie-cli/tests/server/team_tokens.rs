//! Team tokens: `wujie token create --name N [--expires D]`, `token list` (names, dates,
//! status, never a secret) and `token revoke ID|NAME`; an expired or revoked token is refused
//! at once, by every server on the database (PostgreSQL replicas), and only its hash is stored.

use serde_json::Value;
use wujie_testkit::*;

/// The status of `GET /api/v1/workspace` on `server` with `token`.
fn status_with(server: &str, token: &str) -> u16 {
    reqwest::blocking::Client::new()
        .get(format!("{server}/api/v1/workspace"))
        .bearer_auth(token)
        .send()
        .expect("request")
        .status()
        .as_u16()
}

fn listed<'a>(tokens: &'a Value, name: &str) -> &'a Value {
    tokens
        .as_array()
        .expect("a list")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no token {name:?} in {tokens}"))
}

#[test]
fn tokens_are_named_listed_without_secrets_and_revoked_by_name() {
    let env = Env::new();
    let created = env.json(&["token", "create", "--name", "alice", "--expires", "30d"]);
    let secret = created["token"].as_str().expect("secret").to_owned();
    assert!(created["expires_at"].as_str().is_some(), "{created}");
    let server = Server::start(&env, &[]);
    assert_eq!(status_with(&server.url, &secret), 200);

    let tokens = env.json(&["token", "list"]);
    let alice = listed(&tokens, "alice");
    assert_eq!(alice["status"], "active");
    assert_eq!(alice["expires_at"], created["expires_at"]);
    assert!(alice["created_at"].as_str().is_some(), "{alice}");
    assert!(
        alice["last_used_at"].as_str().is_some(),
        "used above: {alice}"
    );
    let text = env.ok(&["token", "list"]);
    for shown in [tokens.to_string(), text.clone()] {
        assert!(!shown.contains("wjt_"), "a secret is shown: {shown}");
    }
    assert!(
        text.contains("alice") && text.contains("LAST USED"),
        "{text}"
    );

    env.ok(&["token", "create", "--name", "twin"]);
    env.ok(&["token", "create", "--name", "twin"]);
    let err = env.fails(&["token", "revoke", "twin"]);
    assert!(err.contains("2 tokens are named \"twin\""), "{err}");
    let err = env.fails(&["token", "revoke", "nobody"]);
    assert!(err.contains("no token has the id or name"), "{err}");

    let out = env.ok(&["token", "revoke", "alice"]);
    assert!(out.contains("Revoked token"), "{out}");
    assert_eq!(status_with(&server.url, &secret), 401);
    let tokens = env.json(&["token", "list"]);
    assert_eq!(listed(&tokens, "alice")["status"], "revoked");
}

#[test]
fn an_expired_token_is_refused_and_listed_as_expired() {
    let env = Env::new();
    let server = Server::start(&env, &[]);
    let created = env.json(&["token", "create", "--name", "brief", "--expires", "1s"]);
    let secret = created["token"].as_str().expect("secret").to_owned();
    wait_until(30, "the token to expire", || {
        status_with(&server.url, &secret) == 401
    });
    let tokens = env.json(&["token", "list"]);
    assert_eq!(listed(&tokens, "brief")["status"], "expired");
}

#[test]
fn a_malformed_expiry_is_refused() {
    let env = Env::new();
    for bad in [
        "",
        "30",
        "d",
        "0d",
        "-1d",
        "soon",
        "1.5d",
        "30 days",
        "99999999999999999999w",
    ] {
        let expires = format!("--expires={bad}");
        let err = env.fails(&["token", "create", "--name", "x", &expires]);
        assert!(err.contains("--expires"), "{bad}: {err}");
    }
    assert_eq!(
        env.json(&["token", "list"]).as_array().map(Vec::len),
        Some(1)
    );
}

#[test]
fn each_expiry_unit_is_accepted_and_counts_for_its_length() {
    let env = Env::new();
    let expiry_of = |duration: &str| {
        let created = env.json(&["token", "create", "--name", duration, "--expires", duration]);
        created["expires_at"]
            .as_str()
            .expect("an expiry")
            .to_owned()
    };
    // RFC 3339 times in UTC sort as text.
    let expiries: Vec<String> = ["5s", "90m", "12h", "30d", "5w"]
        .into_iter()
        .map(expiry_of)
        .collect();
    let mut sorted = expiries.clone();
    sorted.sort();
    assert_eq!(expiries, sorted, "shorter durations must expire sooner");
}

#[test]
fn a_token_revoked_or_expired_through_one_replica_is_refused_by_the_other_at_once() {
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let database = cluster.create_database();
    let (a, b) = (Env::new(), Env::new());
    let replica_a = Server::start(&a, &["--database", &database]);
    let replica_b = Server::start(&b, &["--database", &database]);
    let created = a.json(&[
        "--server",
        &replica_a.url,
        "token",
        "create",
        "--name",
        "carol laptop",
    ]);
    let secret = created["token"].as_str().expect("secret").to_owned();
    assert_eq!(status_with(&replica_b.url, &secret), 200);
    assert_eq!(status_with(&replica_a.url, &secret), 200);
    // Only the hash is in the database.
    let db = wujie_pgtest::database_name(&database);
    let stored = cluster.psql(db, "SELECT hash FROM tokens WHERE name = 'carol laptop'");
    assert_eq!(stored.len(), 64, "{stored}");
    assert!(!stored.contains(&secret[4..]));

    b.ok(&[
        "--server",
        &replica_b.url,
        "token",
        "revoke",
        "carol laptop",
    ]);
    assert_eq!(status_with(&replica_a.url, &secret), 401);
    assert_eq!(status_with(&replica_b.url, &secret), 401);

    let brief = a.json(&[
        "--server",
        &replica_a.url,
        "token",
        "create",
        "--name",
        "brief",
        "--expires",
        "1s",
    ]);
    let brief = brief["token"].as_str().expect("secret").to_owned();
    wait_until(30, "the token to expire on replica b", || {
        status_with(&replica_b.url, &brief) == 401
    });
    assert_eq!(status_with(&replica_a.url, &brief), 401);
    let tokens = b.json(&["--server", &replica_b.url, "token", "list"]);
    assert_eq!(listed(&tokens, "brief")["status"], "expired");
    assert_eq!(listed(&tokens, "carol laptop")["status"], "revoked");
}

/// The `by` of each change in the replay of `key`'s live feed on `server`, in order.
fn writers_of(server: &str, token: &str, key: &str) -> Vec<(String, Option<String>)> {
    use std::io::BufRead;
    let feed = reqwest::blocking::Client::new()
        .get(format!("{server}/api/v1/issues/{key}/events"))
        .bearer_auth(token)
        .send()
        .expect("feed");
    assert_eq!(feed.status(), 200);
    let mut changes = Vec::new();
    let mut event = String::new();
    for line in std::io::BufReader::new(feed).lines() {
        let line = line.expect("feed line");
        if let Some(name) = line.strip_prefix("event: ") {
            if name == "live" {
                break;
            }
            event = name.to_owned();
        } else if let Some(data) = line.strip_prefix("data: ")
            && event == "issue"
        {
            let change: Value = serde_json::from_str(data).expect("JSON");
            changes.push((
                change["change"]["type"].as_str().expect("type").to_owned(),
                change["by"].as_str().map(str::to_owned),
            ));
        }
    }
    changes
}

#[test]
fn what_a_laptop_writes_records_the_name_of_its_token() {
    let team = Env::new();
    let server = Server::start(&team, &[]);
    let alice = team.json(&["token", "create", "--name", "alice"]);
    let alice = alice["token"].as_str().expect("secret").to_owned();
    let laptop = Env::new();
    laptop.ok(&["--server", &server.url, "login", "--token", &alice]);
    let key = laptop.create_issue("from alice's laptop");
    laptop.ok(&["issue", "comment", &key, "alice was here"]);
    let changes = writers_of(&server.url, &alice, &key);
    let by_alice = |what: &str| (what.to_owned(), Some("alice".to_owned()));
    assert_eq!(changes, [by_alice("created"), by_alice("comment")]);
}
