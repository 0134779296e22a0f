//! An issue page tells of its agent's question and of its run's end in a notice, as text
//! (markup in a question stays text), without asking the browser for notifications on load.

use std::process::Stdio;

use wujie_testkit::{Env, V1, msg};

use super::web_ui_browser::logged_in;

#[test]
fn an_issue_page_tells_of_a_question_and_of_the_runs_end() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let answered = env.work.path().join("answered");
    let body = format!(
        // printf, not echo: sh's echo may read the JSON's backslashes as escapes.
        "printf '%s\\n' '{}'\nwhile [ ! -e '{}' ]; do sleep 0.05; done\nprintf '%s\\n' '{}'",
        msg(
            "question",
            "SQLite or <img src=x onerror=\"window.pwned=1\">PostgreSQL?",
            "q"
        ),
        answered.display(),
        msg("final", "SQLite it is.", "f"),
    );
    let plugin = env.plugin("asker", V1, &body);
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
    let key = env.create_issue("Pick a database");
    let (ui, mut b) = logged_in(&env, &chromium);
    ui.open_live_issue(&mut b, &key);
    // Nothing was asked of the browser on load; the button offers it where it can be asked.
    assert_eq!(
        b.eval(
            "document.getElementById('notify-me').hidden === (Notification.permission !== 'default')"
        ),
        serde_json::json!(true)
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#notices .notice').length"),
        0
    );

    let mut run = env
        .cmd()
        .args(["run", &key, "--", "asker"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    b.wait_for(
        "the question's notice",
        "[...document.querySelectorAll('#notices .notice')].some(n => n.innerText.includes('the agent asks:'))",
    );
    let notice = b.eval("document.querySelector('#notices .notice span').textContent");
    assert_eq!(
        notice,
        "the agent asks: SQLite or <img src=x onerror=\"window.pwned=1\">PostgreSQL?; answer it in its terminal"
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#notices img').length"),
        0
    );
    assert_eq!(b.eval("typeof window.pwned"), "undefined");

    std::fs::write(&answered, "").unwrap();
    assert!(run.wait().unwrap().success());
    b.wait_for(
        "the run's end, in a notice",
        "[...document.querySelectorAll('#notices .notice')].some(n => n.innerText.includes('(asker) succeeded'))",
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#notices .notice').length"),
        2
    );
    // A notice goes when dismissed.
    b.eval("document.querySelector('#notices .notice button').click()");
    assert_eq!(
        b.eval("document.querySelectorAll('#notices .notice').length"),
        1
    );
    drop(b);
    drop(ui);
}
