//! Menu and issue card models, and key decoding.

use wujie_term::{
    CREATE_ISSUE, CardChoice, CardUpdate, InputScanner, IssueCard, Key, LineStyle, MENU_MAX_ROWS,
    Menu, MenuItem, MenuOutcome, MenuUpdate, default_commands, erase_chars,
};

fn keys(input: &[u8]) -> Vec<Key> {
    let mut scanner = InputScanner::new();
    let mut events = scanner.feed(input);
    events.extend(scanner.flush_idle());
    events.iter().map(|e| Key::decode(&e.bytes)).collect()
}

#[test]
fn decodes_keys_from_typing_events() {
    assert_eq!(
        keys("\x1b[A\x1bOB\x1b[1;2A\t\x1b[Z\r\x7f\x03é\x1b[C\x1bOD\x1b[3~".as_bytes()),
        vec![
            Key::Up,
            Key::Down,
            Key::Up,
            Key::Tab,
            Key::BackTab,
            Key::Enter,
            Key::Backspace,
            Key::CtrlC,
            Key::Char('é'),
            Key::Right,
            Key::Left,
            Key::Other,
        ]
    );
    // A lone Escape only after the idle flush.
    assert_eq!(keys(b"\x1b"), vec![Key::Esc]);
    assert_eq!(Key::decode(b"\x1bx"), Key::Other);
    assert_eq!(Key::decode(b"\xff"), Key::Other);
}

fn menu() -> Menu {
    let mut items = default_commands();
    items.push(MenuItem::new("/wujiestatus", "show the discussion status"));
    items.push(MenuItem::new("/wujiecancel", "cancel the discussion"));
    Menu::new(items, "")
}

fn names(menu: &Menu) -> Vec<&str> {
    menu.matches().iter().map(|i| i.name.as_str()).collect()
}

#[test]
fn a_menu_opened_again_for_the_same_line_keeps_what_was_typed_and_selected() {
    let mut earlier = menu();
    for key in [Key::Char('c'), Key::Down] {
        earlier.handle_key(key);
    }
    assert_eq!(
        earlier.selected().map(|i| i.name.as_str()),
        Some("/wujiecancel")
    );
    let again = menu().carrying_over(&earlier);
    assert_eq!(again.filter(), "/wujiec");
    assert_eq!(
        again.selected().map(|i| i.name.as_str()),
        Some("/wujiecancel")
    );
    // Esc gives the adapter what was typed into the menu, as it would have before.
    let mut again = again;
    assert_eq!(
        again.handle_key(Key::Esc),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: b"c".to_vec()
        })
    );
    // For another line, nothing carries over.
    let other = Menu::new(default_commands(), "c").carrying_over(&earlier);
    assert_eq!(other.filter(), "/wujiec");
    assert_eq!(
        other.selected().map(|i| i.name.as_str()),
        Some(CREATE_ISSUE)
    );
}

#[test]
fn create_issue_is_a_default_command() {
    let items = default_commands();
    assert!(
        items
            .iter()
            .any(|i| i.name == CREATE_ISSUE && !i.description.is_empty())
    );
    assert!(CREATE_ISSUE.starts_with(wujie_term::TRIGGER));
}

#[test]
fn typing_narrows_and_backspace_widens() {
    let mut m = menu();
    assert_eq!(names(&m).len(), 3);
    assert_eq!(m.handle_key(Key::Char('c')), MenuUpdate::Redraw);
    assert_eq!(names(&m), vec![CREATE_ISSUE, "/wujiecancel"]);
    assert_eq!(m.handle_key(Key::Char('r')), MenuUpdate::Redraw);
    assert_eq!(names(&m), vec![CREATE_ISSUE]);
    assert_eq!(m.handle_key(Key::Backspace), MenuUpdate::Redraw);
    assert_eq!(names(&m).len(), 2);
    assert_eq!(m.filter(), "/wujiec");
}

#[test]
fn arrows_and_tab_move_with_wraparound_and_enter_chooses() {
    let mut m = menu();
    assert_eq!(m.selected().map(|i| i.name.as_str()), Some(CREATE_ISSUE));
    m.handle_key(Key::Down);
    m.handle_key(Key::Tab);
    assert_eq!(m.selected().map(|i| i.name.as_str()), Some("/wujiecancel"));
    m.handle_key(Key::Down);
    assert_eq!(m.selected().map(|i| i.name.as_str()), Some(CREATE_ISSUE));
    m.handle_key(Key::Up);
    assert_eq!(m.selected().map(|i| i.name.as_str()), Some("/wujiecancel"));
    assert_eq!(m.handle_key(Key::Left), MenuUpdate::Unchanged);
    assert_eq!(
        m.handle_key(Key::Enter),
        MenuUpdate::Closed(MenuOutcome::Chosen {
            command: "/wujiecancel".to_owned(),
            erase: erase_chars(6),
        })
    );
}

