//! `wujie notify`: a line, the terminal's bell and the user's command for every question and
//! run end, only of what happens after it started, on through a restart of the server.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use wujie_testkit::term::{Term, Terminal};
use wujie_testkit::*;

/// How long a test waits for a notice before it fails (generous: the machine may be busy).
const PATIENCE: Duration = Duration::from_secs(60);

/// Installs `asker`: an adapter that asks "Which one, ARG?" and, once the file
/// `answer-ARG` exists, ends with a final reply. Returns the directory of those files.
fn install_asker(env: &Env) -> PathBuf {
    let answers = env.work.path().join("answers");
    std::fs::create_dir_all(&answers).unwrap();
    let body = format!(
        "printf '%s\\n' \"{{\\\"type\\\":\\\"question\\\",\\\"content\\\":\\\"Which one, $1?\\\",\\\"source\\\":\\\"t\\\",\\\"source_key\\\":\\\"q\\\"}}\"\n\
         while [ ! -e '{answers}'/answer-\"$1\" ]; do sleep 0.05; done\n\
         echo '{}'",
        msg("final", "Took SQLite.", "f"),
        answers = answers.display(),
    );
    let dir = env.plugin("asker", V1, &body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    answers
}

fn answer(answers: &std::path::Path, run: &str) {
    std::fs::write(answers.join(format!("answer-{run}")), "").unwrap();
}

/// The id of the issue's newest run.
fn newest_run(env: &Env, key: &str) -> String {
    let issue = env.issue(key);
    let runs = issue["runs"].as_array().expect("runs");
    runs.last().expect("a run")["id"]
        .as_str()
        .expect("run id")
        .to_owned()
}

#[test]
fn notify_tells_a_question_and_a_run_end_by_a_line_the_bell_and_the_command() {
    let env = Env::new();
    let key = env.create_issue("Pick a database");
    let other = env.create_issue("Not followed");
    let answers = install_asker(&env);
    let told = env.work.path().join("told");
    let hook = env.work.path().join("hook.sh");
    std::fs::write(
        &hook,
        format!(
            "printf '%s|%s|%s\\n' \"$WUJIE_NOTIFY_ISSUE\" \"$WUJIE_NOTIFY_TITLE\" \"$WUJIE_NOTIFY_BODY\" >> '{}'\n",
            told.display()
        ),
    )
    .unwrap();
    let command = format!("sh '{}'", hook.display());
    let mut term = Term::spawn_on(
        &env,
        WUJIE,
        &["notify", &key.to_lowercase(), "--command", &command],
        Terminal::new(24, 200),
    );
    term.wait_text(&format!("wujie: following {key}"));

    // A run of an issue not followed is not told; the followed issue's question is the first.
    answer(&answers, "other");
    env.ok(&["run", &other, "--", "asker", "other"]);
    let mut run = env
        .cmd()
        .args(["run", &key, "--", "asker", "db"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    let screen = term.wait_text("the agent asks:");
    let told_lines: Vec<&str> = screen.lines().filter(|l| l.starts_with("WUJ-")).collect();
    assert_eq!(
        told_lines,
        [format!(
            "{key} Pick a database: the agent asks: Which one, db?; answer it in its terminal"
        )],
        "{screen}"
    );
    assert_eq!(term.bells(), 1, "the bell rang for the question");

    answer(&answers, "db");
    assert!(run.wait().unwrap().success());
    let run_id = newest_run(&env, &key);
    let ended = format!("{key} Pick a database: run {run_id} (asker) succeeded");
    term.wait_text(&ended);
    assert_eq!(term.bells(), 2, "the bell rang for the run's end");

    // The command got each notice in its environment.
    wait_until(60, "the notify command to run twice", || {
        std::fs::read_to_string(&told).is_ok_and(|t| t.lines().count() == 2)
    });
    let mut hooked: Vec<String> = std::fs::read_to_string(&told)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    hooked.sort();
    assert_eq!(
        hooked,
        [
            format!("{key}|{key}: Pick a database|run {run_id} (asker) succeeded"),
            format!(
                "{key}|{key}: Pick a database|the agent asks: Which one, db?; answer it in its terminal"
            ),
        ]
    );

    // Ctrl+C ends it cleanly.
    term.send(b"\x03");
    assert!(term.wait_exit().success());

    // `issue watch` shows the same two, standing out from the rest of the feed.
    let watched = env.ok(&["issue", "watch", &key]);
    let marked: Vec<&str> = watched.lines().filter(|l| l.starts_with("==> ")).collect();
    assert_eq!(
        marked,
        [
            "==> the agent asks: Which one, db?; answer it in its terminal".to_owned(),
            format!("==> {key}: run {run_id} (asker) succeeded (exit 0)"),
        ],
        "{watched}"
    );
}

/// `wujie notify` in the background, its stdout lines (NDJSON) and stderr lines as they come.
struct Notifying {
    child: Child,
    out: mpsc::Receiver<String>,
    err: mpsc::Receiver<String>,
    /// The stderr lines read so far.
    said: std::cell::RefCell<Vec<String>>,
}

impl Notifying {
    /// With a notify command that always fails.
    fn start(env: &Env, server: &str) -> Notifying {
        let mut child = env
            .cmd()
            .args([
                "--server",
                server,
                "--output",
                "json",
                "notify",
                "--command",
                "exit 3",
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("wujie notify starts");
        let lines = |pipe: Box<dyn std::io::Read + Send>| {
            let (to, from) = mpsc::channel();
            std::thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    let _ = to.send(line);
                }
            });
            from
        };
        let out = lines(Box::new(child.stdout.take().unwrap()));
        let err = lines(Box::new(child.stderr.take().unwrap()));
        Notifying {
            child,
            out,
            err,
            said: Default::default(),
        }
    }

    fn stderr_until(&self, text: &str) {
        loop {
            let line = self
                .err
                .recv_timeout(PATIENCE)
                .unwrap_or_else(|_| panic!("wujie notify never said {text:?}"));
            let found = line.contains(text);
            self.said.borrow_mut().push(line);
            if found {
                return;
            }
        }
    }

    fn next(&self) -> serde_json::Value {
        let line = self
            .out
            .recv_timeout(PATIENCE)
            .expect("wujie notify told nothing more");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }
}

#[test]
fn notify_tells_only_what_happens_after_it_started_and_goes_on_after_a_server_restart() {
    let env = Env::new();
    let key = env.create_issue("Before and after");
    let answers = install_asker(&env);
    // History: a question and a run's end before notify starts, never told.
    answer(&answers, "old");
    env.ok(&["run", &key, "--", "asker", "old"]);

    let mut server = Server::start(&env, &[]);
    let address = server.url.trim_start_matches("http://").to_owned();
    let notify = Notifying::start(&env, &server.url);
    notify.stderr_until("wujie: following the workspace");

    let mut run = env
        .cmd()
        .args(["--server", &server.url, "run", &key, "--", "asker", "new"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    let question = notify.next();
    assert_eq!(question["event"], "question", "{question}");
    assert_eq!(question["question"], "Which one, new?", "{question}");
    assert_eq!(question["issue"], key.as_str());
    assert_eq!(question["title"], "Before and after");
    answer(&answers, "new");
    assert!(run.wait().unwrap().success());
    let new_run = newest_run(&env, &key);
    assert_eq!(question["run_id"], new_run.as_str());
    let ended = notify.next();
    assert_eq!(ended["event"], "run_ended", "{ended}");
    assert_eq!(ended["run_id"], new_run.as_str());
    assert_eq!(ended["status"], "succeeded");
    assert_eq!(
        ended["text"],
        format!("run {new_run} (asker) succeeded").as_str()
    );

    // The server restarts: notify reconnects and resumes, repeating nothing.
    server.kill();
    notify.stderr_until("lost the connection to the server");
    let server = Server::start_args(&env, &["--listen", &address]);
    answer(&answers, "again");
    env.ok(&["--server", &server.url, "run", &key, "--", "asker", "again"]);
    let again = newest_run(&env, &key);
    let question = notify.next();
    assert_eq!(question["event"], "question", "{question}");
    assert_eq!(question["question"], "Which one, again?");
    assert_eq!(question["run_id"], again.as_str());
    let ended = notify.next();
    assert_eq!(ended["event"], "run_ended", "{ended}");
    assert_eq!(ended["run_id"], again.as_str());

    // SIGINT (Ctrl+C) ends it cleanly, having told nothing more.
    let Notifying {
        mut child,
        out,
        err,
        said,
    } = notify;
    signal_pid(child.id() as i32, nix::sys::signal::Signal::SIGINT);
    assert!(child.wait().unwrap().success());
    let rest: Vec<String> = out.iter().collect();
    assert!(rest.is_empty(), "told again: {rest:?}");
    // The notify command failed at each of the four notices; that was said once.
    let mut said = said.into_inner();
    said.extend(err.iter());
    let said: Vec<&String> = said.iter().filter(|l| l.contains("exit 3")).collect();
    assert_eq!(
        said,
        [
            "wujie: the notify command `exit 3` failed (exit status: 3); notices go on here \
          without it (said once)"
        ],
    );
}
