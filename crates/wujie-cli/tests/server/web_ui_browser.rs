//! The web UI in a real browser: `wujie ui` on a profile `wujie demo` made, headless Chromium
//! logging in with the one-time link, watching a run stream without a reload, commenting,
//! closing, promoting a discussion; agent text with `<script>` and `javascript:` stays inert.
//!
//! Set WUJIE_SCREENSHOTS=DIR to keep the pages' screenshots there (docs/screenshots is what
//! the README shows).

use std::io::BufRead;
use std::path::PathBuf;
use std::process::{Child, Stdio};

use wujie_testkit::browser::Browser;
use wujie_testkit::{Env, V1, V2, msg, signal_pid, write_plugin};

/// `wujie ui` serving this test's profile; stopped (SIGTERM, then waited for) on drop.
pub(crate) struct Ui {
    child: Child,
    pub(crate) url: String,
    pub(crate) login_url: String,
}

impl Ui {
    pub(crate) fn start(env: &Env) -> Ui {
        Ui::start_on(env, "127.0.0.1:0")
    }

    /// On `listen` (`127.0.0.1:PORT`), as a restart on the same address does.
    pub(crate) fn start_on(env: &Env, listen: &str) -> Ui {
        let mut child = env
            .cmd()
            .args(["--output", "json", "ui", "--no-browser", "--listen", listen])
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("wujie ui starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut line)
            .expect("wujie ui prints its address");
        let doc: serde_json::Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        Ui {
            child,
            url: doc["url"].as_str().expect("url").to_owned(),
            login_url: doc["login_url"].as_str().expect("login_url").to_owned(),
        }
    }
}

impl Ui {
    /// Opens issue `key`'s page in `b` and waits until its live feed is on.
    pub(crate) fn open_live_issue(&self, b: &mut Browser, key: &str) {
        b.goto(&format!("{}/issues/{key}", self.url));
        b.wait_for(
            "the page to be live",
            "document.getElementById('issue').dataset.live === 'on'",
        );
    }
}

/// `wujie ui` on `env`'s profile and Chromium logged in to it with the one-time link, on the
/// issue list.
pub(crate) fn logged_in(env: &Env, chromium: &std::path::Path) -> (Ui, Browser) {
    let ui = Ui::start(env);
    let mut b = Browser::start(chromium);
    b.goto(&ui.login_url);
    b.wait_for("the issue list", "location.pathname === '/'");
    (ui, b)
}

impl Drop for Ui {
    fn drop(&mut self) {
        signal_pid(self.child.id() as i32, nix::sys::signal::Signal::SIGTERM);
        let _ = self.child.wait();
    }
}

fn screenshots() -> Option<PathBuf> {
    let dir = PathBuf::from(std::env::var_os("WUJIE_SCREENSHOTS")?);
    std::fs::create_dir_all(&dir).expect("screenshot dir");
    Some(dir)
}

pub(crate) fn shot(browser: &mut Browser, name: &str) {
    if let Some(dir) = screenshots() {
        browser.screenshot(&dir.join(name));
    }
}

/// An adapter that reports in two steps: the first messages, then (once the file `go`
/// exists) the rest. Its text carries markup that must stay text.
fn streaming_plugin(env: &Env) {
    let go = env.work.path().join("go");
    let tool = serde_json::json!({
        "type": "tool_use", "tool": "bash", "input": {"command": "ls"},
        "source": "t", "source_key": "3"
    });
    let result = serde_json::json!({
        "type": "tool_result", "tool": "bash", "output": "Cargo.toml",
        "source": "t", "source_key": "3r"
    });
    let usage = serde_json::json!({"usage": {
        "provider": "anthropic", "model": "claude-sonnet-4-5", "input_tokens": 1000,
        "output_tokens": 500, "cache_read_tokens": 0, "cache_write_tokens": 0
    }});
    let body = format!(
        "echo '{}'\necho '{}'\necho '{tool}'\necho '{result}'\n\
         while [ ! -e {go} ]; do sleep 0.05; done\n\
         echo '{}'\necho '{}'\necho '{usage}'\necho '{}'",
        msg("user_input", "Please list the files", "1"),
        msg(
            "text",
            "Here: <script>window.pwned = 1</script> and [a link](javascript:window.pwned=2) \
             <img src=x onerror=\"window.pwned=3\">",
            "2"
        ),
        msg("thinking", "The listing is short.", "4"),
        msg("error", "a recoverable error", "5"),
        msg("final", "All done: **one** file.", "6"),
        go = go.display(),
    );
    let dir = env.work.path().join("streamer");
    write_plugin(&dir, "streamer", V1, &body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

/// A v2 adapter that plans and ends: its discussion stays open, ready to be promoted.
fn planner_plugin(env: &Env) {
    // printf, not echo: sh's echo would turn the JSON's `\n` into a line break.
    let body = format!(
        "printf '%s\\n' '{}'",
        serde_json::json!({"type": "plan", "content": "# Ship the parser\n1. Write it\n2. Test it",
            "source": "s", "source_key": "p1"})
    );
    let dir = env.work.path().join("planner");
    write_plugin(&dir, "planner", V2, &body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

#[test]
fn the_web_ui_in_a_real_browser() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    env.ok(&["demo"]);
    let ui = Ui::start(&env);
    let mut b = Browser::start(&chromium);

    // Pages need a login; the one-time link gives one, and shows the demo issue.
    b.goto(&format!("{}/", ui.url));
    assert_eq!(b.path(), "/login");
    b.goto(&ui.login_url);
    b.wait_for("the issue list", "location.pathname === '/'");
    assert!(
        b.text().contains("Try Wujie: run the fake provider"),
        "{}",
        b.text()
    );
    shot(&mut b, "issues.png");

    // Search and the status filter.
    b.goto(&format!("{}/?search=nothing-like-this", ui.url));
    assert!(b.text().contains("No issues match."));
    b.goto(&format!("{}/?status=closed", ui.url));
    assert!(!b.text().contains("Try Wujie"));

    // A run streaming while the page is open: new messages appear without a reload.
    streaming_plugin(&env);
    let key = env.create_issue("Stream a run");
    let mut run = env
        .cmd()
        .args(["run", &key, "--", "streamer"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    b.goto(&format!("{}/issues/{key}", ui.url));
    b.wait_for(
        "the first messages",
        "document.querySelectorAll('.transcript li[data-key=\"t/3\"]').length === 1",
    );
    b.wait_for(
        "the feed to be live",
        "document.getElementById('issue').dataset.live === 'on'",
    );
    b.eval("window.stillTheSamePage = true");
    std::fs::write(env.work.path().join("go"), "").expect("go");
    b.wait_for(
        "the final reply, live",
        "!!document.querySelector('.msg.final') && document.querySelector('.msg.final').innerText.includes('All done')",
    );
    b.wait_for(
        "the run's end, live",
        "!!document.querySelector('.run-head .run-succeeded')",
    );
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        serde_json::json!(true),
        "the page was reloaded"
    );
    assert!(run.wait().expect("run ends").success());
    // Each entry once, in order.
    let keys = b.eval(
        "[...document.querySelectorAll('.transcript li')].map(li => li.dataset.key).join(',')",
    );
    assert_eq!(keys, "t/1,t/2,t/3,t/4,t/5,t/6");
    // A tool call and its result are one row.
    assert_eq!(
        b.eval("document.querySelector('.transcript li[data-key=\"t/3\"]').dataset.resultKey"),
        "t/3r"
    );
    // Tool calls collapsed with their input and output; errors visible; cost priced.
    assert_eq!(
        b.eval("document.querySelector('.msg.tool_use details').open"),
        serde_json::json!(false)
    );
    let tool = b.eval("document.querySelector('.msg.tool_use details').textContent");
    assert!(
        tool.as_str().unwrap().contains("\"command\": \"ls\""),
        "{tool}"
    );
    let result = b.eval("document.querySelector('.msg.tool_use .tool-result').textContent");
    assert!(result.as_str().unwrap().contains("Cargo.toml"), "{result}");
    assert!(b.text().contains("a recoverable error"));
    assert!(b.text().contains("$0.0105"), "the run's cost: {}", b.text());
    assert!(
        b.text()
            .contains("model claude-sonnet-4-5 · tokens in 1000"),
        "the model with the usage: {}",
        b.text()
    );

    // Agent markup stayed text: nothing ran, no javascript: link, no image.
    assert_eq!(b.eval("typeof window.pwned"), "undefined");
    assert_eq!(
        b.eval("document.querySelectorAll('a[href^=\"javascript\" i]').length"),
        0
    );
    assert_eq!(
        b.eval("document.querySelectorAll('.transcript img, .transcript script').length"),
        0
    );
    assert!(
        b.text().contains("<script>window.pwned = 1</script>"),
        "{}",
        b.text()
    );
    // A reload renders the same transcript from the server, just as inert.
    b.goto(&format!("{}/issues/{key}", ui.url));
    assert_eq!(b.eval("typeof window.pwned"), "undefined");
    assert_eq!(
        b.eval("document.querySelectorAll('.transcript li').length"),
        6
    );
    shot(&mut b, "issue.png");

    // Comment, then close, from the page.
    b.eval("document.getElementById('comment-body').value = 'Looks good from the browser'");
    b.eval("document.querySelector('#comment-form button').click()");
    b.wait_for(
        "the comment",
        "document.querySelector('#timeline') !== null && document.querySelector('#timeline').innerText.includes('Looks good from the browser')",
    );
    b.eval("document.querySelector('#issue-actions form button').click()");
    b.wait_for(
        "the issue closed",
        "document.getElementById('issue-status').innerText === 'done'",
    );
    let shown = env.issue(&key);
    assert_eq!(shown["status"], "done");
    // The run's prompt and final reply are comments too (by the agent); ours is the last.
    let comments = shown["comments"].as_array().expect("comments");
    let ours = comments.last().expect("a comment");
    assert_eq!(ours["body"], "Looks good from the browser");
    assert_eq!(ours["author_kind"], "user");

    // At phone width the page still fits: nothing wider than the screen.
    b.viewport(390, 844, true);
    b.goto(&format!("{}/issues/{key}", ui.url));
    let overflow = b.eval("document.documentElement.scrollWidth <= window.innerWidth");
    assert_eq!(
        overflow,
        serde_json::json!(true),
        "the page is wider than a phone"
    );
    shot(&mut b, "issue-phone.png");
    b.viewport(1200, 900, false);

    // A discussion, promoted from its page.
    planner_plugin(&env);
    env.ok(&["discuss", "--", "planner"]);
    b.goto(&format!("{}/discussions", ui.url));
    b.eval("document.querySelector('ul.issues a').click()");
    b.wait_for(
        "the discussion",
        "location.pathname.startsWith('/discussions/')",
    );
    b.wait_loaded();
    assert!(b.text().contains("Ship the parser"));
    shot(&mut b, "discussion.png");
    b.eval("document.getElementById('promote-title').value = 'Ship the parser'");
    b.eval("document.querySelector('#promote-form button').click()");
    b.wait_for("the new issue", "location.pathname.startsWith('/issues/')");
    b.wait_loaded();
    assert!(b.text().contains("Ship the parser"));
    let promoted = b.path().trim_start_matches("/issues/").to_owned();
    let issue = env.issue(&promoted);
    assert_eq!(issue["title"], "Ship the parser");
    assert!(issue["discussion_id"].is_string());
    assert!(
        issue["description"]
            .as_str()
            .unwrap()
            .contains("1. Write it")
    );
    drop(b);
    drop(ui);
}

/// A run asked for on the issue page: the form queues a job, a `wujie worker` on the same
/// profile runs it with the issue as the agent's task, and the page shows the job done. On the
/// profile's own database (`wujie ui`), or on a team server on PostgreSQL.
fn a_job_queued_on_the_issue_page_runs_on_a_worker(postgres: bool) {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    // The page's server, the options that reach it, and a one-time login link to it.
    let (_server, _ui, global, url, login_url) = if postgres {
        let Some(cluster) = wujie_pgtest::require_cluster() else {
            return;
        };
        let server =
            wujie_testkit::Server::start(&env, &["--database", &cluster.create_database()]);
        let global = vec!["--server".to_owned(), server.url.clone()];
        let link = env.json(&["--server", &server.url, "ui", "--no-browser"]);
        let login = link["login_url"].as_str().expect("login_url").to_owned();
        let url = server.url.clone();
        (Some(server), None, global, url, login)
    } else {
        let ui = Ui::start(&env);
        let (url, login) = (ui.url.clone(), ui.login_url.clone());
        (None, Some(ui), Vec::new(), url, login)
    };
    let with = |args: &[&str]| -> Vec<String> {
        global
            .iter()
            .cloned()
            .chain(args.iter().map(|a| a.to_string()))
            .collect()
    };
    let body = format!(
        r#"task=$(printf '%s' "$WUJIE_TASK_PROMPT" | tr '\n' ' ')
echo "{{\"type\":\"user_input\",\"content\":\"$task\",\"source\":\"t\",\"source_key\":\"task\"}}"
echo '{}'"#,
        msg("final", "Done from the page job.", "reply")
    );
    let plugin = env.work.path().join("plugins").join("scribe");
    write_plugin(&plugin, "scribe", V1, &body);
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let create = with(&["issue", "create", "--title", "Queued from the page"]);
    let create: Vec<&str> = create.iter().map(String::as_str).collect();
    let key = env.json(&create)["key"].as_str().unwrap().to_owned();
    let mut b = Browser::start(&chromium);
    b.goto(&login_url);
    b.wait_for("the issue list", "location.pathname === '/'");
    b.goto(&format!("{url}/issues/{key}"));
    b.wait_for("the job form", "!!document.getElementById('assign-form')");
    b.eval("document.getElementById('assign-agent').value = 'scribe'");
    b.eval("document.querySelector('#assign-form button').click()");
    b.wait_for(
        "the queued job on the page",
        "!!document.querySelector('tr.job[data-status=\"queued\"]')",
    );

    let worker = env
        .cmd()
        .args(with(&["worker", "--exit-when-idle"]))
        .output()
        .expect("wujie worker runs");
    assert!(
        worker.status.success(),
        "{}",
        wujie_testkit::run_output::describe(&worker)
    );
    b.goto(&format!("{url}/issues/{key}"));
    b.wait_for(
        "the job done on the page",
        "!!document.querySelector('tr.job[data-status=\"succeeded\"]')",
    );
    if !postgres {
        shot(&mut b, "job.png");
    }
    let show = with(&["issue", "show", &key]);
    let show: Vec<&str> = show.iter().map(String::as_str).collect();
    let issue = env.json(&show);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded", "{issue:#}");
    let said = wujie_testkit::run_output::messages_of(run, "user_input");
    assert_eq!(said[0]["content"], format!("{key}: Queued from the page"));
    let run_link = format!("a[href=\"#run-{}\"]", run["id"].as_str().unwrap());
    assert_eq!(
        b.eval(&format!("!!document.querySelector('tr.job {run_link}')")),
        true
    );
}

#[test]
fn a_job_queued_on_the_issue_page_runs_on_a_worker_on_sqlite() {
    a_job_queued_on_the_issue_page_runs_on_a_worker(false);
}

#[test]
fn a_job_queued_on_the_issue_page_runs_on_a_worker_on_postgres() {
    a_job_queued_on_the_issue_page_runs_on_a_worker(true);
}
