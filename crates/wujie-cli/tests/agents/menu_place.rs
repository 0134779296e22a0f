//! Where the `/wujie` menu opens with the real agent CLIs in their own terminal UIs, against the
//! mock model server, driven in tmux like a person: under everything the agent draws under its
//! input line (opencode's input box, Gemini CLI's two-row footer, Codex's footer), which stays
//! on the screen as it was while the menu is open; and a window resized with the menu open
//! leaves Claude Code's and Gemini CLI's screens whole, their input box once, the menu open
//! again under it.
//!
//! Fails when an agent is not installed, saying to run `scripts/agents/install <agent>`, unless
//! `WUJIE_SKIP_AGENTS` lists it (or says `all`).

use std::time::Duration;

use wujie_mockllm::Script;
use wujie_mockllm::agents::Agent;
use wujie_testkit::*;

/// The menu's first entry, there once it is open.
const MENU: &str = "/wujiecreateissue";
/// How long an agent may take to start on a busy machine (only so a hang fails).
const PATIENCE: Duration = Duration::from_secs(240);
/// Gemini CLI's input box, empty and waiting.
const GEMINI_READY: &str = "Type your message or @path/to/file";
/// How far under its input line an agent's input area reaches at most (they draw up to four
/// rows there); what is further down is not part of it.
const INPUT_AREA_ROWS: usize = 8;

/// `wujie discuss -- AGENT` in a 100×30 tmux window below some shell output, and `test` once
/// the agent shows `ready` and its screen settled (an agent still starting up may draw its
/// footer only later, or miss keys).
fn in_discussion(agent: Agent, name: &str, ready: &str, test: impl FnOnce(&Tmux)) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let Some((mock, home)) = tui_agent::require_mock(&runtime, agent, Script::default()) else {
        return;
    };
    let env = Env::new();
    let args = format!("discuss -- {}", agent.name());
    let tmux = tui_agent::start_wujie_below_output(&env, &home, name, &args);
    tmux.poll_for(PATIENCE, |s| s.contains(ready))
        .unwrap_or_else(|| panic!("{} did not start:\n{}", agent.name(), tmux.screen()));
    tmux.wait_settled("the agent's screen to settle", |s| s.contains(ready));
    test(&tmux);
    drop(tmux);
    runtime.block_on(mock.shutdown());
}

/// The row of `screen` that is the agent's input line (`prompt` first, `text` last).
fn input_row(screen: &str, prompt: &str, text: &str) -> Option<usize> {
    screen
        .lines()
        .position(|l| l.trim_start().starts_with(prompt) && l.trim_end().ends_with(text))
}

/// Types `/wuji` and, once the agent drew it and its screen settled, `e`: the screen before
/// the menu opened, and the screen with it open.
fn open_menu_last_key(tmux: &Tmux, prompt: &str) -> (String, String) {
    tmux.keys(&["-l", "/wuji"]);
    let before = tmux.wait_settled("/wuji in the input line", |s| {
        input_row(s, prompt, "/wuji").is_some()
    });
    tmux.keys(&["-l", "e"]);
    let during = tmux.wait_settled("the menu", |s| s.contains(MENU));
    (before, during)
}

/// The rows the agent drew under its input line in `before` (down to the last one that is not
/// blank) are on `during`, one after the other as they were, and the menu is under them.
fn assert_input_area_kept_above_the_menu(before: &str, during: &str, prompt: &str) {
    let rows: Vec<&str> = before.lines().collect();
    let input = input_row(before, prompt, "/wuji").expect("the input line");
    let under = &rows[input + 1..(input + 1 + INPUT_AREA_ROWS).min(rows.len())];
    let last = under
        .iter()
        .rposition(|r| !r.trim().is_empty())
        .unwrap_or_else(|| panic!("the agent drew under its input line:\n{before}"));
    let area = &under[..=last];
    let shown: Vec<&str> = during.lines().collect();
    let at = shown
        .windows(area.len())
        .position(|w| w == area)
        .unwrap_or_else(|| {
            panic!(
                "the agent's rows under its input line are not on the screen as they were\n\
                 rows:\n{}\nbefore:\n{before}\nwith the menu open:\n{during}",
                area.join("\n")
            )
        });
    let menu = shown
        .iter()
        .position(|r| r.contains(MENU))
        .expect("the menu");
    assert!(
        menu > at + last,
        "the menu is under the agent's rows:\n{during}"
    );
}

