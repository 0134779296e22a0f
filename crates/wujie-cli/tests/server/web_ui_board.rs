//! What a tracker's users expect of the pages, in Chromium: the issue list and the board
//! follow every issue live (new issues, status changes, edits) and mark the issues an agent is
//! working on; the title and description are edited on the issue page; the live state stays
//! on screen however far a page is scrolled; the colours turn dark when the system prefers.

use std::process::Stdio;

use wujie_testkit::{Env, V1, msg, write_plugin};

use super::web_ui_browser::{logged_in, shot};

/// An adapter that takes the task, then waits for the file `go` before its reply: its run
/// is running until the test says.
fn waiting_plugin(env: &Env) {
    let go = env.work.path().join("go");
    let body = format!(
        "echo '{}'\nwhile [ ! -e {go} ]; do sleep 0.05; done\necho '{}'",
        msg("user_input", "Write the parser", "1"),
        msg("final", "Written.", "2"),
        go = go.display(),
    );
    let dir = env.work.path().join("waiter");
    write_plugin(&dir, "waiter", V1, &body);
    env.ok(&["local-run", "provider", "install", dir.to_str().unwrap()]);
}

const LIST_LIVE: &str = "document.getElementById('issue-list').dataset.live === 'on'";
const BOARD_LIVE: &str = "document.getElementById('issue-board').dataset.live === 'on'";

/// Whether the card of `key` is in the board's column of `status`.
fn in_column(key: &str, status: &str) -> String {
    format!(
        "!!document.querySelector('.column[data-status=\"{status}\"] #issue-{key}') && \
         document.querySelectorAll('#issue-{key}').length === 1"
    )
}

#[test]
fn the_list_and_the_board_follow_every_issue_live_and_mark_running_agents() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    let parser = env.create_issue("Write the parser");
    let docs = env.create_issue("Document the parser");
    waiting_plugin(&env);
    let (ui, mut b) = logged_in(&env, &chromium);
    b.wait_for("the list to be live", LIST_LIVE);
    b.eval("window.stillTheSamePage = true");

    // A new issue comes in at the top of the list.
    let bench = env.create_issue("Benchmark the parser");
    b.wait_for(
        "the new issue, live",
        &format!("document.querySelector('#issue-list > li').id === 'issue-{bench}'"),
    );

    // A run starts: the issue is marked while its agent works.
    let mut run = env
        .cmd()
        .args(["run", &parser, "--", "waiter"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("wujie run starts");
    b.wait_for(
        "the running agent's mark, live",
        &format!("!!document.querySelector('#issue-{parser} .agent-running')"),
    );
    assert_eq!(
        b.eval("document.querySelectorAll('#issue-list .agent-running').length"),
        1,
        "only the issue with a running run is marked"
    );

    // The board, in another tab: one column per status, the running issue in progress.
    let board = b.open_tab();
    b.goto(&format!("{}/board", ui.url));
    b.wait_for("the board to be live", BOARD_LIVE);
    assert_eq!(
        b.eval("[...document.querySelectorAll('.column')].map(c => c.dataset.status).join(',')"),
        "open,in_progress,done,closed"
    );
    b.wait_for(
        "the running issue in progress",
        &in_column(&parser, "in_progress"),
    );
    assert_eq!(
        b.eval(&format!(
            "!!document.querySelector('#issue-{parser} .agent-running')"
        )),
        true
    );
    b.eval("window.stillTheSamePage = true");
    env.ok(&["issue", "close", &docs]);
    b.wait_for(
        "the closed issue moved to done, live",
        &in_column(&docs, "done"),
    );
    assert_eq!(
        b.eval("document.querySelector('.column[data-status=\"done\"] .count').textContent"),
        "1"
    );
    std::fs::write(env.work.path().join("go"), "").expect("go");
    assert!(run.wait().expect("run ends").success());
    b.wait_for(
        "the mark gone when the run ended, live",
        &format!(
            "!!document.getElementById('issue-{parser}') && \
             !document.querySelector('#issue-{parser} .agent-running')"
        ),
    );
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        true,
        "the board was reloaded"
    );
    shot(&mut b, "board.png");

    // The list saw the same, without a reload.
    b.use_tab(0);
    b.wait_for(
        "the list's mark gone, live",
        &format!(
            "!!document.getElementById('issue-{parser}') && \
             !document.querySelector('#issue-{parser} .agent-running')"
        ),
    );
    b.wait_for(
        "the closed issue's status in the list, live",
        &format!("document.getElementById('issue-{docs}').dataset.status === 'done'"),
    );
    assert_eq!(
        b.eval("window.stillTheSamePage"),
        true,
        "the list was reloaded"
    );

    // The title and description, edited on the issue page (a tab of its own).
    let list = 0;
    b.open_tab();
    b.goto(&format!("{}/issues/{bench}", ui.url));
    b.eval("document.querySelector('#edit-issue summary').click()");
    b.eval("document.getElementById('edit-title').value = 'Benchmark the new parser'");
    b.eval("document.getElementById('edit-description').value = 'Parse **1 GB** in a second'");
    b.eval("document.querySelector('#edit-form button').click()");
    b.wait_for(
        "the new title on the page",
        "document.getElementById('issue-title').innerText === 'Benchmark the new parser'",
    );
    b.wait_loaded();
    assert_eq!(
        b.eval("document.querySelector('#issue-description strong').innerText"),
        "1 GB"
    );
    let edited = env.issue(&bench);
    assert_eq!(edited["title"], "Benchmark the new parser");
    assert_eq!(edited["description"], "Parse **1 GB** in a second");
    // The list and the board show the new title live.
    for tab in [list, board] {
        b.use_tab(tab);
        b.wait_for(
            "the edited title, live",
            &format!(
                "document.querySelector('#issue-{bench} .title').innerText === 'Benchmark the new parser'"
            ),
        );
    }
}

