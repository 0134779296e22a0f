//! `wujie issue comment | edit | close | reopen | list --status/--search/--limit | runs | watch`
//! through the real binary on a temp profile.

use std::io::Write;
use std::process::Stdio;

use wujie_testkit::*;

#[test]
fn comment_from_argument_and_stdin_keeps_the_user_as_author_and_refuses_an_empty_one() {
    let env = Env::new();
    let key = env.create_issue("talk");
    let c = env.json(&["issue", "comment", &key.to_lowercase(), "first words"]);
    assert_eq!(c["author_kind"], "user");
    assert_eq!(c["body"], "first words");

    let mut child = env
        .cmd()
        .args(["issue", "comment", &key, "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"piped in\n")
        .expect("write");
    assert!(child.wait_with_output().expect("wait").status.success());

    let out = env
        .cmd()
        .args(["issue", "comment", &key])
        .stdin(Stdio::null())
        .output()
        .expect("run");
    // No text and stdin not a terminal: stdin is read, and an empty comment is refused.
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("the comment is empty"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let issue = env.issue(&key);
    let bodies: Vec<_> = issue["comments"]
        .as_array()
        .expect("comments")
        .iter()
        .map(|c| (c["author_kind"].clone(), c["body"].clone()))
        .collect();
    assert_eq!(
        bodies,
        [
            (serde_json::json!("user"), serde_json::json!("first words")),
            (serde_json::json!("user"), serde_json::json!("piped in\n")),
        ]
    );
}

#[test]
fn edit_close_reopen_and_list_filters() {
    let env = Env::new();
    let a = env.create_issue("Parser crash");
    let b = env.create_issue("Slow startup");
    let edited = env.json(&[
        "issue",
        "edit",
        &a,
        "--title",
        "Parser crash on empty input",
    ]);
    assert_eq!(edited["title"], "Parser crash on empty input");
    let e = env.fails(&["issue", "edit", &a]);
    assert!(e.contains("nothing to change"), "{e}");

    let closed = env.json(&["issue", "close", &b]);
    assert_eq!(closed["status"], "done");
    let out = env.ok(&["issue", "close", &a, "--not-planned"]);
    assert!(out.contains("closed"), "{out}");
    let reopened = env.json(&["issue", "reopen", &a]);
    assert_eq!(reopened["status"], "open");

    let keys = |v: serde_json::Value| {
        v.as_array()
            .expect("list")
            .iter()
            .map(|i| i["key"].as_str().expect("key").to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        keys(env.json(&["issue", "list", "--status", "done"])),
        vec![b.clone()]
    );
    assert_eq!(
        keys(env.json(&["issue", "list", "--search", "EMPTY input"])),
        vec![a.clone()]
    );
    assert_eq!(
        keys(env.json(&["issue", "list", "--limit", "1"])),
        vec![b.clone()]
    );
    let e = env.fails(&["issue", "list", "--limit", "0"]);
    assert!(
        e.contains("'--limit <LIMIT>'") && e.contains("1..=1000"),
        "{e}"
    );
    let e = env.fails(&["issue", "list", "--status", "finished"]);
    assert!(e.contains("finished"), "{e}");
}

#[test]
fn runs_lists_an_issues_runs_and_watch_replays_a_finished_run_then_ends() {
    let env = Env::new();
    let key = env.create_issue("watched");
    assert!(
        env.json(&["issue", "runs", &key])
            .as_array()
            .expect("runs")
            .is_empty()
    );
    let body = format!(
        "echo '{}'\necho '{}'",
        msg("text", "working on it", "1"),
        msg("final", "all done", "2")
    );
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("echoer", V1, &body).to_str().unwrap(),
    ]);
    env.ok(&["run", &key, "--", "echoer"]);
    let runs = env.json(&["issue", "runs", &key]);
    let runs = runs.as_array().expect("runs");
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "succeeded");
    assert_eq!(runs[0]["message_count"], 2);

    let out = env.ok(&["issue", "watch", &key.to_lowercase()]);
    for expected in ["working on it", "all done", "succeeded"] {
        assert!(out.contains(expected), "{expected:?} missing from:\n{out}");
    }
    let lines = env.ok(&["--output", "json", "issue", "watch", &key]);
    let events: Vec<serde_json::Value> = lines
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect();
    assert_eq!(events.last().expect("events")["event"], "live");
    assert!(
        events
            .iter()
            .any(|e| e["event"] == "message" && e["data"]["message"]["content"] == "all done")
    );
}

/// `issue list` shows the newest 30, as gh does, and says on stderr when there are more;
/// `--limit`/`-L` and `--all` show more, and the short flags gh users type work.
#[test]
fn issue_list_shows_the_newest_thirty_and_says_when_there_are_more() {
    let env = Env::new();
    for n in 1..=32 {
        env.ok(&["issue", "create", "-t", &format!("issue {n}"), "-b", "body"]);
    }
    let rows = |out: &str| out.lines().skip(1).count();
    let listed = env.run(&["issue", "list"]);
    assert!(listed.status.success());
    let stdout = String::from_utf8_lossy(&listed.stdout);
    let stderr = String::from_utf8_lossy(&listed.stderr);
    assert_eq!(rows(&stdout), 30, "{stdout}");
    assert!(
        stdout.contains("issue 32") && !stdout.contains("issue 2\n"),
        "{stdout}"
    );
    assert_eq!(
        stderr.trim(),
        "Showing the newest 30; `--limit N` (up to 1000) or `--all` shows more."
    );
    assert_eq!(rows(&env.ok(&["issue", "list", "--all"])), 32);
    assert_eq!(rows(&env.ok(&["issue", "list", "-L", "3"])), 3);
    assert_eq!(
        env.json(&["issue", "list"]).as_array().unwrap().len(),
        30,
        "JSON is the same listing, without the words"
    );
    let all = env.run(&["issue", "list", "--all"]);
    assert!(
        all.stderr.is_empty(),
        "{:?}",
        String::from_utf8_lossy(&all.stderr)
    );

    let found = env.json(&["issue", "list", "-s", "open", "-S", "issue 7"]);
    assert_eq!(found.as_array().unwrap().len(), 1, "{found}");
    let detail = env.json(&["issue", "show", found[0]["key"].as_str().unwrap()]);
    assert_eq!(detail["description"], "body");
    let e = env.fails(&["issue", "list", "--all", "--limit", "5"]);
    assert!(e.contains("cannot be used with"), "{e}");
}

/// On a terminal, titles take the rest of its width, counted in columns (a CJK character takes
/// two), and end in `…` when cut; into a pipe they are printed whole.
#[test]
fn issue_list_fits_titles_to_the_terminal_and_prints_them_whole_elsewhere() {
    let env = Env::new();
    let title = format!(
        "{} {}",
        "修复缓存失效的问题".repeat(4),
        "and a long English tail".repeat(3)
    );
    env.ok(&["issue", "create", "-t", &title]);
    assert!(
        env.ok(&["issue", "list"]).contains(&title),
        "into a pipe the title is whole"
    );

    for cols in [60u16, 200] {
        let mut term = term::Term::spawn_on(
            &env,
            WUJIE,
            &["issue", "list"],
            term::Terminal::new(10, cols),
        );
        term.wait_exit();
        let screen = term.contents();
        let row = screen
            .lines()
            .find(|l| l.starts_with("WUJ-1"))
            .unwrap_or_else(|| panic!("{screen}"));
        let width: usize = row
            .chars()
            .map(|c| {
                if ('\u{4e00}'..='\u{9fff}').contains(&c) {
                    2
                } else {
                    1
                }
            })
            .sum();
        if cols == 60 {
            assert!(row.ends_with('…') && width <= 60, "{width}: {row}");
            assert!(row.contains("修复缓存"), "{row}");
        } else {
            assert!(row.ends_with("tail") && !row.contains('…'), "{row}");
        }
    }
}

/// On a terminal an issue's status has its colour (open green), unless NO_COLOR is set;
/// into a pipe there is no escape sequence at all.
#[test]
fn statuses_are_coloured_on_a_terminal_unless_no_color_is_set() {
    let env = Env::new();
    let key = env.create_issue("colours");
    assert!(!env.ok(&["issue", "list"]).contains('\x1b'));
    assert!(!env.ok(&["issue", "show", &key]).contains('\x1b'));
    let status_colour = |vars: &[(&str, &str)]| {
        let mut term = term::Term::spawn_with_vars(
            &env,
            WUJIE,
            &["issue", "list"],
            term::Terminal::STANDARD,
            vars,
        );
        term.wait_exit();
        let parser = term.screen.lock().unwrap();
        let screen = parser.screen();
        let row = screen
            .contents()
            .lines()
            .position(|l| l.starts_with("WUJ-1"))
            .expect("the issue's row") as u16;
        let cell = screen.cell(row, 11).expect("the status column");
        assert_eq!(cell.contents(), "o");
        format!("{:?}", cell.fgcolor())
    };
    // Empty counts as not set (no-color.org), whatever the test's own environment holds.
    assert_eq!(
        status_colour(&[("NO_COLOR", "")]),
        "Idx(2)",
        "open is green"
    );
    assert_eq!(status_colour(&[("NO_COLOR", "1")]), "Default");
}

/// `issue watch --next` on an issue with no run running waits for the next run, follows it,
/// and ends with it; its JSON is one object per line.
#[test]
fn watch_next_waits_for_the_next_run_and_ends_with_it() {
    use std::io::BufRead;

    let env = Env::new();
    let key = env.create_issue("watched ahead");
    let body = format!("echo '{}'", msg("final", "done at last", "1"));
    let plugin = env.plugin("echoer", V1, &body);
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let mut watch = env
        .cmd()
        .args(["--output", "json", "issue", "watch", &key, "--next"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(watch.stdout.take().unwrap()).lines();
    // The history is replayed (the issue's creation), then the feed is live.
    loop {
        let line = lines
            .next()
            .expect("watch ended before it was live")
            .unwrap();
        let event: serde_json::Value = serde_json::from_str(&line).expect("NDJSON");
        if event["event"] == "live" {
            break;
        }
    }
    env.ok(&["run", &key, "--", "echoer"]);
    let rest: Vec<serde_json::Value> = lines
        .map(|l| serde_json::from_str(&l.unwrap()).expect("NDJSON"))
        .collect();
    assert!(watch.wait().unwrap().success());
    assert!(
        rest.iter()
            .any(|e| e["event"] == "message" && e["data"]["message"]["content"] == "done at last"),
        "{rest:?}"
    );
    assert!(
        rest.iter()
            .any(|e| e["data"]["change"]["type"] == "run_finished"),
        "{rest:?}"
    );
}

/// On a terminal `issue show` goes through the pager (`$WUJIE_PAGER`, with `LESS=FRX` unless
/// the user set `LESS`); `--no-pager`, or a pipe, prints straight out.
#[test]
fn issue_show_on_a_terminal_goes_through_the_pager_unless_told_not_to() {
    let env = Env::new();
    let key = env.create_issue("paged title");
    let paged = env.work.path().join("paged.txt");
    let pager = "printf '%s\\n' \"$LESS\" > less.txt; cat > paged.txt";
    let show = |args: &[&str]| {
        let mut term = term::Term::spawn_with_vars(
            &env,
            WUJIE,
            args,
            term::Terminal::STANDARD,
            &[("WUJIE_PAGER", pager)],
        );
        let status = term.wait_exit();
        assert!(status.success(), "{}", term.contents());
        term.contents()
    };
    let screen = show(&["issue", "show", &key]);
    let text = std::fs::read_to_string(&paged).expect("the pager's input");
    assert!(text.contains("paged title"), "{text}");
    assert!(!screen.contains("paged title"), "{screen}");
    let less = std::fs::read_to_string(env.work.path().join("less.txt")).expect("LESS");
    assert_eq!(less.trim(), "FRX");

    std::fs::remove_file(&paged).expect("remove");
    let screen = show(&["issue", "show", &key, "--no-pager"]);
    assert!(screen.contains("paged title"), "{screen}");
    assert!(!paged.exists(), "the pager ran with --no-pager");
    // Into a pipe: no pager.
    assert!(env.ok(&["issue", "show", &key]).contains("paged title"));
    assert!(!paged.exists(), "the pager ran for a pipe");
}
