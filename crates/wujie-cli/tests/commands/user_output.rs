//! What a person reads, pinned as insta snapshots (paths, ids, times, ports and tokens
//! filtered): `issue list` and `issue show` as text and JSON, the summaries `wujie run` and
//! `wujie discuss` print on stderr, and every error a user can trigger from a fresh profile.

use std::process::Output;

use wujie_testkit::*;

/// A command as the user typed it, its exit status and what it printed, in one block.
fn transcript(args: &[&str], out: &Output) -> String {
    let code = out
        .status
        .code()
        .map_or_else(|| "a signal".to_owned(), |c| c.to_string());
    let mut text = format!("$ wujie {}\n[exit {code}]\n", args.join(" "));
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        if !bytes.is_empty() {
            text.push_str(&format!("--- {name}\n{}", String::from_utf8_lossy(bytes)));
            if !text.ends_with('\n') {
                text.push('\n');
            }
        }
    }
    text
}

#[test]
fn issue_list_and_show_as_text_and_json() {
    let env = Env::new();
    env.ok(&["demo"]);
    env.ok(&[
        "issue",
        "create",
        "--title",
        "存储选型：SQLite 还是 PostgreSQL？",
    ]);
    env.ok(&["issue", "comment", "WUJ-2", "Let us measure first."]);
    let commands: [&[&str]; 4] = [
        &["issue", "list"],
        &["--output", "json", "issue", "list"],
        &["issue", "show", "WUJ-1"],
        &["--output", "json", "issue", "show", "WUJ-2"],
    ];
    let pages: Vec<String> = commands
        .iter()
        .map(|args| {
            let out = env.run(args);
            assert!(out.status.success(), "{}", transcript(args, &out));
            transcript(args, &out)
        })
        .collect();
    let _filters = env.snapshot_filters().bind_to_scope();
    insta::assert_snapshot!("issue_list_and_show", pages.join("\n"));
}

#[test]
fn run_and_discuss_summaries_on_stderr() {
    let env = Env::new();
    env.install_example("fake-provider");
    env.install_example("fake-provider-v2");
    let key = env.create_issue("Summaries");
    let commands: [&[&str]; 3] = [
        &["run", &key, "--", "fake-provider", "--model", "demo"],
        &[
            "discuss",
            "--confirm",
            "accept",
            "--",
            "fake-provider-v2",
            "--script",
        ],
        &[
            "discuss",
            "--confirm",
            "reject",
            "--",
            "fake-provider-v2",
            "--script",
        ],
    ];
    let pages: Vec<String> = commands
        .iter()
        .map(|args| {
            let out = env.run(args);
            assert!(out.status.success(), "{}", transcript(args, &out));
            // What the example adapter logs about the frames it received is its own, not ours.
            let stderr: String = String::from_utf8_lossy(&out.stderr)
                .lines()
                .filter(|line| !line.starts_with("fake-provider-v2:"))
                .map(|line| format!("{line}\n"))
                .collect();
            let summary = Output {
                stdout: Vec::new(),
                stderr: stderr.into_bytes(),
                status: out.status,
            };
            transcript(args, &summary)
        })
        .collect();
    let _filters = env.snapshot_filters().bind_to_scope();
    insta::assert_snapshot!("run_and_discuss_summaries", pages.join("\n"));
}

#[test]
fn errors_a_user_can_trigger() {
    let env = Env::new();
    env.install_example("fake-provider");
    let key = env.create_issue("Errors");
    let missing = env.work.path().join("no-such-plugin");
    let missing = missing.to_str().unwrap();
    let missing_dir_db = env.work.path().join("no-such-dir").join("wujie.db");
    let missing_dir_db = missing_dir_db.to_str().unwrap();
    let commands: Vec<Vec<&str>> = vec![
        vec!["issue", "show", "WUJ-999"],
        vec!["issue", "list", "--limit", "0"],
        vec!["issue", "list", "--status", "finished"],
        vec!["issue", "create"],
        vec!["issue", "view", &key],
        vec!["--output", "yaml", "issue", "list"],
        vec!["run", "WUJ-999", "--", "fake-provider"],
        vec!["run", &key, "--", "nope"],
        vec!["run", &key, "--", "claud"],
        vec!["run", &key, "fake-provider"],
        vec!["issue", "list", "--json"],
        vec!["issue", "show", "wuj-3"],
        vec!["run", &key],
        vec!["discuss", "--", "fake-provider"],
        vec!["discussion", "show", "no-such-discussion"],
        vec!["discussion", "promote", "no-such-discussion"],
        vec!["adapter", "nope"],
        vec!["local-run", "provider", "install", missing],
        vec!["local-run", "provider", "remove", "pi"],
        vec!["local-run", "provider", "disable", "nope"],
        vec!["token", "create", "--name", "x", "--expires", "soon"],
        vec!["token", "revoke", "nobody"],
        vec!["server", "--database", "mysql://h/w"],
        vec!["server", "--database", missing_dir_db],
        vec!["--profile", "tema", "issue", "list"],
        vec!["--server", "http://127.0.0.1:9", "issue", "list"],
        vec![
            "login",
            "--server",
            "http://127.0.0.1:9",
            "--token",
            "wjt_wrong",
        ],
        vec![
            "branch",
            "prompt",
            "--project",
            "p",
            "--branch",
            "b",
            "hello",
        ],
    ];
    let mut pages: Vec<String> = commands
        .iter()
        .map(|args| {
            let out = env.run(args);
            assert!(!out.status.success(), "{}", transcript(args, &out));
            assert!(
                !String::from_utf8_lossy(&out.stderr).contains("panicked"),
                "{}",
                transcript(args, &out)
            );
            transcript(args, &out)
        })
        .collect();
    // With a token: a server that does not answer, and one that does not accept the token.
    let server = Server::start(&env, &[]);
    for args in [
        vec!["--server", "http://127.0.0.1:9", "issue", "list"],
        vec!["--server", &server.url, "issue", "list"],
        vec!["login", "--server", &server.url, "--token", "wjt_wrong"],
    ] {
        let out = env
            .cmd()
            .env("WUJIE_TOKEN", "wjt_wrong")
            .args(&args)
            .output()
            .expect("wujie runs");
        assert!(!out.status.success(), "{}", transcript(&args, &out));
        pages.push(transcript(&args, &out));
    }
    // A price entry of the wrong shape, next to a setting nothing reads.
    std::fs::write(
        env.config_path(),
        serde_json::json!({
            "localrun_providers": {},
            "prices": {"openai/gpt-x": {"input": "cheap", "output": 1}},
            "colour": true,
        })
        .to_string(),
    )
    .unwrap();
    let args = ["cost"];
    let out = env.run(&args);
    assert!(!out.status.success(), "{}", transcript(&args, &out));
    pages.push(transcript(&args, &out));
    std::fs::write(env.config_path(), "{}").unwrap();
    // Not errors, but what a user who asked for the impossible is told, and how a profile is
    // made on purpose.
    env.ok(&["issue", "close", &key]);
    for args in [
        vec!["issue", "close", &key],
        vec!["issue", "list", "--search", "no such words"],
        vec!["profile", "create", "team"],
        vec!["--profile", "team", "profile", "list"],
    ] {
        let out = env.run(&args);
        assert!(out.status.success(), "{}", transcript(&args, &out));
        pages.push(transcript(&args, &out));
    }
    let _filters = env.snapshot_filters().bind_to_scope();
    insta::assert_snapshot!("errors", pages.join("\n"));
}

