//! Jobs and workers: a run asked for with `wujie issue assign` is taken by a `wujie worker`,
//! run in the issue's worktree as `wujie run` would, and lands on the issue; workers never
//! share a job; a killed worker's job is run again elsewhere. On the profile's own server
//! (SQLite) and on a PostgreSQL team server.

use std::path::{Path, PathBuf};
use std::process::{Child, Output, Stdio};

use serde_json::Value;
use wujie_testkit::run_output::describe;
use wujie_testkit::*;

use wujie_testkit::git_repo::require_repository;

/// Where the test's server keeps its data.
#[derive(Clone, Copy, Debug)]
enum Backend {
    /// The profile's own server, started on demand (SQLite).
    OwnServer,
    /// A `wujie server` on a fresh PostgreSQL database.
    Postgres,
    /// A `wujie server` on the profile's SQLite database, which other profiles log in to.
    SqliteServer,
}

/// The server of a test and the global options that reach it.
struct Team {
    env: Env,
    _server: Option<Server>,
    global: Vec<String>,
}

impl Team {
    /// `None` when the backend's tools are missing (a skip, refused in CI).
    fn require(backend: Backend) -> Option<Team> {
        let env = Env::new();
        let (server, global) = match backend {
            Backend::OwnServer => (None, Vec::new()),
            Backend::Postgres => {
                let cluster = wujie_pgtest::require_cluster()?;
                let url = cluster.create_database();
                let server = Server::start(&env, &["--database", &url]);
                let global = vec!["--server".to_owned(), server.url.clone()];
                (Some(server), global)
            }
            Backend::SqliteServer => {
                let server = Server::start(&env, &[]);
                let global = vec!["--server".to_owned(), server.url.clone()];
                (Some(server), global)
            }
        };
        Some(Team {
            env,
            _server: server,
            global,
        })
    }

    /// Another person's profile, logged in to this team's server as `name`.
    fn member(&self, name: &str) -> Env {
        let url = &self.global[1];
        let token = self.env.team_token(url, name);
        let member = Env::new();
        member.ok(&["--server", url, "login", "--token", &token]);
        member
    }

