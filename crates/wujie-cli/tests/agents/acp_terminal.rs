//! The built-in `acp` provider on a terminal (a real PTY read into a vt100 screen), against the
//! stand-in ACP agent `tests/fixtures/fake_acp_agent.py`: a conversation in the line editor
//! (history, a multi-line paste as one prompt, Ctrl+C cancelling a turn with `session/cancel`,
//! Ctrl+D ending), and permission requests asked on the terminal.

use std::path::{Path, PathBuf};

use serde_json::Value;
use wujie_testkit::run_output::messages_of;
use wujie_testkit::term::Term;
use wujie_testkit::{Env, WUJIE};

fn fake_agent() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fake_acp_agent.py")
}

/// `wujie run KEY -- acp OPTIONS… -- env … python3 fake_acp_agent.py` on a terminal of its own;
/// returns the terminal and the file the agent logs what it received to.
fn run_on_terminal(env: &Env, key: &str, mode: &str, options: &[&str]) -> (Term, PathBuf) {
    let log = env.work.path().join(format!("acp-terminal-{mode}.log"));
    let mode_var = format!("FAKE_ACP_MODE={mode}");
    let log_var = format!("FAKE_ACP_LOG={}", log.display());
    let agent = fake_agent();
    let mut args = vec!["run", key, "--", "acp"];
    args.extend(options);
    args.extend(["--", "env", &mode_var, &log_var, "python3"]);
    args.push(agent.to_str().expect("a UTF-8 path"));
    (Term::spawn(env, WUJIE, &args), log)
}

/// What the user typed of each prompt: its last block (the first prompt also carries the
/// issue, before it).
fn prompts(received: &[Value]) -> Vec<String> {
    received
        .iter()
        .filter(|m| m["method"] == "session/prompt")
        .map(|m| {
            let blocks = m["params"]["prompt"].as_array().expect("blocks");
            blocks.last().expect("a block")["text"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect()
}

/// The answers the client gave to permission requests, in order.
fn permission_answers(received: &[Value]) -> Vec<Value> {
    received
        .iter()
        .filter(|m| m.get("result").is_some_and(|r| r.get("outcome").is_some()))
        .map(|m| m["result"]["outcome"].clone())
        .collect()
}

fn contents_of(run: &Value, kind: &str) -> Vec<String> {
    messages_of(run, kind)
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_conversation_in_the_line_editor_streams_replies_and_cancels_with_ctrl_c() {
    let env = Env::new();
    let key = env.create_issue("talk to acp");
    let (mut term, log) = run_on_terminal(&env, &key, "chat", &[]);
    term.wait_text("Ctrl+D ends");

    term.say("hello there", "you said: hello there");

    // A multi-line paste is one prompt, sent by Enter.
    term.send(b"\x1b[200~line one\nline two\x1b[201~");
    term.wait_text("line two");
    term.send(b"\r");
    term.wait_text("you said 2 lines: line one | line two");

    // Up twice brings the first prompt back.
    term.send(b"\x1b[A\x1b[A");
    term.wait_for("the first prompt again", |s| {
        s.lines()
            .last_non_empty()
            .is_some_and(|l| l == "> hello there")
    });
    term.send(b"\r");
    term.wait_for("the second answer to it", |s| {
        s.matches("you said: hello there").count() == 2
    });

    // Ctrl+C cancels the running turn; the conversation goes on.
    term.say("wait for me", "waiting for a cancel");
    term.send(b"\x03");
    term.wait_text("(the turn was cancelled)");
    // Ctrl+C at an empty prompt says how to leave; Ctrl+D leaves.
    term.send(b"\x03");
    term.wait_text("(Ctrl+D ends the conversation)");
    term.say("bye", "you said: bye");
    term.send(b"\x04");
    let status = term.wait_exit();
    assert!(status.success(), "{status:?}\n{}", term.contents());

    let received = wujie_testkit::json_lines(&log);
    assert_eq!(
        prompts(&received),
        [
            "hello there",
            "line one\nline two",
            "hello there",
            "wait for me",
            "bye"
        ]
    );
    let cancels: Vec<&Value> = received
        .iter()
        .filter(|m| m["method"] == "session/cancel")
        .collect();
    assert_eq!(cancels.len(), 1, "{received:#?}");
    assert_eq!(cancels[0]["params"]["sessionId"], "fake-session-1");

    let issue = env.issue(&key);
    let run = &issue["runs"][0];
    assert_eq!(run["status"], "succeeded", "{run:#}");
    assert_eq!(
        contents_of(run, "user_input"),
        [
            "hello there",
            "line one\nline two",
            "hello there",
            "wait for me",
            "bye"
        ]
    );
    assert_eq!(
        contents_of(run, "final"),
        [
            "you said: hello there",
            "you said 2 lines: line one | line two",
            "you said: hello there",
            "you said: bye"
        ]
    );
    // What the cancelled turn had said is text: the turn never ended with it.
    assert_eq!(contents_of(run, "text"), ["waiting for a cancel"]);
    assert!(messages_of(run, "error").is_empty(), "{run:#}");
}

#[test]
fn with_no_allow_flag_a_permission_request_is_asked_on_the_terminal() {
    let env = Env::new();
    let key = env.create_issue("acp asks");
    let (mut term, log) = run_on_terminal(&env, &key, "chat", &[]);
    term.wait_text("Ctrl+D ends");

    term.say("use a tool", "asks permission for: echo hello");
    let screen = term.wait_text("Esc: refuse");
    assert!(
        screen.contains("1) Allow") && screen.contains("2) Always allow"),
        "the agent's options, numbered:\n{screen}"
    );
    assert!(screen.contains("3) Reject"), "{screen}");
    term.send(b"3");
    term.wait_text("→ Reject");
    term.wait_text("echo hello failed");

    term.say("the tool again", "asks permission for: echo hello");
    term.send(b"1");
    term.wait_text("→ Allow");
    term.wait_for("the second turn's end", |s| {
        s.lines().last_non_empty().is_some_and(|l| l == ">")
    });

    // Esc refuses too (with the agent's reject option).
    term.say("a tool once more", "asks permission for: echo hello");
    term.send(b"\x1b");
    term.wait_text("→ refused");
    term.wait_for("the third turn's end", |s| {
        s.lines().last_non_empty().is_some_and(|l| l == ">")
    });
    term.send(b"\x04");
    assert!(term.wait_exit().success(), "{}", term.contents());

    assert_eq!(
        permission_answers(&wujie_testkit::json_lines(&log)),
        [
            serde_json::json!({"outcome": "selected", "optionId": "no"}),
            serde_json::json!({"outcome": "selected", "optionId": "yes-once"}),
            serde_json::json!({"outcome": "selected", "optionId": "no"}),
        ]
    );
    let issue = env.issue(&key);
    let results: Vec<String> = messages_of(&issue["runs"][0], "tool_result")
        .iter()
        .map(|m| m["output"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        results,
        [
            "failed: permission denied",
            "hello",
            "failed: permission denied"
        ]
    );
}

trait LastNonEmpty<'a> {
    fn last_non_empty(self) -> Option<&'a str>;
}

impl<'a, I: DoubleEndedIterator<Item = &'a str>> LastNonEmpty<'a> for I {
    /// The last line with something on it, without trailing blanks.
    fn last_non_empty(mut self) -> Option<&'a str> {
        self.rfind(|l| !l.trim().is_empty()).map(str::trim_end)
    }
}
