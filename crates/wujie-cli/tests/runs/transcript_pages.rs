//! `wujie issue show` prints a whole transcript however long, read page by page: the issue's
//! answer holds only each run's latest messages once they are more than it takes.

use wujie_testkit::*;

const MIB: usize = 1 << 20;

/// An adapter printing twelve tool results of 1 MiB, `k0`…`k11`, each of its own letter.
fn twelve_mib_adapter() -> String {
    let mut body = String::new();
    for (i, letter) in ('a'..='l').enumerate() {
        body.push_str(&format!(
            "big=$(head -c {MIB} /dev/zero | tr '\\0' {letter})\n\
             printf '{{\"type\":\"tool_result\",\"tool\":\"sh\",\"output\":\"%s\",\
             \"source\":\"t\",\"source_key\":\"k{i}\"}}\\n' \"$big\"\n"
        ));
    }
    body
}

/// An issue whose run printed [`twelve_mib_adapter`]'s messages; its key.
fn issue_with_a_twelve_mib_run(env: &Env) -> String {
    env.ok(&[
        "local-run",
        "provider",
        "install",
        env.plugin("big", V1, &twelve_mib_adapter())
            .to_str()
            .unwrap(),
    ]);
    let key = env.create_issue("long transcript");
    env.ok(&["run", &key, "--", "big"]);
    key
}

#[test]
fn issue_show_gives_every_message_of_a_long_transcript() {
    let env = Env::new();
    let key = issue_with_a_twelve_mib_run(&env);

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(
        run["messages_complete"], true,
        "the document holds them all"
    );
    assert!(run.get("messages_before").is_none());
    let messages = run["messages"].as_array().expect("messages");
    let keys: Vec<&str> = messages
        .iter()
        .map(|m| m["source_key"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..12).map(|i| format!("k{i}")).collect();
    assert_eq!(keys, expected, "every message, in order, once");
    for (m, letter) in messages.iter().zip('a'..='l') {
        let output = m["output"].as_str().unwrap();
        assert_eq!(output.len(), MIB);
        assert!(
            output.chars().all(|c| c == letter),
            "{} kept whole",
            m["source_key"]
        );
    }
    // The issue's cost and the run's other fields are there as before.
    assert!(
        issue.get("cost").is_some() && run.get("cost").is_some(),
        "{}",
        issue["cost"]
    );

    // The text lists every tool result too.
    let text = env.ok(&["issue", "show", &key]);
    assert_eq!(
        text.matches("tool_result").count(),
        12,
        "{}",
        &text[..text.len().min(2000)]
    );
}

#[test]
fn issue_show_tail_gives_the_last_messages_of_each_run_and_says_what_it_left_out() {
    let env = Env::new();
    let key = issue_with_a_twelve_mib_run(&env);
    // The answer holds one or two of the twelve: the rest is read page by page, keeping three.
    let text = env.ok(&["issue", "show", &key, "--tail", "3"]);
    assert!(
        text.contains("… 9 earlier messages not shown (--tail 3)"),
        "{}",
        &text[..text.len().min(2000)]
    );
    let results: Vec<&str> = text.lines().filter(|l| l.contains("tool_result")).collect();
    assert_eq!(results.len(), 3, "{}", &text[..text.len().min(2000)]);
    for (line, letter) in results.iter().zip(['j', 'k', 'l']) {
        assert!(line.contains(&letter.to_string().repeat(20)), "{line}");
    }
    // What the answer holds is enough for one: how many came before is not read.
    let text = env.ok(&["issue", "show", &key, "--tail", "1"]);
    assert!(
        text.contains("… earlier messages not shown (--tail 1)"),
        "{}",
        &text[..text.len().min(2000)]
    );
    assert_eq!(text.matches("tool_result").count(), 1);
    // JSON is the whole document.
    let err = env.fails(&["issue", "show", &key, "--tail", "3", "--output", "json"]);
    assert!(
        err.contains("--tail shortens the text output") && err.contains("jq"),
        "{err}"
    );
}
