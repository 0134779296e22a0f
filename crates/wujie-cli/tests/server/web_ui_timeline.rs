//! The issue page's one timeline in Chromium: a comment, the run (its transcript, a tool call
//! and its result in one row, the model with the usage), and the issue closed, oldest first,
//! each coming in live, and the same when the page is loaded again.

use std::process::Stdio;

use wujie_testkit::browser::Browser;
use wujie_testkit::{Env, V1, msg, write_plugin};

use super::web_ui_browser::{logged_in, shot};

/// An adapter that calls a tool, and waits for the file `go` before its result (long: 100
/// lines), its reply and its usage.
fn tool_plugin(env: &Env) {
    let go = env.work.path().join("go");
    let call = serde_json::json!({
        "type": "tool_use", "tool": "Bash", "input": {"command": "cargo test -p parser"},
        "source": "t", "source_key": "2"
    });
    let lines: String = (1..=100)
        .map(|n| format!("test case_{n} ... ok\\n"))
        .collect();
    let usage = serde_json::json!({"usage": {
        "provider": "anthropic", "model": "claude-sonnet-4-5", "input_tokens": 1200,
        "output_tokens": 300, "cache_read_tokens": 0, "cache_write_tokens": 0
    }});
    let body = format!(
        "echo '{}'\necho '{call}'\nwhile [ ! -e {go} ]; do sleep 0.05; done\n\
         printf '%s\\n' '{{\"type\":\"tool_result\",\"tool\":\"Bash\",\"output\":\"{lines}\",\"source\":\"t\",\"source_key\":\"3\"}}'\n\
         echo '{}'\necho '{usage}'\necho '{}'",
        msg("user_input", "Make the parser tests pass", "1"),
        msg("text", "The tests pass now.", "4"),
        msg("final", "Done: **100** tests pass.", "5"),
        go = go.display(),
    );
    let dir = env.work.path().join("tester");
    write_plugin(&dir, "tester", V1, &body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

/// The classes of the timeline's entries, in order: `comment`, `run`, `status-change`.
const ENTRIES: &str =
    "[...document.getElementById('timeline').children].map(e => e.className).join(',')";

#[test]
fn the_issue_page_is_one_timeline_that_comes_in_live() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    tool_plugin(&env);
    let key = env.create_issue("Make the parser tests pass");
    env.ok(&[
        "issue",
        "comment",
        &key,
        "The parser fails on empty input; start there.",
    ]);
    let (ui, mut b) = logged_in(&env, &chromium);
    ui.open_live_issue(&mut b, &key);
    b.eval("window.stillTheSamePage = true");

    let mut run = env
        .cmd()
        .args(["run", &key, "--", "tester"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    b.wait_for(
        "the tool call, live",
        "!!document.querySelector('.transcript li[data-key=\"t/2\"]')",
    );
    assert_eq!(
        b.eval("document.querySelector('.transcript li[data-key=\"t/2\"] summary').innerText"),
        "Tool Bash cargo test -p parser"
    );
    std::fs::write(env.work.path().join("go"), "").expect("go");
    b.wait_for(
        "the run's end, live",
        "!!document.querySelector('.run-head .run-succeeded')",
    );
    assert!(run.wait().expect("run ends").success());
    // The result came into its call's row.
    b.wait_for(
        "the result in the call's row",
        "document.querySelector('.transcript li[data-key=\"t/2\"]').dataset.resultKey === 't/3'",
    );
    env.ok(&["issue", "close", &key]);
    b.wait_for(
        "the closing, live",
        "document.getElementById('timeline').innerText.includes('closed the issue as done')",
    );
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        true,
        "the page was reloaded"
    );

    let check = |b: &mut Browser| {
        assert_eq!(b.eval(ENTRIES), "comment,run,status-change");
        assert_eq!(
            b.eval("[...document.querySelectorAll('.transcript > li')].map(li => li.dataset.key).join(',')"),
            "t/1,t/2,t/4,t/5"
        );
        // The long result starts shown and goes on behind "show more".
        let row = "document.querySelector('.transcript li[data-key=\"t/2\"] .tool-result')";
        let result = b.eval(&format!("{row}.textContent"));
        let result = result.as_str().expect("text");
        assert!(result.contains("test case_40 ... ok"), "{result}");
        assert_eq!(
            b.eval(&format!(
                "{row}.querySelector('details.more summary').textContent"
            )),
            "show more (60 more lines)"
        );
        let text = b.text();
        assert!(
            text.contains("model claude-sonnet-4-5 · tokens in 1200 · out 300"),
            "{text}"
        );
        // The prompt (besides the title) and the reply once each: in the run, not again as
        // comments.
        assert_eq!(
            text.matches("Make the parser tests pass").count(),
            2,
            "{text}"
        );
        assert_eq!(text.matches("100 tests pass").count(), 1, "{text}");
    };
    check(&mut b);
    // Served whole, the page is the same.
    b.goto(&format!("{}/issues/{key}", ui.url));
    check(&mut b);
    shot(&mut b, "timeline.png");
}
