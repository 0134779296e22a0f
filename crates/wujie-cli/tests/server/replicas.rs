//! Several `wujie server` processes on one PostgreSQL database (replicas): what one writes the
//! others serve, live feeds of every replica see every write, a reporter whose replica dies
//! delivers to the next one in its list and nothing is stored twice, and the stale-run sweep
//! fails a run once. Skipped with a message when PostgreSQL is not installed, failed when
//! WUJIE_REQUIRE_ALL is set.

use std::io::{BufRead, BufReader};
use std::time::Duration;

use serde_json::{Value, json};
use wujie_testkit::*;

struct Team {
    cluster: &'static wujie_pgtest::Cluster,
    database: String,
    /// One profile per replica, as on separate machines.
    envs: Vec<Env>,
    servers: Vec<Server>,
    token: String,
}

impl Team {
    /// `n` replicas on a fresh database; the first names it in its profile config, the others
    /// on the command line. `extra` goes to every `wujie server`.
    fn require(n: usize, extra: &[&str]) -> Option<Team> {
        let cluster = wujie_pgtest::require_cluster()?;
        let url = cluster.create_database();
        let database = wujie_pgtest::database_name(&url).to_owned();
        let mut envs = Vec::new();
        let mut servers = Vec::new();
        for i in 0..n {
            let env = Env::new();
            let mut args = extra.to_vec();
            if i == 0 {
                std::fs::create_dir_all(env.config_path().parent().expect("config dir"))
                    .expect("config dir");
                std::fs::write(env.config_path(), json!({"database": url}).to_string())
                    .expect("write config");
            } else {
                args.extend(["--database", url.as_str()]);
            }
            servers.push(Server::start(&env, &args));
            envs.push(env);
        }
        // Minted on the first replica's profile (its config names the database).
        let token = envs[0]
            .ok(&["token", "create", "--name", "team member"])
            .trim()
            .to_owned();
        Some(Team {
            cluster,
            database,
            envs,
            servers,
            token,
        })
    }

    fn url(&self, replica: usize, path: &str) -> String {
        format!("{}/api/v1{path}", self.servers[replica].url)
    }

    fn post(&self, replica: usize, path: &str, body: &Value) -> Value {
        let r = reqwest::blocking::Client::new()
            .post(self.url(replica, path))
            .bearer_auth(&self.token)
            .json(body)
            .send()
            .expect("request");
        assert!(r.status().is_success(), "POST {path}: {}", r.status());
        r.json().expect("json")
    }

    fn get(&self, replica: usize, path: &str) -> Value {
        let r = reqwest::blocking::Client::new()
            .get(self.url(replica, path))
            .bearer_auth(&self.token)
            .send()
            .expect("request");
        assert!(r.status().is_success(), "GET {path}: {}", r.status());
        r.json().expect("json")
    }

    fn count(&self, sql: &str) -> i64 {
        self.cluster
            .psql(&self.database, sql)
            .parse()
            .expect("a count")
    }
}

/// Reads `lines` up to one that starts with `prefix`.
fn wait_for_line(lines: &mut impl Iterator<Item = std::io::Result<String>>, prefix: &str) {
    loop {
        let line = lines
            .next()
            .unwrap_or_else(|| panic!("the feed ended before {prefix:?}"))
            .expect("feed line");
        if line.starts_with(prefix) {
            return;
        }
    }
}

fn item(key: &str) -> Value {
    json!({"source": "t", "source_key": key,
           "event": {"event": "message", "type": "text", "content": format!("line {key}"),
                     "source": "t", "source_key": key}})
}

fn batch(keys: std::ops::Range<u32>) -> Value {
    json!({"items": keys.map(|k| item(&format!("k{k}"))).collect::<Vec<_>>()})
}

fn outcomes(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| r["outcome"].as_str().expect("outcome").to_owned())
        .collect()
}

#[test]
fn replicas_serve_one_workspace_and_every_live_feed_sees_every_write() {
    let Some(team) = Team::require(2, &[]) else {
        return;
    };
    // A live feed on replica 1, opened before anything is written.
    let feed = reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("client")
        .get(team.url(1, "/events"))
        .bearer_auth(&team.token)
        .send()
        .expect("feed");
    assert_eq!(feed.status(), 200);
    let mut lines = BufReader::new(feed).lines();
    let mut seen = Vec::new();
    // Caught up (nothing to replay): what comes now, the database told this replica.
    wait_for_line(&mut lines, "event: live");
    let issue = team.post(0, "/issues", &json!({"title": "written on replica 0"}));
    let key = issue["key"].as_str().expect("key").to_owned();
    assert_eq!(key, "WUJ-1");
    assert_eq!(
        team.get(1, &format!("/issues/{key}"))["title"],
        "written on replica 0"
    );
    // Issue numbers come from the one database, whichever replica creates the issue.
    let second = team.post(1, "/issues", &json!({"title": "written on replica 1"}));
    assert_eq!(second["key"], "WUJ-2");
    while !seen.iter().any(|l: &String| l.contains("WUJ-2")) {
        let line = lines
            .next()
            .expect("the feed stays open until both issues arrived")
            .expect("feed line");
        // Issue changes only (the feed also says `live`, with no issue, once caught up).
        if line.starts_with("data:") && line.contains("issue_key") {
            seen.push(line);
        }
    }
    assert!(seen[0].contains("WUJ-1"), "{seen:?}");
}

