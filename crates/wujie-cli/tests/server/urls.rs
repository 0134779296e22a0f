//! An adapter is told the replica its run started on (`WUJIE_SERVER_URL`) and every replica,
//! that one first (`WUJIE_SERVER_URLS`), so that `wujie` inside it reaches the server even
//! when the first replica of the user's list is down.

use wujie_testkit::*;

/// A loopback URL nothing listens on (the port was bound, then released).
fn gone_replica() -> String {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    format!("http://127.0.0.1:{port}")
}

#[test]
fn an_adapter_is_given_the_replica_in_use_and_every_replica() {
    let server_env = Env::new();
    let server = Server::start(&server_env, &[]);
    let token = server_env.team_token(&server.url, "laptop");
    let gone = gone_replica();
    let laptop = Env::new();
    laptop.ok(&[
        "--server",
        &format!("{gone},{}", server.url),
        "login",
        "--token",
        &token,
    ]);
    let dump = laptop.work.path().join("adapter");
    let body = format!(
        "env | grep '^WUJIE_SERVER_URL' > '{dump}.env'\n\
         '{WUJIE}' --output json issue show \"$WUJIE_ISSUE_ID\" > '{dump}.issue'\n\
         echo '{}'",
        msg("text", "done", "k1"),
        dump = dump.display()
    );
    let plugin = laptop.plugin("envdump", V1, &body);
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("replicas in the environment");
    laptop.ok(&["run", &key, "--", "envdump"]);

    let env = std::fs::read_to_string(dump.with_extension("env")).expect("the adapter's env");
    let mut vars: Vec<&str> = env.lines().collect();
    vars.sort();
    assert_eq!(
        vars,
        [
            format!("WUJIE_SERVER_URL={}", server.url),
            format!("WUJIE_SERVER_URLS={},{gone}", server.url),
        ]
    );
    // `wujie` in the adapter (the run context) reads the run's issue past the gone replica.
    let issue = std::fs::read_to_string(dump.with_extension("issue")).expect("issue show");
    let issue: serde_json::Value = serde_json::from_str(&issue).expect("issue JSON");
    assert_eq!(issue["key"], key.as_str());
}
