//! What the relay is doing with the user's terminal, as one state at a time ([`Mode`]).
//!
//! Each mode carries only what is true in it: an area exists only while it is drawn (or
//! waiting to be drawn again after a resize), a deadline only while something is awaited.
//! The transitions are pure: each takes the mode and returns the next one with what the relay
//! has to do about it (take an area down, ask the terminal where the cursor is, continue the
//! adapter); the relay ([`crate::relay`]) does the drawing and the signalling. The adapter's
//! output is held back in every mode but [`Mode::Passing`] ([`Mode::holds_output`]).

use std::time::Duration;

use tokio::time::Instant;
use wujie_term::{
    CARD_MAX_ROWS, IssueCard, MENU_MAX_ROWS, Menu, NOTICE_MAX_ROWS, Overlay, OverlayLine,
    notice_lines,
};

/// How long the terminal may take to report the cursor after a resize.
pub const REWRAP_REPORT_WAIT: Duration = Duration::from_millis(800);

/// What an area shows.
pub enum Shown {
    Menu(Menu),
    Card(IssueCard),
    /// A notice, closed at `until` or by the user's next key.
    Notice {
        message: String,
        until: Instant,
    },
}

impl Shown {
    /// The rows it would like at most, and the rows it makes do with rather than take a row of
    /// the adapter's screen.
    pub fn rows(&self) -> (u16, u16) {
        match self {
            Shown::Menu(_) => (MENU_MAX_ROWS, 1),
            Shown::Card(card) => (CARD_MAX_ROWS, card.least_rows()),
            Shown::Notice { .. } => (NOTICE_MAX_ROWS, 1),
        }
    }

    /// Its content on a terminal `cols` wide, for an area of `rows` rows.
    pub fn lines(&self, cols: u16, rows: u16) -> Vec<OverlayLine> {
        match self {
            Shown::Menu(menu) => menu.lines(cols, rows),
            Shown::Card(card) => card.lines(cols, rows),
            Shown::Notice { message, .. } => notice_lines(message, cols, rows),
        }
    }
}

/// An area drawn under the adapter's cursor: what it shows, and where it is on the screen.
pub struct Area {
    pub shown: Shown,
    pub overlay: Overlay,
}

/// What the relay is doing with the user's terminal.
pub enum Mode {
    /// The adapter's output goes through; nothing of the host's is on the screen.
    Passing,
    /// An area is open under the adapter's cursor.
    Open(Area),
    /// The window changed size with the area open: the terminal may have rewrapped its rows and
    /// moved everything, so the host asked where the cursor went and waits for the answer
    /// until `due`; then the area is taken down, the adapter repaints for the new size, and
    /// the area opens again under that.
    Rewrapping { area: Area, due: Instant },
    /// `wujie` stopped itself (Ctrl+Z, SIGTSTP), the adapter with it, until SIGCONT.
    Stopped,
    /// `wujie` was continued: the host asked where the cursor is now (the shell printed
    /// meanwhile) and waits for the answer until `due`; then the adapter is continued.
    Resuming { due: Instant },
}

/// What follows a change of the window's size.
pub enum Resized {
    /// Nothing is open: the adapter redraws for the new size by itself.
    Nothing,
    /// Ask the terminal where the cursor went ([`Mode::Rewrapping`] waits for the answer).
    AskCursor,
    /// Take the area down where it was drawn and open it again once the adapter repainted for
    /// the new size (no terminal to ask).
    Reopen(Area),
}

/// What follows the terminal's answer to the host's question where the cursor is, or the end
/// of the wait for it.
pub enum Answered {
    /// Nothing waited for it (an answer that came late).
    Nothing,
    /// The shadow screen starts again at the cursor and the adapter is continued.
    Resume,
    /// The area is taken down from the cursor (or where it was drawn, without an answer) and
    /// opened again once the adapter repainted for the new size.
    Reopen(Area),
}

/// What came due.
#[derive(Debug, PartialEq, Eq)]
pub enum Due {
    /// The notice shown has been up long enough.
    NoticeEnd,
    /// The terminal did not say where the cursor is in time.
    NoAnswer,
}

impl Mode {
    /// Whether the adapter's output waits: in every mode but [`Mode::Passing`].
    pub fn holds_output(&self) -> bool {
        !matches!(self, Mode::Passing)
    }