#[test]
fn chosen_erases_what_the_adapter_has_not_what_the_menu_consumed() {
    // The adapter has `/wujiec` (pasted); `r` was typed into the menu only.
    let mut m = Menu::new(default_commands(), "c");
    m.handle_key(Key::Char('r'));
    let MenuUpdate::Closed(MenuOutcome::Chosen { command, erase }) = m.handle_key(Key::Enter)
    else {
        panic!("not chosen");
    };
    assert_eq!(command, CREATE_ISSUE);
    assert_eq!(erase, vec![0x7f; 7]);
}

#[test]
fn escape_and_ctrl_c_dismiss_leaving_the_trigger() {
    let mut m = menu();
    m.handle_key(Key::Char('c'));
    assert_eq!(
        m.handle_key(Key::Esc),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: b"c".to_vec()
        })
    );
    assert_eq!(
        menu().handle_key(Key::CtrlC),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: Vec::new()
        })
    );
}

#[test]
fn text_that_is_no_command_goes_back_to_the_adapter() {
    let mut m = menu();
    m.handle_key(Key::Char('c'));
    assert_eq!(
        m.handle_key(Key::Char(' ')),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: b"c ".to_vec()
        })
    );
    // Backspace with nothing typed into the menu deletes into the adapter's line.
    assert_eq!(
        menu().handle_key(Key::Backspace),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: b"\x7f".to_vec()
        })
    );
    // Opened on a query nothing matches: Enter submits it to the adapter.
    let mut none = Menu::new(default_commands(), "zz");
    assert!(none.matches().is_empty());
    let lines = none.lines(40, 5);
    assert_eq!(lines.len(), 1);
    assert!(lines[0].text.contains("no matching command"));
    assert_eq!(none.handle_key(Key::Down), MenuUpdate::Unchanged);
    assert_eq!(
        none.handle_key(Key::Enter),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: b"\r".to_vec()
        })
    );
}

#[test]
fn menu_lines_fit_width_and_scroll_to_the_selection() {
    let items: Vec<MenuItem> = (0..10)
        .map(|i| MenuItem::new(format!("/wujiecmd{i}"), "描述 description"))
        .collect();
    let mut m = Menu::new(items, "");
    assert_eq!(m.lines(16, MENU_MAX_ROWS).len(), 6);
    for _ in 0..7 {
        m.handle_key(Key::Down);
    }
    let lines = m.lines(16, 3);
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| wujie_term::text::width(&l.text) <= 16));
    assert_eq!(lines[2].style, LineStyle::Selected);
    assert!(
        lines[2].text.starts_with("> /wujiecmd7"),
        "{:?}",
        lines[2].text
    );
    assert_eq!(m.lines(1, 1).len(), 1);
    assert!(m.lines(0, 0).iter().all(|l| l.text.is_empty()));
}

#[test]
fn create_issue_card_wraps_and_truncates_the_plan() {
    let plan = "Step one: parse the input bytes.\nStep two: draw the menu below the input box. \
                Step three: write tests for every size.";
    let card = IssueCard::create_issue("Menu in the terminal", plan);
    let all = card.lines(30, 40);
    let texts: Vec<&str> = all.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(texts[0], "New issue: Menu in the termin…");
    assert!(
        texts.iter().all(|t| wujie_term::text::width(t) <= 30),
        "{texts:#?}"
    );
    assert_eq!(
        texts[texts.len() - 3..],
        [
            "> Create the issue and contin…",
            "  Back to the discussion",
            "  Cancel",
        ]
    );
    assert!(texts.contains(&"  Step one: parse the input"));

    // Six rows: the title saying which description lines show, the first two of them, three
    // choices.
    let short = card.lines(30, 6);
    assert_eq!(short.len(), 6);
    let total = texts.len() - 4;
    assert!(
        short[0].text.starts_with("New issue: Menu"),
        "{:?}",
        short[0].text
    );
    assert!(
        short[0].text.ends_with(&format!(" (1-2/{total} PgDn)")),
        "{:?}",
        short[0].text
    );
    assert_eq!(short[1].text, "  Step one: parse the input");
    assert_eq!(short[3].style, LineStyle::Selected);

    // Fewer rows than choices: the selected choice stays visible.
    let mut card = card;
    card.handle_key(Key::Down);
    let tiny = card.lines(30, 1);
    assert_eq!(tiny.len(), 1);
    assert_eq!(tiny[0].text, "> Back to the discussion");
}

