//! How `wujie` prints: a closed stdout ends a command quietly, error causes appear once,
//! `--output json` holds on every command that prints, tables have headers, keys take any
//! case, stored text cannot drive the terminal, and `WUJIE_LOG` turns on diagnostics.

use std::io::{BufRead, Read};
use std::process::Stdio;

use wujie_testkit::*;

/// A title that would set the terminal's title and clear the screen if printed raw.
const HOSTILE: &str = "x\x1b]0;pwned\x07\x1b[2J\u{9b}31m";

/// Runs `wujie args` with a stdout whose reader is already gone, as `| head -0` leaves it.
fn run_with_closed_stdout(env: &Env, args: &[&str]) -> std::process::Output {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let child = env
        .cmd()
        .args(args)
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .expect("wujie starts");
    child.wait_with_output().unwrap()
}

#[test]
fn a_closed_stdout_ends_the_command_quietly_with_status_0() {
    let env = Env::new();
    let key = env.create_issue("closed stdout");
    for args in [
        &["issue", "list"][..],
        &["issue", "show", &key],
        &["--output", "json", "issue", "list"],
        &["local-run", "provider", "list"],
        &["local-run", "status"],
    ] {
        let out = run_with_closed_stdout(&env, args);
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "wujie {args:?}: {:?}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn another_stdout_write_error_is_an_error_not_a_panic() {
    let env = Env::new();
    env.create_issue("full disk");
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .unwrap();
    let out = env
        .cmd()
        .args(["issue", "list"])
        .stdout(full)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot write to stdout") && err.contains("No space left on device"),
        "{err}"
    );
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn each_cause_of_an_error_is_printed_once() {
    let env = Env::new();
    let dir = env.work.path().join("broken");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("provider.json"), r#"{"schema_version": 1}"#).unwrap();
    let err = env.fails(&["local-run", "provider", "install", dir.to_str().unwrap()]);
    assert_eq!(err.matches("missing field").count(), 1, "{err}");

    let missing = env.work.path().join("nowhere");
    let err = env.fails(&[
        "local-run",
        "provider",
        "install",
        missing.to_str().unwrap(),
    ]);
    assert_eq!(err.matches("No such file or directory").count(), 1, "{err}");

    // The profile's data dir (where its database is) cannot be created: a file is in the way.
    let blocked = Env::new();
    std::fs::write(blocked.home.path().join("data"), "").unwrap();
    let err = blocked.fails(&["issue", "list"]);
    assert!(
        err.contains("File exists") || err.contains("Not a directory"),
        "{err}"
    );
    for cause in ["File exists", "Not a directory"] {
        assert!(err.matches(cause).count() <= 1, "{err}");
    }

    // A library error that both shows its cause and returns it (sqlx's database errors).
    let corrupt = Env::new();
    std::fs::create_dir_all(corrupt.home.path().join("state")).unwrap();
    std::fs::write(
        corrupt.home.path().join("state/outbox.db"),
        "this is not SQLite, but long enough to be read as a database header ....",
    )
    .unwrap();
    let err = corrupt.fails(&["local-run", "status"]);
    assert_eq!(err.matches("file is not a database").count(), 1, "{err}");
}

#[test]
fn provider_commands_print_json_results() {
    let env = Env::new();
    env.install_example("fake-provider");
    let disabled = env.json(&["local-run", "provider", "disable", "Fake-Provider"]);
    assert_eq!(disabled["name"], "fake-provider");
    assert_eq!(disabled["enabled"], false);
    let enabled = env.json(&["local-run", "provider", "enable", "fake-provider"]);
    assert_eq!(enabled["enabled"], true);
    let removed = env.json(&["local-run", "provider", "remove", "fake-provider"]);
    assert_eq!(removed["name"], "fake-provider");
    let copy = env
        .home
        .path()
        .join("state/localrun-providers/fake-provider");
    assert_eq!(removed["deleted_copy"], copy.to_str().unwrap());
    assert_eq!(
        removed["config_entry"],
        copy.join("provider.json").to_str().unwrap()
    );
}

#[test]
fn server_prints_its_address_as_json() {
    let env = Env::new();
    let mut child = env
        .cmd()
        .args(["--output", "json", "server", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    let doc: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
    assert!(
        doc["url"]
            .as_str()
            .unwrap()
            .starts_with("http://127.0.0.1:"),
        "{doc}"
    );
    assert!(
        doc["database"].as_str().unwrap().ends_with("wujie.db"),
        "{doc}"
    );
}

#[test]
fn issue_keys_take_any_case() {
    let env = Env::new();
    let key = env.create_issue("case");
    let lower = key.to_lowercase();
    assert_ne!(lower, key);
    assert_eq!(env.issue(&lower)["key"], key.as_str());
    env.install_example("fake-provider");
    env.ok(&["run", &lower, "--", "fake-provider"]);
    let issue = env.issue(&key);
    assert_eq!(issue["runs"].as_array().unwrap().len(), 1, "{issue}");
}

#[test]
fn text_tables_have_column_headers() {
    let env = Env::new();
    env.create_issue("headers");
    let issues = env.ok(&["issue", "list"]);
    let header: Vec<&str> = issues.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["key", "status", "title"], "{issues}");

    let providers = env.ok(&["local-run", "provider", "list"]);
    assert!(
        providers.lines().next().unwrap().starts_with("name"),
        "{providers}"
    );

    let plugin = env.plugin(
        "planner",
        V2,
        &format!(
            "printf '%s\\n' '{}'",
            msg("user_input", "plan the work", "u1")
        ),
    );
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    env.ok(&["discuss", "--confirm", "reject", "--", "planner"]);
    let discussions = env.ok(&["discussion", "list"]);
    let mut lines = discussions.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(
        header,
        ["id", "status", "provider", "issue", "first", "entry"],
        "{discussions}"
    );
    assert!(lines.next().unwrap().contains("planner"), "{discussions}");
}

/// No byte of `out` may start an escape sequence or be another control than a line break.
fn assert_terminal_safe(what: &str, out: &str) {
    assert!(
        !out.chars()
            .any(|c| c.is_control() && c != '\n' && c != '\t'),
        "{what} printed control characters: {out:?}"
    );
}

#[test]
fn stored_text_is_escaped_in_text_output_and_exact_in_json() {
    let env = Env::new();
    let created = env.json(&[
        "issue",
        "create",
        "--title",
        HOSTILE,
        "--description",
        "line one\n\x1b[31mred\x1b[0m\r\nline two",
    ]);
    let key = created["key"].as_str().unwrap().to_owned();
    assert_eq!(created["title"], HOSTILE, "JSON keeps the exact title");

    let body = format!("done \x1b]52;c;{}\x07", "cGF5bG9hZA==");
    let line = serde_json::json!({
        "type": "text", "content": body, "source": "t", "source_key": "a1",
        "usage": {"provider": "p\x1b[2J", "model": "m", "input_tokens": 1, "output_tokens": 1},
    });
    let plugin = env.plugin("loud", V1, &format!("printf '%s\\n' '{line}'"));
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    env.ok(&["run", &key, "--", "loud"]);

    let shown = env.ok(&["issue", "show", &key]);
    assert_terminal_safe("issue show", &shown);
    assert!(
        shown.contains(r"x\x1b]0;pwned\x07\x1b[2J\u{9b}31m"),
        "{shown}"
    );
    assert!(
        shown.contains("line one\n\\x1b[31mred\\x1b[0m\nline two"),
        "the description keeps its lines: {shown}"
    );
    assert!(shown.contains(r"done \x1b]52;c;"), "{shown}");
    assert!(shown.contains(r"p\x1b[2J"), "{shown}");

    let list = env.ok(&["issue", "list"]);
    assert_terminal_safe("issue list", &list);

    let detail = env.issue(&key);
    assert_eq!(detail["title"], HOSTILE);
    let messages = detail["runs"][0]["messages"].as_array().unwrap();
    assert!(
        messages.iter().any(|m| m["content"] == body.as_str()),
        "{detail}"
    );

    // Errors quote what the user typed; that is printed safely too.
    let err = env.fails(&["issue", "show", HOSTILE]);
    assert_terminal_safe("an error", &err);
}

#[test]
fn wujie_log_turns_on_request_logging_of_the_server() {
    let env = Env::new();
    let mut child = env
        .cmd()
        .env("WUJIE_LOG", "info")
        .args(["server", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap();
    let health = reqwest::blocking::get(format!("{url}/api/v1/health")).unwrap();
    assert!(health.status().is_success());
    let missing = reqwest::blocking::get(format!("{url}/api/v1/nothing-here?secret=1")).unwrap();
    assert_eq!(missing.status().as_u16(), 404);
    assert!(signal_pid(
        child.id() as i32,
        nix::sys::signal::Signal::SIGTERM
    ));
    let mut log = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut log)
        .unwrap();
    child.wait().unwrap();

    let ok = log
        .lines()
        .find(|l| l.contains("/api/v1/health"))
        .unwrap_or_else(|| panic!("no line for the health request: {log}"));
    assert!(
        ok.contains("GET") && ok.contains("status=200") && ok.contains("ms="),
        "{ok}"
    );
    let refused = log
        .lines()
        .find(|l| l.contains("/api/v1/nothing-here"))
        .unwrap_or_else(|| panic!("no line for the refused request: {log}"));
    assert!(
        refused.contains("status=404") && refused.contains("no such API route"),
        "{refused}"
    );
    assert!(
        !log.contains("secret"),
        "the query string is not logged: {log}"
    );
}

#[test]
fn an_invalid_wujie_log_is_named_and_the_command_still_runs() {
    let env = Env::new();
    let out = env
        .cmd()
        .env("WUJIE_LOG", "wujie=notalevel")
        .args(["issue", "list"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("WUJIE_LOG") && err.contains("notalevel"),
        "{err}"
    );
}