    /// Whether the host waits for the terminal to say where the cursor is: keys typed
    /// meanwhile wait too.
    pub fn waits_for_terminal(&self) -> bool {
        matches!(self, Mode::Rewrapping { .. } | Mode::Resuming { .. })
    }

    /// Whether the host knows where the cursor is and `wujie` runs, so that it may draw a card
    /// (taking an open area down first).
    pub fn can_draw(&self) -> bool {
        matches!(self, Mode::Passing | Mode::Open(_))
    }

    /// The area open now, if one is.
    pub fn area_mut(&mut self) -> Option<&mut Area> {
        match self {
            Mode::Open(area) => Some(area),
            _ => None,
        }
    }

    /// Whether the area open now is a notice (the user's next key closes it).
    pub fn shows_notice(&self) -> bool {
        matches!(
            self,
            Mode::Open(Area {
                shown: Shown::Notice { .. },
                ..
            })
        )
    }

    /// When something comes due in this mode: a notice's end, the end of a wait for the
    /// terminal's answer.
    pub fn deadline(&self) -> Option<Instant> {
        match self {
            Mode::Open(Area {
                shown: Shown::Notice { until, .. },
                ..
            }) => Some(*until),
            Mode::Rewrapping { due, .. } | Mode::Resuming { due } => Some(*due),
            Mode::Passing | Mode::Open(_) | Mode::Stopped => None,
        }
    }

    /// What is due at `now`, if anything.
    pub fn due(&self, now: Instant) -> Option<Due> {
        let deadline = self.deadline()?;
        if deadline > now {
            return None;
        }
        Some(match self {
            Mode::Open(_) => Due::NoticeEnd,
            _ => Due::NoAnswer,
        })
    }

    /// The open area closes (a choice, a decision, a notice's end, a card asked for): the
    /// output passes again, and the area comes back to be taken down. Any other mode stays.
    pub fn close(self) -> (Mode, Option<Area>) {
        match self {
            Mode::Open(area) => (Mode::Passing, Some(area)),
            other => (other, None),
        }
    }

    /// The window changed size. An area (open, or still waiting for the answer about an
    /// earlier change) is taken down and opened again at the new size; on an `interactive`
    /// terminal only once it said where the cursor went, since it may have rewrapped the
    /// area's rows.
    pub fn resized(self, interactive: bool, now: Instant) -> (Mode, Resized) {
        let area = match self {
            Mode::Open(area) | Mode::Rewrapping { area, .. } => area,
            other => return (other, Resized::Nothing),
        };
        if interactive {
            let due = now + REWRAP_REPORT_WAIT;
            (Mode::Rewrapping { area, due }, Resized::AskCursor)
        } else {
            // Passing until it opens again (the output stays held meanwhile).
            (Mode::Passing, Resized::Reopen(area))
        }
    }

    /// The terminal said where the cursor is, or the wait for it ended.
    pub fn answered(self) -> (Mode, Answered) {
        match self {
            Mode::Resuming { .. } => (Mode::Passing, Answered::Resume),
            // Passing until it opens again (the output stays held meanwhile).
            Mode::Rewrapping { area, .. } => (Mode::Passing, Answered::Reopen(area)),
            other => (other, Answered::Nothing),
        }
    }

    /// `wujie` stops itself: an area, open or waiting to open again, is taken down.
    pub fn stop(self) -> (Mode, Option<Area>) {
        (Mode::Stopped, self.into_area())
    }

    /// `wujie` was continued (after its own stop or anyone else's: the terminal may show
    /// anything now, so an area still up is taken down). With a shadow screen (`placed`) the
    /// host asks where the cursor is before the adapter goes on; without one it goes on now.
    pub fn continued(self, placed: bool, now: Instant) -> (Mode, Option<Area>) {
        let area = self.into_area();
        let mode = if placed {
            Mode::Resuming {
                due: now + crate::start::REPORT_WAIT,
            }
        } else {
            Mode::Passing
        };
        (mode, area)
    }

    /// The adapter is gone: the area still up, to take down.
    pub fn end(self) -> Option<Area> {
        self.into_area()
    }