#[test]
fn create_issue_card_choices() {
    let mut card = IssueCard::create_issue("t", "d");
    assert_eq!(
        card.handle_key(Key::Enter),
        CardUpdate::Decided(CardChoice::Create)
    );
    assert_eq!(card.handle_key(Key::Up), CardUpdate::Redraw);
    assert_eq!(card.selected(), CardChoice::Cancel);
    assert_eq!(
        card.handle_key(Key::Enter),
        CardUpdate::Decided(CardChoice::Cancel)
    );
    assert_eq!(card.handle_key(Key::Tab), CardUpdate::Redraw);
    assert_eq!(card.handle_key(Key::Tab), CardUpdate::Redraw);
    assert_eq!(
        card.handle_key(Key::Enter),
        CardUpdate::Decided(CardChoice::BackToDiscussion)
    );
    assert_eq!(
        card.handle_key(Key::Esc),
        CardUpdate::Decided(CardChoice::BackToDiscussion)
    );
    assert_eq!(
        card.handle_key(Key::CtrlC),
        CardUpdate::Decided(CardChoice::Cancel)
    );
    assert_eq!(card.handle_key(Key::Char('x')), CardUpdate::Unchanged);
}

#[test]
fn native_handoff_card_has_no_way_back() {
    let mut card = IssueCard::native_handoff("Plan", "the plan", false);
    let texts: Vec<String> = card.lines(60, 10).into_iter().map(|l| l.text).collect();
    assert!(
        texts.iter().any(|t| t.contains("clears the context")),
        "{texts:#?}"
    );
    assert!(texts.iter().all(|t| !t.contains("Back to the discussion")));
    for key in [Key::Esc, Key::Up, Key::Down, Key::Tab, Key::Char('q')] {
        assert_eq!(card.handle_key(key), CardUpdate::Unchanged, "{key:?}");
    }
    assert_eq!(
        card.handle_key(Key::Enter),
        CardUpdate::Decided(CardChoice::Create)
    );
    assert_eq!(
        card.handle_key(Key::CtrlC),
        CardUpdate::Decided(CardChoice::Cancel)
    );
    let keep = IssueCard::native_handoff("Plan", "", true);
    assert!(
        keep.lines(80, 10)
            .iter()
            .any(|l| l.text.contains("keeps the current context"))
    );
}

#[test]
fn untrusted_text_cannot_inject_escapes() {
    let card = IssueCard::create_issue("\x1b[2Jtitle\x07", "line\x1b]0;x\x07\r\nnext\x1b[H");
    for line in card.lines(40, 20) {
        assert!(!line.text.chars().any(char::is_control), "{:?}", line.text);
    }
    let m = Menu::new(vec![MenuItem::new("/wujie\x1b[31mx", "\x1b[2J")], "");
    for line in m.lines(40, 5) {
        assert!(!line.text.chars().any(char::is_control), "{:?}", line.text);
    }
}

#[test]
fn a_notice_wraps_fits_and_is_cut_with_an_ellipsis() {
    use wujie_term::{notice_lines, text};
    let short = notice_lines("created WUJ-3", 80, 3);
    assert_eq!(short.len(), 1);
    assert_eq!(short[0].text, "wujie: created WUJ-3");
    assert_eq!(short[0].style, LineStyle::Title);

    let long = "created WUJ-3 “把存储换成 SQLite 并启用 WAL 模式”; the agent continues there (run 0193c0de-aaaa-bbbb-cccc-0123456789ab).";
    for cols in [1u16, 5, 20, 33] {
        for rows in [1u16, 2, 3] {
            let lines = notice_lines(long, cols, rows);
            assert!(!lines.is_empty() && lines.len() <= usize::from(rows));
            assert!(
                lines
                    .iter()
                    .all(|l| text::width(&l.text) <= usize::from(cols)),
                "{cols} columns: {lines:?}"
            );
        }
    }
    let cut = notice_lines(long, 20, 2);
    assert!(cut[1].text.ends_with('…'), "{cut:?}");
    // A control character in a message never reaches the terminal.
    assert!(!notice_lines("a\x1b[2Jb", 80, 1)[0].text.contains('\x1b'));
}

#[test]
fn ctrl_u_clears_the_menus_filter_then_gives_the_key_to_the_adapter() {
    let mut menu = Menu::new(default_commands(), "");
    assert_eq!(menu.handle_key(Key::Char('c')), MenuUpdate::Redraw);
    assert_eq!(menu.handle_key(Key::CtrlU), MenuUpdate::Redraw);
    assert_eq!(menu.filter(), "/wujie");
    assert_eq!(
        menu.handle_key(Key::CtrlU),
        MenuUpdate::Closed(MenuOutcome::Dismissed {
            forward: b"\x15".to_vec()
        })
    );
    assert_eq!(Key::decode(b"\x15"), Key::CtrlU);
}