    fn args<'a>(&'a self, args: &[&'a str]) -> Vec<&'a str> {
        self.global
            .iter()
            .map(String::as_str)
            .chain(args.iter().copied())
            .collect()
    }

    fn ok(&self, args: &[&str]) -> String {
        self.env.ok(&self.args(args))
    }

    fn json(&self, args: &[&str]) -> Value {
        self.env.json(&self.args(args))
    }

    fn worker(&self, args: &[&str]) -> std::process::Command {
        let mut cmd = self.env.cmd();
        cmd.args(self.args(&[])).arg("worker").args(args);
        cmd
    }

    fn create_issue(&self, title: &str) -> String {
        self.json(&["issue", "create", "--title", title])["key"]
            .as_str()
            .expect("key")
            .to_owned()
    }

    fn jobs(&self, issue: &str) -> Vec<Value> {
        let jobs = self.json(&["jobs", "--issue", issue]);
        jobs.as_array().expect("a list of jobs").clone()
    }
}

/// An agent that takes the job's task as the user's input, writes a note and replies. When
/// `hold` names a file that does not exist yet, the first run creates it and then works for
/// ever (it is the one a killed worker leaves behind); later runs finish.
fn scribe(hold: Option<&Path>) -> String {
    let hold = match hold {
        Some(file) => format!(
            "if [ ! -e '{f}' ]; then echo $$ > '{f}'; while :; do sleep 0.1; done; fi",
            f = file.display()
        ),
        None => String::new(),
    };
    format!(
        r#"task=$(printf '%s' "$WUJIE_TASK_PROMPT" | tr '\n' ' ')
echo "{{\"type\":\"user_input\",\"content\":\"$task\",\"source\":\"t\",\"source_key\":\"task\"}}"
{hold}
echo "noted by $WUJIE_RUN_ID" > note.txt
echo '{}'"#,
        msg("final", "I wrote the note.", "reply")
    )
}

/// The pid of the agent [`scribe`] holds working, once it has written it to `held`.
fn held_agent(held: &Path) -> i32 {
    let pid = || {
        std::fs::read_to_string(held)
            .ok()?
            .trim()
            .parse::<i32>()
            .ok()
    };
    wait_until(60, "the job's agent to start", || pid().is_some());
    pid().expect("the agent's pid")
}

fn install(team: &Team, name: &str, body: &str) {
    let plugin = team.env.plugin(name, V1, body);
    team.env
        .ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
}

fn worker_done(out: Output) -> String {
    assert!(out.status.success(), "{}", describe(&out));
    String::from_utf8(out.stderr).unwrap()
}

fn a_job_queued_from_the_cli_runs_on_a_worker_and_lands_on_the_issue(backend: Backend) {
    let Some(team) = Team::require(backend) else {
        return;
    };
    let Some(repo) = require_repository(&team.env) else {
        return;
    };
    install(&team, "scribe", &scribe(None));
    let key = team.create_issue("Write the job note");
    let queued = team.ok(&["issue", "assign", &key, "--agent", "scribe"]);
    assert!(queued.contains("Queued job"), "{queued}");
    let jobs = team.jobs(&key);
    assert_eq!(jobs.len(), 1, "{jobs:?}");
    assert_eq!(jobs[0]["status"], "queued");
    let listed = team.ok(&["jobs"]);
    assert!(
        listed.contains(&key) && listed.contains("queued"),
        "{listed}"
    );

    let said = worker_done(
        team.worker(&["--repo", repo.to_str().unwrap(), "--exit-when-idle"])
            .output()
            .unwrap(),
    );
    assert!(said.contains(&format!("{key}: started job")), "{said}");
    assert!(said.contains("succeeded (run "), "{said}");
    assert!(said.contains(" events synced)."), "{said}");

    let job = &team.jobs(&key)[0];
    assert_eq!(
        (job["status"].as_str(), job["attempts"].as_u64()),
        (Some("succeeded"), Some(1))
    );
    let issue = team.json(&["issue", "show", &key]);
    let runs = issue["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{issue:#}");
    let run = &runs[0];
    assert_eq!(run["id"], job["run_id"]);
    assert_eq!(run["status"], "succeeded");
    let said_by_user: Vec<&Value> = run_output::messages_of(run, "user_input");
    assert_eq!(said_by_user.len(), 1, "{run:#}");
    assert_eq!(
        said_by_user[0]["content"],
        format!("{key}: Write the job note")
    );
    assert_eq!(
        run_output::one(run, "final")["content"],
        "I wrote the note."
    );
    // It worked in the issue's worktree, and the issue shows what it changed there.
    let worktree = repo.with_extension("wujie").join(key.to_lowercase());
    assert_eq!(run["git"]["worktree"].as_str(), worktree.to_str());
    let files: Vec<&str> = run["git"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert_eq!(files, ["note.txt"]);
    assert!(worktree.join("note.txt").exists());
    assert!(
        !repo.join("note.txt").exists(),
        "the checkout was left alone"
    );
    let shown = team.ok(&["issue", "show", &key]);
    let jobs_part = shown
        .split("\nJobs:\n")
        .nth(1)
        .unwrap_or_else(|| panic!("{shown}"));
    assert!(jobs_part.contains("succeeded"), "{shown}");
}

#[test]
fn a_job_queued_from_the_cli_runs_on_a_worker_and_lands_on_the_issue_on_sqlite() {
    a_job_queued_from_the_cli_runs_on_a_worker_and_lands_on_the_issue(Backend::OwnServer);
}

#[test]
fn a_job_queued_from_the_cli_runs_on_a_worker_and_lands_on_the_issue_on_postgres() {
    a_job_queued_from_the_cli_runs_on_a_worker_and_lands_on_the_issue(Backend::Postgres);
}

fn two_workers_never_run_the_same_job(backend: Backend) {
    let Some(team) = Team::require(backend) else {
        return;
    };
    install(&team, "scribe", &scribe(None));
    let mut keys = Vec::new();
    for n in 0..6 {
        let key = team.create_issue(&format!("Job {n}"));
        team.ok(&["issue", "assign", &key, "--agent", "scribe"]);
        keys.push(key);
    }
    // Outside a repository: both work in one directory, which is what this test does not
    // look at.
    let dir = team.env.work.path().to_str().unwrap().to_owned();
    let start = |name: &str| -> Child {
        team.worker(&[
            "--repo",
            &dir,
            "--exit-when-idle",
            "--name",
            name,
            "--max-jobs",
            "2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
    };
    let (a, b) = (start("left"), start("right"));
    let said = [a, b].map(|w| worker_done(w.wait_with_output().unwrap()));
    for key in &keys {
        let jobs = team.jobs(key);
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0]["status"], "succeeded", "{jobs:?}\n{said:?}");
        assert_eq!(jobs[0]["attempts"], 1, "{jobs:?}");
        let runs = team.json(&["issue", "runs", key]);
        assert_eq!(
            runs.as_array().unwrap().len(),
            1,
            "{key} ran once: {runs:#}"
        );
        // The job's run is on the issue with what the agent said, once.
        let issue = team.json(&["issue", "show", key]);
        assert_eq!(run_output::messages_of(&issue["runs"][0], "final").len(), 1);
    }
    let started: usize = said
        .iter()
        .map(|s| s.matches(": started job").count())
        .sum();
    assert_eq!(started, 6, "{said:?}");
}

#[test]
fn two_workers_never_run_the_same_job_on_sqlite() {
    two_workers_never_run_the_same_job(Backend::OwnServer);
}

#[test]
fn two_workers_never_run_the_same_job_on_postgres() {
    two_workers_never_run_the_same_job(Backend::Postgres);
}

fn a_killed_workers_job_runs_again_elsewhere(backend: Backend) {
    let Some(team) = Team::require(backend) else {
        return;
    };
    let held = team.env.work.path().join("first-agent.pid");
    install(&team, "scribe", &scribe(Some(&held)));
    let key = team.create_issue("Survive a dead worker");
    team.ok(&["issue", "assign", &key, "--agent", "scribe"]);
    let dir: PathBuf = team.env.work.path().to_owned();
    let mut doomed = team
        .worker(&[
            "--repo",
            dir.to_str().unwrap(),
            "--name",
            "doomed",
            "--lease",
            "3",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let agent = held_agent(&held);
    doomed.kill().unwrap();
    doomed.wait().unwrap();
    // What the worker started goes with it: its run, and that run's agent.
    wait_until(30, "the killed worker's agent to be ended", || {
        !pid_alive(agent)
    });

    // It waits for the job until the doomed worker's lease runs out, then runs it.
    let rescuer = team
        .worker(&["--repo", dir.to_str().unwrap(), "--name", "rescuer"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until(90, "the job to be run again and end", || {
        team.jobs(&key)[0]["status"] == "succeeded"
    });
    assert!(signal_pid(
        rescuer.id() as i32,
        nix::sys::signal::Signal::SIGINT
    ));
    let said = worker_done(rescuer.wait_with_output().unwrap());
    assert!(said.contains("attempt 2"), "{said}");

    let jobs = team.jobs(&key);
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(
        (
            job["status"].as_str(),
            job["attempts"].as_u64(),
            job["worker"].as_str()
        ),
        (Some("succeeded"), Some(2), Some("rescuer")),
        "{job:#}"
    );
    let runs = team.json(&["issue", "runs", &key]);
    let mut statuses: Vec<&str> = runs
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["failed", "succeeded"], "{runs:#}");
    let succeeded = runs
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["status"] == "succeeded")
        .unwrap();
    assert_eq!(succeeded["id"], job["run_id"]);
}

#[test]
fn a_killed_workers_job_runs_again_elsewhere_on_sqlite() {
    a_killed_workers_job_runs_again_elsewhere(Backend::OwnServer);
}

#[test]
fn a_killed_workers_job_runs_again_elsewhere_on_postgres() {
    a_killed_workers_job_runs_again_elsewhere(Backend::Postgres);
}

#[test]
fn what_cannot_be_queued_or_run_is_refused_in_the_users_words() {
    let env = Env::new();
    let key = env.create_issue("Refusals");
    // claude needs a terminal: a worker could never run it.
    let err = env.fails(&["issue", "assign", &key, "--agent", "claude"]);
    assert!(err.contains("needs a terminal"), "{err}");
    assert!(err.contains(&format!("wujie run {key} -- claude")), "{err}");
    let err = env.fails(&["issue", "assign", "WUJ-999", "--agent", "pi"]);
    assert!(err.contains("WUJ-999"), "{err}");
    assert!(!err.contains("POST") && !err.contains("404"), "{err}");
    assert_eq!(
        env.ok(&["jobs"]).trim(),
        "No jobs yet. Queue one with `wujie issue assign KEY --agent pi`."
    );
    assert_eq!(
        env.ok(&["jobs", "--status", "failed"]).trim(),
        "No jobs match."
    );
    assert_eq!(env.json(&["jobs"]), serde_json::json!([]));
    let err = env.fails(&["rerun", &key]);
    assert!(err.contains("has no job to run again"), "{err}");
    // A worker for a provider that needs a terminal, or with nothing it can run.
    let err = env.fails(&["worker", "--provider", "claude"]);
    assert!(err.contains("needs a terminal"), "{err}");
}

#[test]
fn a_rerun_queues_the_issues_latest_job_again() {
    let env = Env::new();
    let plugin = env.plugin("scribe", V1, &scribe(None));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("Again");
    let first = env.json(&[
        "issue", "assign", &key, "--agent", "scribe", "--prompt", "say hi", "--worker", "box",
        "--", "--flag",
    ]);
    let again = env.json(&["rerun", &key]);
    assert_ne!(again["id"], first["id"]);
    assert_eq!(again["rerun_of"], first["id"]);
    for field in ["provider", "prompt", "worker_label", "args"] {
        assert_eq!(again[field], first[field], "{field}");
    }
    assert_eq!(again["args"], serde_json::json!(["--flag"]));
    let text = env.ok(&["jobs", "--issue", &key, "--status", "queued"]);
    assert_eq!(text.lines().count(), 3, "a header and two jobs: {text}");
}

#[test]
fn ctrl_c_lets_running_jobs_finish_and_a_second_gives_them_back() {
    let env = Env::new();
    let held = env.work.path().join("agent.pid");
    let plugin = env.plugin("scribe", V1, &scribe(Some(&held)));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("Stopped worker");
    env.ok(&["issue", "assign", &key, "--agent", "scribe"]);
    let dir = env.work.path().to_str().unwrap().to_owned();
    let worker = env
        .cmd()
        .args(["--output", "json", "worker", "--repo", &dir, "--name", "w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let agent = held_agent(&held);
    let pid = worker.id() as i32;
    use nix::sys::signal::Signal::SIGINT;
    assert!(signal_pid(pid, SIGINT));
    // The first Ctrl+C reaches the worker only: its job goes on.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(pid_alive(agent), "the first Ctrl+C stopped the agent");
    let job = &env.json(&["jobs", "--issue", &key])[0];
    assert_eq!(job["status"], "running", "{job:#}");
    assert!(signal_pid(pid, SIGINT));
    let out = worker.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}", describe(&out));
    assert!(
        said.contains("taking no more jobs; waiting for the 1 running to finish"),
        "{said}"
    );
    assert!(
        said.contains("cancelling 1 running jobs; they go back to the queue"),
        "{said}"
    );
    assert!(said.contains("given back to the queue"), "{said}");
    // With --output json, a line per job started and ended: given back, it is queued again.
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let events: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| {
            (
                l["event"].as_str().unwrap(),
                l["issue_key"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(events, [("started", key.as_str()), ("ended", key.as_str())]);
    assert_eq!(lines[1]["status"], "queued", "{lines:?}");
    assert!(lines[1]["run_id"].is_string(), "{lines:?}");
    wait_until(30, "the agent to be stopped", || !pid_alive(agent));
    let job = &env.json(&["jobs", "--issue", &key])[0];
    assert_eq!(
        (job["status"].as_str(), job["attempts"].as_u64()),
        (Some("queued"), Some(1)),
        "{job:#}"
    );
    let runs = env.json(&["issue", "runs", &key]);
    assert_eq!(runs[0]["status"], "cancelled", "{runs:#}");
}

fn a_workers_run_is_cancelled_from_another_profile(backend: Backend) {
    let Some(team) = Team::require(backend) else {
        return;
    };
    let held = team.env.work.path().join("agent.pid");
    install(&team, "scribe", &scribe(Some(&held)));
    let key = team.create_issue("Cancel the worker's run");
    team.ok(&["issue", "assign", &key, "--agent", "scribe"]);
    // A second job no worker here takes: it waits, and is cancelled with the run.
    team.ok(&[
        "issue",
        "assign",
        &key,
        "--agent",
        "scribe",
        "--worker",
        "elsewhere",
    ]);
    let dir = team.env.work.path().to_str().unwrap().to_owned();
    let worker = team
        .worker(&["--repo", &dir, "--exit-when-idle"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let agent = held_agent(&held);

    let alice = team.member("alice");
    let url = team.global[1].clone();
    let asked = alice.json(&["--server", &url, "issue", "cancel", &key]);
    assert_eq!(asked["runs"].as_array().unwrap().len(), 1, "{asked:#}");
    assert_eq!(asked["runs"][0]["cancel"]["by"], "alice");
    assert_eq!(asked["jobs"].as_array().unwrap().len(), 1, "{asked:#}");
    assert_eq!(asked["jobs"][0]["status"], "cancelled");

    let said = worker_done(worker.wait_with_output().unwrap());
    assert!(said.contains("was cancelled by alice"), "{said}");
    assert!(said.contains("was cancelled (run "), "{said}");
    wait_until(30, "the agent to be stopped", || !pid_alive(agent));
    let jobs = team.jobs(&key);
    let statuses: Vec<&str> = jobs.iter().map(|j| j["status"].as_str().unwrap()).collect();
    assert_eq!(statuses, ["cancelled", "cancelled"], "{jobs:#?}");
    let run = &team.json(&["issue", "show", &key])["runs"][0];
    assert_eq!(
        (run["status"].as_str(), run["error"].as_str()),
        (Some("cancelled"), Some("cancelled by alice"))
    );
}

#[test]
fn a_workers_run_is_cancelled_from_another_profile_on_sqlite() {
    a_workers_run_is_cancelled_from_another_profile(Backend::SqliteServer);
}

#[test]
fn a_workers_run_is_cancelled_from_another_profile_on_postgres() {
    a_workers_run_is_cancelled_from_another_profile(Backend::Postgres);
}
