//! The issue page's code changes in Chromium: a run in a real git repository edits files in
//! two turns; the page, open before the run, shows the first turn's diff and then the
//! second's without a reload, every line of code as text (a `<script>` in a file stays text),
//! coloured by kind, long files folded, and the reader's open/closed files left as they were;
//! below the run's files, what each turn changed, live as well.

use std::process::Stdio;

use wujie_testkit::git_repo::{git, require_repository_of};
use wujie_testkit::{Env, V1, msg};

use super::web_ui_browser::{logged_in, shot};

/// An agent in three turns: it rewrites `page.html` with markup, ends its first turn, waits for
/// the file `go`, then adds notes in a commit whose subject has markup too, a long file, and
/// ends its second turn; once the file `go2` exists, it ends a third turn that changes nothing.
fn three_turn_agent(env: &Env) {
    let go = env.work.path().join("go");
    let go2 = env.work.path().join("go2");
    let body = format!(
        "printf '%s\\n' '<script>window.pwned=1</script>' '<b>x</b>' > page.html\n\
         printf '%s\\n' '{}'\n\
         while [ ! -e '{go}' ]; do sleep 0.05; done\n\
         printf '%s\\n' 'second <b>turn</b>' > notes.md\n\
         git add notes.md && git commit -q -m 'Add notes <i>now</i>'\n\
         seq 1 500 > long.txt\n\
         printf '%s\\n' '{}'\n\
         while [ ! -e '{go2}' ]; do sleep 0.05; done\n\
         printf '%s\\n' '{}'",
        msg("final", "First turn: the page.", "f1"),
        msg("final", "Second turn: notes.", "f2"),
        msg("final", "Third turn: nothing to change.", "f3"),
        go = go.display(),
        go2 = go2.display(),
    );
    let plugin = env.plugin("differ", V1, &body);
    env.ok(&["local-run", "provider", "install", plugin.to_str().unwrap()]);
}