#[test]
fn a_card_body_that_does_not_fit_scrolls_by_pages_and_stays_in_bounds() {
    let plan: String = (1..=7).map(|i| format!("line {i}\n")).collect();
    let body = |card: &IssueCard| -> Vec<String> {
        card.lines(40, 7)
            .iter()
            .filter(|l| l.style == LineStyle::Dim)
            .map(|l| l.text.trim().to_owned())
            .collect()
    };
    let mut card = IssueCard::create_issue("Scroll", plan.as_str());
    assert_eq!(body(&card), ["line 1", "line 2", "line 3"]);
    assert!(card.lines(40, 7)[0].text.ends_with("(1-3/7 PgDn)"));
    assert_eq!(card.handle_key(Key::PageDown), CardUpdate::Redraw);
    assert_eq!(body(&card), ["line 4", "line 5", "line 6"]);
    assert!(card.lines(40, 7)[0].text.ends_with("(4-6/7 PgUp/PgDn)"));
    assert_eq!(card.handle_key(Key::PageDown), CardUpdate::Redraw);
    assert_eq!(body(&card), ["line 5", "line 6", "line 7"]);
    assert_eq!(card.handle_key(Key::PageDown), CardUpdate::Unchanged);
    // Up and Down still move between the choices here.
    assert_eq!(card.handle_key(Key::Down), CardUpdate::Redraw);
    assert_eq!(card.selected(), wujie_term::CardChoice::BackToDiscussion);
    assert_eq!(card.handle_key(Key::PageUp), CardUpdate::Redraw);
    assert_eq!(card.handle_key(Key::PageUp), CardUpdate::Redraw);
    assert_eq!(body(&card), ["line 1", "line 2", "line 3"]);
    assert_eq!(card.handle_key(Key::PageUp), CardUpdate::Unchanged);

    // The handoff card has no choices to move between: arrows scroll by a line.
    let mut handoff = IssueCard::native_handoff("Scroll", plan.as_str(), true);
    let first = |card: &IssueCard| card.lines(40, 6)[1].text.trim().to_owned();
    assert_eq!(first(&handoff), "line 1");
    assert_eq!(handoff.handle_key(Key::Down), CardUpdate::Redraw);
    assert_eq!(first(&handoff), "line 2");
    assert_eq!(handoff.handle_key(Key::Up), CardUpdate::Redraw);
    assert_eq!(first(&handoff), "line 1");
    assert_eq!(Key::decode(b"\x1b[5~"), Key::PageUp);
    assert_eq!(Key::decode(b"\x1b[6~"), Key::PageDown);
}

proptest::proptest! {
    /// At any size down to 1x1 (and 0), with any text and any keys: no panic, never more rows
    /// than given, every line within the width; with room for the title, a body line and the
    /// choices, the title and the first body line shown show, however the body was scrolled
    /// back to the top.
    #[test]
    fn a_card_lays_out_at_any_size(
        cols in 0u16..130,
        rows in 0u16..40,
        title in "\\PC{0,60}",
        plan in "[a-z \n]{0,400}",
        keys in proptest::collection::vec(0u8..6, 0..12),
        handoff in proptest::bool::ANY,
    ) {
        let mut card = if handoff {
            IssueCard::native_handoff(title.as_str(), plan.as_str(), false)
        } else {
            IssueCard::create_issue(title.as_str(), plan.as_str())
        };
        for k in keys {
            let key = [Key::Up, Key::Down, Key::PageUp, Key::PageDown, Key::Tab, Key::Other]
                [usize::from(k)];
            let _ = card.lines(cols, rows);
            let _ = card.handle_key(key);
        }
        let lines = card.lines(cols, rows);
        proptest::prop_assert!(lines.len() <= usize::from(rows.max(1)));
        for line in &lines {
            proptest::prop_assert!(wujie_term::text::width(&line.text) <= usize::from(cols));
        }
        for _ in 0..100 {
            let _ = card.handle_key(Key::PageUp);
            let _ = card.lines(cols, rows);
        }
        let body = wujie_term::text::wrap(&plan, usize::from(cols).saturating_sub(2));
        if rows >= card.least_rows() && cols >= 40 && !body.is_empty() {
            let lines = card.lines(cols, rows);
            proptest::prop_assert_eq!(lines[0].style, LineStyle::Title);
            let heading = if handoff { "Hand off" } else { "New issue" };
            proptest::prop_assert!(lines[0].text.starts_with(heading), "{:?}", lines[0].text);
            let first = wujie_term::text::fit(&format!("  {}", body[0]), usize::from(cols));
            proptest::prop_assert_eq!(lines[1].text.trim_end(), first.trim_end());
        }
    }
}