/// The database is data: one an earlier version kept in the state directory is moved to the
/// data directory by the next command that finds no other process using it, with everything
/// in it (its write-ahead log too), and that is said once.
#[test]
fn a_database_kept_in_state_by_an_earlier_version_moves_to_data_with_its_issues() {
    use nix::fcntl::{FcntlArg, fcntl};
    use nix::libc;

    let env = Env::new();
    let key = env.create_issue("kept across the move");
    let (data, state) = (env.home.path().join("data"), env.home.path().join("state"));
    // Where an earlier version kept it.
    std::fs::create_dir_all(&state).unwrap();
    for file in ["wujie.db", "wujie.db-wal", "wujie.db-shm"] {
        if data.join(file).exists() {
            std::fs::rename(data.join(file), state.join(file)).unwrap();
        }
    }

    // While another process reads it (a read lock on SQLite's lock bytes, as a connection
    // holds), it is used where it is.
    let reader = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(state.join("wujie.db"))
        .unwrap();
    let lock = |kind: libc::c_int| libc::flock {
        l_type: kind as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: 0x4000_0002,
        l_len: 510,
        l_pid: 0,
    };
    fcntl(&reader, FcntlArg::F_SETLK(&lock(libc::F_RDLCK))).unwrap();
    let out = env.run(&["issue", "list"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&key));
    assert!(!String::from_utf8_lossy(&out.stderr).contains("moved"));
    assert!(state.join("wujie.db").exists() && !data.join("wujie.db").exists());
    fcntl(&reader, FcntlArg::F_SETLK(&lock(libc::F_UNLCK))).unwrap();
    drop(reader);

    let out = env.run(&["issue", "list"]);
    assert!(out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "moved the database from {} to {}",
            state.join("wujie.db").display(),
            data.join("wujie.db").display()
        )),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains(&key));
    assert!(data.join("wujie.db").exists() && !state.join("wujie.db").exists());
    let again = env.run(&["issue", "list"]);
    assert!(!String::from_utf8_lossy(&again.stderr).contains("moved"));
}

/// SQLite's log and index beside a database, which SQLite itself keeps or removes.
fn sqlite_own(path: &std::path::Path) -> bool {
    let name = path.to_string_lossy();
    name.ends_with(".db-wal") || name.ends_with(".db-shm")
}

/// Commands leave no empty directories or empty files (lock files and the like) behind in the
/// profile: what is there after them holds something.
#[test]
fn commands_leave_no_empty_files_or_directories_in_the_profile() {
    let env = Env::new();
    let key = env.create_issue("nothing empty");
    let plugin = env.plugin(
        "echoer",
        V1,
        &format!("echo '{}'", msg("final", "done", "1")),
    );
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    env.ok(&["run", &key, "--", "echoer"]);
    env.ok(&["issue", "list"]);
    env.ok(&["issue", "show", &key]);
    env.ok(&["issue", "comment", &key, "a comment"]);
    env.ok(&["local-run", "status"]);
    // A server that ends as Ctrl+C ends it takes its record of itself along.
    let mut server = Server::start(&env, &[]);
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    server.child.wait().unwrap();
    let mut empty = Vec::new();
    let mut dirs = vec![env.home.path().to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let entries: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        if entries.is_empty() {
            empty.push(dir.clone());
        }
        for entry in entries {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                dirs.push(entry.path());
            } else if meta.len() == 0 && !sqlite_own(&entry.path()) {
                empty.push(entry.path());
            }
        }
    }
    assert!(empty.is_empty(), "left empty: {empty:?}");
}