    fn into_area(self) -> Option<Area> {
        match self {
            Mode::Open(area) | Mode::Rewrapping { area, .. } => Some(area),
            Mode::Passing | Mode::Stopped | Mode::Resuming { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use wujie_term::{CursorPos, LineStyle, Placement, TermSize, default_commands};

    use super::*;

    const SIZE: TermSize = TermSize { cols: 80, rows: 24 };

    fn area(shown: Shown) -> Area {
        let place = Placement::new(SIZE, CursorPos { row: 5, col: 2 });
        let lines = [OverlayLine::new("x", LineStyle::Plain)];
        let overlay = Overlay::open(place, &lines, &mut Vec::new()).unwrap();
        Area { shown, overlay }
    }

    fn menu() -> Shown {
        Shown::Menu(Menu::new(default_commands(), ""))
    }

    fn notice(until: Instant) -> Shown {
        Shown::Notice {
            message: "saved".into(),
            until,
        }
    }

    fn card() -> Shown {
        Shown::Card(IssueCard::create_issue("title", "description"))
    }

    fn name(mode: &Mode) -> &'static str {
        match mode {
            Mode::Passing => "passing",
            Mode::Open(Area {
                shown: Shown::Menu(_),
                ..
            }) => "menu",
            Mode::Open(Area {
                shown: Shown::Card(_),
                ..
            }) => "card",
            Mode::Open(Area {
                shown: Shown::Notice { .. },
                ..
            }) => "notice",
            Mode::Rewrapping { .. } => "rewrapping",
            Mode::Stopped => "stopped",
            Mode::Resuming { .. } => "resuming",
        }
    }

    /// One mode of each kind, with a menu for the areas.
    fn every_mode(now: Instant) -> Vec<Mode> {
        vec![
            Mode::Passing,
            Mode::Open(area(menu())),
            Mode::Rewrapping {
                area: area(menu()),
                due: now,
            },
            Mode::Stopped,
            Mode::Resuming { due: now },
        ]
    }

    #[test]
    fn output_passes_only_while_nothing_is_up_or_awaited() {
        let now = Instant::now();
        let held: Vec<_> = every_mode(now)
            .iter()
            .map(|m| (name(m), m.holds_output()))
            .collect();
        assert_eq!(
            held,
            [
                ("passing", false),
                ("menu", true),
                ("rewrapping", true),
                ("stopped", true),
                ("resuming", true)
            ]
        );
    }

    #[test]
    fn keys_wait_and_cards_stay_away_while_the_terminal_owes_the_cursor() {
        let now = Instant::now();
        let modes: Vec<_> = every_mode(now)
            .iter()
            .map(|m| (name(m), m.waits_for_terminal(), m.can_draw()))
            .collect();
        assert_eq!(
            modes,
            [
                ("passing", false, true),
                ("menu", false, true),
                ("rewrapping", true, false),
                ("stopped", false, false),
                ("resuming", true, false)
            ]
        );
    }

    #[test]
    fn closing_gives_the_open_area_back_and_leaves_other_modes_alone() {
        let now = Instant::now();
        for shown in [menu(), card(), notice(now)] {
            let (mode, area) = Mode::Open(area(shown)).close();
            assert_eq!(name(&mode), "passing");
            assert!(area.is_some());
        }
        for mode in every_mode(now).into_iter().filter(|m| name(m) != "menu") {
            let before = name(&mode);
            let (mode, area) = mode.close();
            assert_eq!(name(&mode), before);
            assert!(area.is_none(), "{before}");
        }
    }

    #[test]
    fn a_resize_with_an_area_up_asks_the_terminal_where_the_cursor_went() {
        let now = Instant::now();
        let (mode, then) = Mode::Open(area(card())).resized(true, now);
        assert!(matches!(then, Resized::AskCursor));
        let Mode::Rewrapping { area, due } = mode else {
            panic!("{}", name(&mode))
        };
        assert_eq!(due, now + REWRAP_REPORT_WAIT);
        assert!(matches!(area.shown, Shown::Card(_)));

        // Another change before the answer: asked again, waiting from now on.
        let later = now + Duration::from_millis(300);
        let (mode, then) = Mode::Rewrapping { area, due }.resized(true, later);
        assert!(matches!(then, Resized::AskCursor));
        assert!(matches!(mode, Mode::Rewrapping { due, .. } if due == later + REWRAP_REPORT_WAIT));
    }

    #[test]
    fn a_resize_without_a_terminal_to_ask_opens_the_area_again_at_once() {
        let (mode, then) = Mode::Open(area(menu())).resized(false, Instant::now());
        assert_eq!(name(&mode), "passing");
        assert!(matches!(
            then,
            Resized::Reopen(Area {
                shown: Shown::Menu(_),
                ..
            })
        ));
    }

    #[test]
    fn a_resize_with_nothing_up_changes_no_mode() {
        let now = Instant::now();
        for mode in [Mode::Passing, Mode::Stopped, Mode::Resuming { due: now }] {
            let before = name(&mode);
            let (mode, then) = mode.resized(true, now);
            assert_eq!(name(&mode), before);
            assert!(matches!(then, Resized::Nothing));
        }
    }

    #[test]
    fn the_answer_resumes_or_reopens_and_a_late_one_changes_nothing() {
        let now = Instant::now();
        let (mode, then) = Mode::Resuming { due: now }.answered();
        assert_eq!(name(&mode), "passing");
        assert!(matches!(then, Answered::Resume));

        let rewrapping = Mode::Rewrapping {
            area: area(notice(now)),
            due: now,
        };
        let (mode, then) = rewrapping.answered();
        assert_eq!(name(&mode), "passing");
        assert!(matches!(
            then,
            Answered::Reopen(Area {
                shown: Shown::Notice { .. },
                ..
            })
        ));

        for mode in [Mode::Passing, Mode::Open(area(menu())), Mode::Stopped] {
            let before = name(&mode);
            let (mode, then) = mode.answered();
            assert_eq!(name(&mode), before);
            assert!(matches!(then, Answered::Nothing));
        }
    }

    #[test]
    fn a_stop_takes_any_area_down() {
        let now = Instant::now();
        let taken: Vec<_> = every_mode(now)
            .into_iter()
            .map(|mode| {
                let before = name(&mode);
                let (mode, area) = mode.stop();
                assert_eq!(name(&mode), "stopped");
                (before, area.is_some())
            })
            .collect();
        assert_eq!(
            taken,
            [
                ("passing", false),
                ("menu", true),
                ("rewrapping", true),
                ("stopped", false),
                ("resuming", false)
            ]
        );
    }

    #[test]
    fn a_continue_asks_where_the_cursor_is_when_there_is_a_shadow() {
        let now = Instant::now();
        for mode in every_mode(now) {
            let before = name(&mode);
            let had_area = matches!(mode, Mode::Open(_) | Mode::Rewrapping { .. });
            let (mode, area) = mode.continued(true, now);
            assert!(
                matches!(mode, Mode::Resuming { due } if due == now + crate::start::REPORT_WAIT),
                "{before}"
            );
            assert_eq!(area.is_some(), had_area, "{before}");
        }
        let (mode, area) = Mode::Stopped.continued(false, now);
        assert_eq!(name(&mode), "passing");
        assert!(area.is_none());
    }

    #[test]
    fn what_comes_due_is_a_notice_end_or_a_missing_answer() {
        let now = Instant::now();
        let soon = now + Duration::from_millis(5);
        let notice_mode = Mode::Open(area(notice(soon)));
        assert_eq!(notice_mode.deadline(), Some(soon));
        assert_eq!(notice_mode.due(now), None);
        assert_eq!(notice_mode.due(soon), Some(Due::NoticeEnd));

        let resuming = Mode::Resuming { due: soon };
        assert_eq!(resuming.due(now), None);
        assert_eq!(resuming.due(soon), Some(Due::NoAnswer));
        let rewrapping = Mode::Rewrapping {
            area: area(card()),
            due: soon,
        };
        assert_eq!(rewrapping.due(soon), Some(Due::NoAnswer));

        for mode in [Mode::Passing, Mode::Open(area(menu())), Mode::Stopped] {
            assert_eq!(mode.deadline(), None, "{}", name(&mode));
        }
    }

    #[test]
    fn the_end_takes_down_whatever_area_is_still_up() {
        let now = Instant::now();
        let left: Vec<_> = every_mode(now)
            .into_iter()
            .map(|mode| (name(&mode), mode.end().is_some()))
            .collect();
        assert_eq!(
            left,
            [
                ("passing", false),
                ("menu", true),
                ("rewrapping", true),
                ("stopped", false),
                ("resuming", false)
            ]
        );
    }

    #[test]
    fn each_area_asks_for_its_own_rows() {
        let card = IssueCard::create_issue("title", "description");
        let least = card.least_rows();
        assert_eq!(Shown::Card(card).rows(), (CARD_MAX_ROWS, least));
        assert_eq!(menu().rows(), (MENU_MAX_ROWS, 1));
        assert_eq!(notice(Instant::now()).rows(), (NOTICE_MAX_ROWS, 1));
        assert_eq!(
            notice(Instant::now()).lines(40, 3),
            notice_lines("saved", 40, 3)
        );
    }
}
