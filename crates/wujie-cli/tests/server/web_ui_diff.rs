//! The issue page's code changes in Chromium: a run in a real git repository edits files in
//! two turns; the page, open before the run, shows the first turn's diff and then the
//! second's without a reload, every line of code as text (a `<script>` in a file stays text),
//! coloured by kind, long files folded, and the reader's open/closed files left as they were.

use std::process::Stdio;

use wujie_testkit::git_repo::{git, require_repository_of};
use wujie_testkit::{Env, V1, msg};

use super::web_ui_browser::{logged_in, shot};

/// An agent in two turns: it rewrites `page.html` with markup, ends its first turn, waits for
/// the file `go`, then adds notes in a commit whose subject has markup too, a long file, and
/// ends its second turn.
fn two_turn_agent(env: &Env) {
    let go = env.work.path().join("go");
    let body = format!(
        "printf '%s\\n' '<script>window.pwned=1</script>' '<b>x</b>' > page.html\n\
         printf '%s\\n' '{}'\n\
         while [ ! -e '{go}' ]; do sleep 0.05; done\n\
         printf '%s\\n' 'second <b>turn</b>' > notes.md\n\
         git add notes.md && git commit -q -m 'Add notes <i>now</i>'\n\
         seq 1 500 > long.txt\n\
         printf '%s\\n' '{}'",
        msg("final", "First turn: the page.", "f1"),
        msg("final", "Second turn: notes.", "f2"),
        go = go.display(),
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
    two_turn_agent(&env);
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
        "!!document.querySelector('.run-code details.file[data-path=\"page.html\"]')",
    );
    let file = "document.querySelector('.run-code details.file[data-path=\"page.html\"]')";
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
        b.eval("document.querySelectorAll('.run-code details.file').length"),
        1
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
        "!!document.querySelector('.run-code details.file[data-path=\"notes.md\"]') && \
         !!document.querySelector('.run-code details.file[data-path=\"long.txt\"]')",
    );
    assert!(run.wait().expect("run ends").success());
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        true,
        "the page was reloaded"
    );
    assert_eq!(b.eval(&format!("{file}.open")), false);
    let notes = "document.querySelector('.run-code details.file[data-path=\"notes.md\"]')";
    assert_eq!(b.eval(&format!("{notes}.open")), true);
    assert_eq!(
        b.eval(&format!("{notes}.querySelector('.l.add').textContent")),
        "+second <b>turn</b>"
    );
    // A long file is folded, and says so; opening it shows every line.
    let long = "document.querySelector('.run-code details.file[data-path=\"long.txt\"]')";
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
        b.eval("[...document.querySelectorAll('.run-code details.file')].map(d => d.dataset.path).join(',')"),
        "long.txt,notes.md,page.html"
    );
    assert_eq!(b.eval("typeof window.pwned"), "undefined");
    assert_eq!(
        b.eval("document.querySelector('.run-code').innerText.includes('+<script>window.pwned=1</script>')"),
        true
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