#[test]
fn the_issue_page_shows_each_turns_code_changes_live_and_escaped() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let Some(repo) = require_repository_of(&env, &[("page.html", "<p>old</p>\n")]) else {
        return;
    };
    let base = git(&repo, &["rev-parse", "--short=7", "HEAD"]);
    three_turn_agent(&env);
    let key = env.create_issue("Change the page");

    let (ui, mut b) = logged_in(&env, &chromium);
    ui.open_live_issue(&mut b, &key);
    b.eval("window.stillTheSamePage = true");
    let mut run = env
        .cmd()
        .current_dir(&repo)
        .args(["run", &key, "--", "differ"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");

    // The first turn's file, live: its lines as text, coloured by kind.
    b.wait_for(
        "the first turn's file",
        "!!document.querySelector('.run-code > .files details.file[data-path=\"page.html\"]')",
    );
    let file = "document.querySelector('.run-code > .files details.file[data-path=\"page.html\"]')";
    assert_eq!(
        b.eval(&format!(
            "[...{file}.querySelectorAll('.l.add')].map(l => l.textContent).join('|')"
        )),
        "+<script>window.pwned=1</script>|+<b>x</b>"
    );
    assert_eq!(
        b.eval(&format!(
            "[...{file}.querySelectorAll('.l.del')].map(l => l.textContent).join('|')"
        )),
        "-<p>old</p>"
    );
    assert_eq!(
        b.eval(&format!(
            "{file}.querySelector('.l.hunk').textContent.startsWith('@@ ')"
        )),
        true
    );
    assert_eq!(b.eval(&format!("{file}.open")), true);
    let summary = b.eval(&format!("{file}.querySelector('summary').innerText"));
    assert_eq!(summary, "page.html modified +2 −1", "{summary}");
    let place = b.eval("document.querySelector('.run-code .code-where').innerText");
    assert_eq!(place, format!("Code: project on main · base {base}"));
    assert_eq!(
        b.eval("document.querySelectorAll('.run-code > .files details.file').length"),
        1
    );
    // Per turn: turn 1, with the same file, folded until the reader opens it.
    let turns = "document.querySelector('.run-code details.turns')";
    assert_eq!(b.eval(&format!("{turns}.open")), false);
    assert_eq!(
        b.eval(&format!("{turns}.querySelector('summary').innerText")),
        "Per turn (1 turn)"
    );
    b.eval(&format!("{turns}.open = true"));
    assert_eq!(
        b.eval(&format!(
            "[...{turns}.querySelectorAll('.turn')].map(t => t.querySelector('.turn-head').innerText).join('|')"
        )),
        "Turn 1 · 1 file changed, +2 −1"
    );
    assert_eq!(b.eval("typeof window.pwned"), "undefined");
    assert_eq!(
        b.eval("document.querySelectorAll('.run-code script, .run-code b').length"),
        0
    );

    // The reader folds the page's file; the second turn comes in without a reload and
    // leaves it folded.
    b.eval(&format!("{file}.open = false"));
    std::fs::write(env.work.path().join("go"), "").expect("go");
    b.wait_for(
        "the second turn's files, live",
        "!!document.querySelector('.run-code > .files details.file[data-path=\"notes.md\"]') && \
         !!document.querySelector('.run-code > .files details.file[data-path=\"long.txt\"]')",
    );
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        true,
        "the page was reloaded"
    );
    assert_eq!(b.eval(&format!("{file}.open")), false);
    // The turns came in live too, still open as the reader left them: the second turn has only
    // its own files and commit, as text.
    assert_eq!(b.eval(&format!("{turns}.open")), true);
    let second = "document.querySelector('.run-code .turn[data-turn=\"2\"]')";
    assert_eq!(
        b.eval(&format!("{second}.querySelector('.turn-head').innerText")),
        "Turn 2 · 2 files changed, +501 −0"
    );
    assert_eq!(
        b.eval(&format!(
            "[...{second}.querySelectorAll('details.file')].map(d => d.dataset.path).join(',')"
        )),
        "turn 2: long.txt,turn 2: notes.md"
    );
    assert_eq!(
        b.eval(&format!(
            "{second}.querySelector('ul.commits li').innerText.includes('Add notes <i>now</i>')"
        )),
        true
    );
    let first = "document.querySelector('.run-code .turn[data-turn=\"1\"]')";
    assert_eq!(
        b.eval(&format!(
            "[...{first}.querySelectorAll('details.file')].map(d => d.dataset.path).join(',')"
        )),
        "turn 1: page.html"
    );
    assert_eq!(
        b.eval(&format!("{first}.querySelector('ul.commits')")),
        serde_json::Value::Null
    );
    // The third turn changes nothing, which is known at the run's end: said live too, as
    // `wujie issue diff --turn 3` says it.
    std::fs::write(env.work.path().join("go2"), "").expect("go2");
    assert!(run.wait().expect("run ends").success());
    b.wait_for(
        "the third turn, at the run's end",
        "!!document.querySelector('.run-code .turn[data-turn=\"3\"]')",
    );
    assert_eq!(
        b.eval("document.querySelector('.run-code .turn[data-turn=\"3\"]').innerText"),
        "Turn 3 changed no files."
    );
    assert_eq!(b.eval(&format!("{turns}.open")), true);
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        true,
        "the page was reloaded"
    );
    let notes = "document.querySelector('.run-code > .files details.file[data-path=\"notes.md\"]')";
    assert_eq!(b.eval(&format!("{notes}.open")), true);
    assert_eq!(
        b.eval(&format!("{notes}.querySelector('.l.add').textContent")),
        "+second <b>turn</b>"
    );
    // A long file is folded, and says so; opening it shows every line.
    let long = "document.querySelector('.run-code > .files details.file[data-path=\"long.txt\"]')";
    assert_eq!(b.eval(&format!("{long}.open")), false);
    let summary = b.eval(&format!("{long}.querySelector('summary').innerText"));
    assert!(summary.as_str().unwrap().contains("folded"), "{summary}");
    assert_eq!(
        b.eval(&format!("{long}.querySelectorAll('.l.add').length")),
        500
    );
    // The commit, with its subject as text.
    let commit = b.eval("document.querySelector('.run-code ul.commits li').innerText");
    let sha = git(&repo, &["rev-parse", "--short=7", "HEAD"]);
    assert!(
        commit
            .as_str()
            .unwrap()
            .starts_with(&format!("{sha} Add notes <i>now</i>")),
        "{commit}"
    );
    assert_eq!(b.eval("document.querySelectorAll('.run-code i').length"), 0);
    assert_eq!(b.eval("typeof window.pwned"), "undefined");

    // A reload renders the same from the server, as inert, and fits a phone.
    b.goto(&format!("{}/issues/{key}", ui.url));
    b.wait_loaded();
    assert_eq!(
        b.eval("[...document.querySelectorAll('.run-code > .files details.file')].map(d => d.dataset.path).join(',')"),
        "long.txt,notes.md,page.html"
    );
    assert_eq!(b.eval("typeof window.pwned"), "undefined");
    assert_eq!(
        b.eval("document.querySelector('.run-code').innerText.includes('+<script>window.pwned=1</script>')"),
        true
    );
    // So does a reload.
    b.eval("document.querySelector('.run-code details.turns').open = true");
    assert_eq!(
        b.eval("document.querySelector('.run-code .turn[data-turn=\"3\"]').innerText"),
        "Turn 3 changed no files."
    );
    shot(&mut b, "diff.png");
    b.viewport(390, 844, true);
    b.goto(&format!("{}/issues/{key}", ui.url));
    b.wait_loaded();
    assert_eq!(
        b.eval("document.documentElement.scrollWidth <= window.innerWidth"),
        true,
        "the page is wider than a phone"
    );
    drop(b);
    drop(ui);
}