#[test]
fn the_wujie_menu_opens_under_opencode_s_input_box_and_status_row() {
    in_discussion(
        Agent::Opencode,
        "place-opencode",
        "ctrl+p commands",
        |tmux| {
            let (before, during) = open_menu_last_key(tmux, "┃");
            assert_input_area_kept_above_the_menu(&before, &during, "┃");
        },
    );
}

#[test]
fn the_wujie_menu_opens_under_gemini_cli_s_two_row_footer() {
    in_discussion(Agent::Gemini, "place-gemini", GEMINI_READY, |tmux| {
        let (before, during) = open_menu_last_key(tmux, ">");
        assert_input_area_kept_above_the_menu(&before, &during, ">");
    });
}

#[test]
fn the_wujie_menu_opens_under_codex_s_footer() {
    // Codex's status row names the model once it has loaded.
    in_discussion(Agent::Codex, "place-codex", "mock-model default", |tmux| {
        let (before, during) = open_menu_last_key(tmux, "›");
        assert_input_area_kept_above_the_menu(&before, &during, "›");
    });
}

/// The screen once `cond` held on it for 300 ms, or `None` if it did not within `within`.
fn settled_within(tmux: &Tmux, within: Duration, cond: impl Fn(&str) -> bool) -> Option<String> {
    let deadline = std::time::Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let screen = tmux.poll_for(left, &cond)?;
        std::thread::sleep(Duration::from_millis(300));
        if tmux.screen() == screen {
            return Some(screen);
        }
    }
}

/// Opens the menu on `/wujie` (the agent's input line starts with `prompt`) once the agent
/// drew `/wuji`, makes the window 80×26, and checks the agent repainted for it with the menu open again under its input
/// line, each of `once` on one row only; then Esc, and the same without the menu.
fn resize_with_the_menu_open(tmux: &Tmux, prompt: &str, once: &[&str]) {
    open_menu_last_key(tmux, prompt);
    tmux.tmux(&["resize-window", "-t", "t", "-x", "80", "-y", "26"]);
    let whole = |s: &str| {
        input_row(s, prompt, "/wujie").is_some()
            && once
                .iter()
                .all(|text| s.lines().filter(|l| l.contains(text)).count() == 1)
    };
    let resized = settled_within(tmux, Duration::from_secs(30), |s| {
        s.contains(MENU) && whole(s)
    })
    .unwrap_or_else(|| {
        panic!(
            "after the resize the menu is not open under the agent's screen drawn once \
             (its input line, {once:?}):\n{}",
            tmux.screen()
        )
    });
    let input = input_row(&resized, prompt, "/wujie").expect("the input line");
    let menu = resized
        .lines()
        .position(|l| l.contains(MENU))
        .expect("menu");
    assert!(menu > input, "the menu is under the input line:\n{resized}");
    tmux.keys(&["Escape"]);
    settled_within(tmux, Duration::from_secs(30), |s| {
        !s.contains(MENU) && whole(s)
    })
    .unwrap_or_else(|| {
        panic!(
            "with the menu closed the agent's screen is not drawn once:\n{}",
            tmux.screen()
        )
    });
}

#[test]
fn resizing_with_the_wujie_menu_open_keeps_claude_code_s_input_box() {
    in_discussion(Agent::Claude, "resize-claude", "shift+tab", |tmux| {
        resize_with_the_menu_open(tmux, "❯", &["shift+tab to cycle"]);
    });
}

#[test]
fn resizing_with_the_wujie_menu_open_draws_gemini_cli_s_input_box_once() {
    in_discussion(Agent::Gemini, "resize-gemini", GEMINI_READY, |tmux| {
        resize_with_the_menu_open(
            tmux,
            ">",
            &["Shift+Tab to accept edits", "workspace (/directory)"],
        );
    });
}
