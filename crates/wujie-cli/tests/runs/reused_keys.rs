//! An adapter that prints the same key twice: the same event again is stored once; a different
//! event under a used key is refused and reported, never dropped as a duplicate. Every event read
//! is counted once: synced, refused or waiting.

use wujie_testkit::run_output::messages_of;
use wujie_testkit::*;

#[test]
fn a_key_reused_for_a_different_event_is_refused_and_reported() {
    let env = Env::new();
    let body = [
        msg("text", "one", "k1"),
        msg("text", "one", "k1"),
        msg("text", "two", "k2"),
        msg("text", "not two", "k2"),
        msg("final", "done", "k3"),
    ]
    .map(|line| format!("echo '{line}'"))
    .join("\n");
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("repeater", V1, &body).to_str().unwrap(),
    ]);
    let key = env.create_issue("reused keys");
    let out = env.run(&["run", &key, "--", "repeater"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");

    let run = &env.issue(&key)["runs"][0];
    let texts: Vec<&str> = messages_of(run, "text")
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert_eq!(texts, ["one", "two"], "the first event of each key is kept");
    assert_eq!(run["status"], "failed", "{run}");

    let summary = stderr
        .lines()
        .find(|l| l.contains(&format!("on {key} failed")))
        .unwrap_or_else(|| panic!("no summary line: {stderr}"));
    assert!(summary.contains("4 events synced"), "{summary}");
    assert!(stderr.contains("1 event refused by the server"), "{stderr}");
    assert!(
        stderr.contains("k2") && stderr.contains("already used"),
        "the refusal names the key: {stderr}"
    );
}