#[test]
fn a_batch_redelivered_to_another_replica_after_the_first_died_is_stored_once() {
    let Some(mut team) = Team::require(2, &[]) else {
        return;
    };
    let issue = team.post(0, "/issues", &json!({"title": "failover"}));
    let key = issue["key"].as_str().expect("key").to_owned();
    let run = team.post(
        0,
        &format!("/issues/{key}/runs"),
        &json!({"provider": "fake", "cwd": "/tmp"}),
    );
    let run_id = run["run"]["id"].as_str().expect("run id").to_owned();
    let first = team.post(0, &format!("/runs/{run_id}/events"), &batch(0..50));
    assert!(outcomes(&first).iter().all(|o| o == "stored"));
    // Replica 0 dies before the reporter saw its answer; the reporter sends the same batch,
    // and what it read since, to replica 1.
    team.servers[0].kill();
    let again = team.post(1, &format!("/runs/{run_id}/events"), &batch(0..80));
    let got = outcomes(&again);
    assert!(got[..50].iter().all(|o| o == "duplicate"), "{got:?}");
    assert!(got[50..].iter().all(|o| o == "stored"), "{got:?}");
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM run_messages WHERE run_id = '{run_id}'"
        )),
        80
    );
    assert_eq!(
        team.count(
            "SELECT COUNT(*) FROM (SELECT DISTINCT run_id, source, source_key FROM run_messages) d"
        ),
        80
    );
    // Replica 0 comes back on the same database and serves what replica 1 stored.
    let env = &team.envs[0];
    team.servers[0] = Server::start(env, &[]);
    let run = team.get(0, &format!("/runs/{run_id}"));
    assert_eq!(run["messages"].as_array().expect("messages").len(), 80);
}

/// A shell adapter that prints messages `k1`..`k{n}`, waits for the file `go`, then prints
/// `k{n+1}`..`k{2n}`.
fn adapter_pausing_at(go: &std::path::Path, n: u32) -> String {
    let lines = |keys: std::ops::RangeInclusive<u32>| {
        keys.map(|k| {
            format!(
                "echo '{}'",
                msg("text", &format!("line {k}"), &format!("k{k}"))
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
    };
    format!(
        "{}\nwhile [ ! -e '{go}' ]; do sleep 0.05; done\n{}",
        lines(1..=n),
        lines(n + 1..=2 * n),
        go = go.display()
    )
}

#[test]
fn a_laptop_listing_two_replicas_runs_on_when_its_replica_dies_and_stores_each_event_once() {
    let Some(mut team) = Team::require(2, &[]) else {
        return;
    };
    let laptop = Env::new();
    let both = format!("{},{}", team.servers[0].url, team.servers[1].url);
    laptop.ok(&["--server", &both, "login", "--token", &team.token]);
    let go = laptop.work.path().join("go");
    let plugin = laptop.plugin("relay", V1, &adapter_pausing_at(&go, 20));
    laptop.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = laptop.create_issue("runs through a replica that dies");
    let run = laptop
        .cmd()
        .args(["run", &key, "--", "relay"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("wujie run starts");
    const STORED: &str = "SELECT COUNT(*) FROM run_messages";
    wait_until(60, "the first half delivered to replica 0", || {
        team.count(STORED) == 20
    });
    team.servers[0].kill();
    std::fs::write(&go, "").unwrap();
    let out = run.wait_with_output().expect("wujie run ends");
    assert!(
        out.status.success(),
        "wujie run: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(team.count(STORED), 40);
    assert_eq!(
        team.count("SELECT COUNT(*) FROM (SELECT DISTINCT run_id, source_key FROM run_messages) d"),
        40
    );
    let issue = team.get(1, &format!("/issues/{key}"));
    assert_eq!(issue["runs"][0]["status"], "succeeded", "{issue}");
    // One-shot commands of the laptop skip the replica that is gone, too.
    assert_eq!(laptop.issue(&key)["key"], key.as_str());
}

#[test]
fn the_stale_run_sweep_of_several_replicas_fails_a_run_once() {
    let Some(team) = Team::require(3, &["--stale-after", "1"]) else {
        return;
    };
    let issue = team.post(0, "/issues", &json!({"title": "silent reporter"}));
    let key = issue["key"].as_str().expect("key").to_owned();
    let run = team.post(
        1,
        &format!("/issues/{key}/runs"),
        &json!({"provider": "fake", "cwd": "/tmp"}),
    );
    let run_id = run["run"]["id"].as_str().expect("run id").to_owned();
    wait_until(60, "a replica fails the silent run", || {
        team.get(2, &format!("/runs/{run_id}"))["status"] == "failed"
    });
    // Every replica keeps sweeping meanwhile; none records the failure again.
    std::thread::sleep(Duration::from_secs(3));
    assert_eq!(
        team.count(&format!(
            "SELECT COUNT(*) FROM issue_activity WHERE change LIKE '%run_finished%' \
             AND author_run_id = '{run_id}'"
        )),
        1
    );
}