#[test]
fn the_live_state_stays_on_screen_and_the_colours_follow_the_system() {
    let Some(chromium) = wujie_require::require("chromium") else {
        return;
    };
    let env = Env::new();
    env.ok(&["demo"]);
    let key = env.create_issue("A long page");
    for n in 1..=12 {
        env.ok(&[
            "issue",
            "comment",
            &key,
            &format!("Comment {n}\n\nwith a second paragraph"),
        ]);
    }
    let (ui, mut b) = logged_in(&env, &chromium);

    // Scrolled to the bottom of a long issue page, the live state is still in view.
    ui.open_live_issue(&mut b, &key);
    b.eval("window.scrollTo(0, document.documentElement.scrollHeight)");
    b.wait_for("the page scrolled", "window.scrollY > 500");
    assert_eq!(
        b.eval(
            "(() => { const r = document.getElementById('live-state').getBoundingClientRect(); \
             return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; })()"
        ),
        true,
        "the live state is off screen"
    );
    assert_eq!(
        b.eval("document.getElementById('live-state').innerText"),
        "Live"
    );

    // Dark when the system prefers it, light otherwise.
    let background = "getComputedStyle(document.documentElement).backgroundColor";
    let text = "getComputedStyle(document.documentElement).color";
    b.prefer_color_scheme("dark");
    b.goto(&format!("{}/issues/WUJ-1", ui.url));
    assert_eq!(b.eval(background), "rgb(17, 19, 23)");
    assert_eq!(b.eval(text), "rgb(227, 230, 234)");
    b.wait_for(
        "the page to be live",
        "document.getElementById('issue').dataset.live === 'on'",
    );
    shot(&mut b, "dark.png");
    b.prefer_color_scheme("light");
    b.goto(&format!("{}/issues/WUJ-1", ui.url));
    assert_eq!(b.eval(background), "rgb(255, 255, 255)");
    assert_eq!(b.eval(text), "rgb(29, 32, 37)");
}
