//! `wujie server` on PostgreSQL: chosen by `--database`, `WUJIE_DATABASE_URL` or the profile
//! config's `database` (in that order; the profile's SQLite file otherwise), printed without
//! its password, and a URL that is malformed or names no server is a clear error and a non-zero
//! exit. The tests that need a server use a throw-away cluster; they skip with a message when
//! PostgreSQL is not installed, and fail when WUJIE_REQUIRE_ALL is set.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use serde_json::json;
use wujie_testkit::*;

/// A password the cluster does not check (it trusts loopback) but that must never be printed.
const PASSWORD: &str = "pw-never-shown";

/// `url` (`postgres://wujie@…`) with [`PASSWORD`] in it.
fn with_password(url: &str) -> String {
    url.replacen(
        "postgres://wujie@",
        &format!("postgres://wujie:{PASSWORD}@"),
        1,
    )
}

/// The database name at the end of `url`.
fn name_of(url: &str) -> &str {
    wujie_pgtest::database_name(url)
}

/// `wujie --output json server` with `args`, and `WUJIE_DATABASE_URL` set when given;
/// returns it and the one line it printed (its URL and database).
fn start_json(env: &Env, database_url: Option<&str>, args: &[&str]) -> (Server, String) {
    let mut cmd = env.cmd();
    if let Some(url) = database_url {
        cmd.env("WUJIE_DATABASE_URL", url);
    }
    let mut child = cmd
        .args(["--output", "json", "server", "--listen", "127.0.0.1:0"])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("server starts");
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("server prints its address");
    let doc: serde_json::Value =
        serde_json::from_str(&first).unwrap_or_else(|e| panic!("not JSON ({e}): {first:?}"));
    let url = doc["url"].as_str().expect("url").to_owned();
    (Server { child, url }, first)
}

/// How `url` is shown: its password replaced.
fn shown(url: &str) -> String {
    url.replacen("postgres://wujie@", "postgres://wujie:***@", 1)
}

fn files_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_under(&path));
        } else {
            found.push(path);
        }
    }
    found
}

fn issue_count(cluster: &wujie_pgtest::Cluster, url: &str) -> String {
    cluster.psql(name_of(url), "SELECT COUNT(*) FROM issues")
}

#[test]
fn server_help_names_the_database_and_its_defaults() {
    let help = Env::new().ok(&["server", "--help"]);
    for needle in ["--database", "postgres://", "WUJIE_DATABASE_URL", "SQLite"] {
        assert!(help.contains(needle), "{needle} missing in:\n{help}");
    }
}

#[test]
fn a_server_on_postgres_keeps_its_data_there_and_never_prints_the_password() {
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let url = cluster.create_database();
    let env = Env::new();
    let (server, printed) = start_json(&env, None, &["--database", &with_password(&url)]);
    assert!(!printed.contains(PASSWORD), "{printed}");
    assert!(printed.contains(&shown(&url)), "{printed}");
    let key = env.json(&[
        "--server",
        &server.url,
        "issue",
        "create",
        "--title",
        "kept in PostgreSQL",
    ])["key"]
        .as_str()
        .expect("key")
        .to_owned();
    assert_eq!(key, "WUJ-1");
    assert_eq!(
        cluster.psql(name_of(&url), "SELECT title FROM issues"),
        "kept in PostgreSQL"
    );
    // Nothing of it went to the profile's SQLite file.
    assert!(
        !files_under(env.home.path())
            .iter()
            .any(|f| f.ends_with("wujie.db")),
        "{:?}",
        files_under(env.home.path())
    );
}

#[test]
fn wujie_database_url_chooses_postgres_and_is_shown_without_its_password() {
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let url = cluster.create_database();
    let env = Env::new();
    let (server, first) = start_json(&env, Some(&with_password(&url)), &[]);
    assert!(!first.contains(PASSWORD), "{first}");
    assert!(first.contains(&shown(&url)), "{first}");
    env.ok(&[
        "--server",
        &server.url,
        "issue",
        "create",
        "--title",
        "from the environment",
    ]);
    assert_eq!(issue_count(cluster, &url), "1");
}

#[test]
fn the_profile_config_names_the_database_and_the_flag_wins_over_it() {
    let Some(cluster) = wujie_pgtest::require_cluster() else {
        return;
    };
    let configured = cluster.create_database();
    let flagged = cluster.create_database();
    let env = Env::new();
    std::fs::create_dir_all(env.config_path().parent().expect("config dir")).unwrap();
    std::fs::write(
        env.config_path(),
        json!({"database": configured}).to_string(),
    )
    .unwrap();
    // Every command of the profile uses the configured database, the embedded server too.
    env.create_issue("through the embedded server");
    assert_eq!(issue_count(cluster, &configured), "1");
    {
        let server = Server::start(&env, &[]);
        env.ok(&["--server", &server.url, "issue", "create", "--title", "b"]);
        assert_eq!(issue_count(cluster, &configured), "2");
    }
    let server = Server::start(&env, &["--database", &flagged]);
    env.ok(&["--server", &server.url, "issue", "create", "--title", "c"]);
    assert_eq!(issue_count(cluster, &flagged), "1");
    assert_eq!(issue_count(cluster, &configured), "2");
}

#[test]
fn a_database_that_cannot_be_reached_is_a_clear_error_without_the_password() {
    // A loopback port nobody listens on: bound, then released.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let env = Env::new();
    let url = format!("postgres://wujie:{PASSWORD}@127.0.0.1:{port}/team");
    let err = env.fails(&["server", "--database", &url]);
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(
        err.contains(&format!("postgres://wujie:***@127.0.0.1:{port}/team")),
        "names the database: {err}"
    );
    assert_eq!(err.matches("postgres://").count(), 1, "named once: {err}");
    assert!(err.contains("cannot connect"), "{err}");
    assert!(err.to_lowercase().contains("refused"), "says why: {err}");
    // From the environment, the same.
    let out = env
        .cmd()
        .env("WUJIE_DATABASE_URL", &url)
        .args(["server", "--listen", "127.0.0.1:0"])
        .output()
        .expect("wujie runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(err.contains("cannot connect"), "{err}");
}

#[test]
fn a_malformed_database_url_is_refused_before_anything_starts() {
    let env = Env::new();
    let err = env.fails(&[
        "server",
        "--database",
        &format!("postgres://wujie:{PASSWORD}@127.0.0.1:notaport/team"),
    ]);
    assert!(!err.contains(PASSWORD), "{err}");
    assert!(err.contains("--database"), "says which setting: {err}");
    assert!(
        err.contains("postgres://USER:PASSWORD@HOST:PORT/DATABASE"),
        "{err}"
    );
    let err = env.fails(&["server", "--database", "mysql://h/w"]);
    assert!(err.contains("mysql://"), "{err}");
    std::fs::create_dir_all(env.config_path().parent().expect("config dir")).unwrap();
    std::fs::write(
        env.config_path(),
        json!({"database": "redis://h/0"}).to_string(),
    )
    .unwrap();
    let err = env.fails(&["server"]);
    assert!(err.contains("config.json"), "names the config: {err}");
    assert!(err.contains("redis://"), "{err}");
}
