//! Pure terminal logic of the interactive terminal host. No I/O, no clock, no panics on input.
//!
//! The host (which owns the real terminal and the adapter PTY) uses it like this:
//! 1. Feed the bytes the user's terminal sends to [`InputScanner::feed`]; forward every event's
//!    bytes to the adapter PTY unchanged (while the overlay is open: typing goes to the
//!    [`Menu`]/[`IssueCard`] via [`Key::decode`], focus and mouse events are dropped, replies
//!    and strings are still forwarded). Call [`InputScanner::flush_idle`] when input stayed
//!    quiet while [`InputScanner::pending`] held something.
//! 2. Apply each event to an [`InputLine`], then report [`InputLine::trigger_query`] to the
//!    [`TriggerDetector`], together with visible adapter output, and poll it at its deadline.
//! 3. On [`TriggerAction::OpenMenu`], hold back adapter output, build a [`Menu`], and draw it
//!    with [`Overlay::open`] at the adapter's cursor (from the host's shadow screen). Redraw
//!    with [`Overlay::redraw`]; close with [`Overlay::close`], then flush held-back output.
//!
//! ```
//! use std::time::Duration;
//! use wujie_term::*;
//!
//! let ms = Duration::from_millis;
//! let (mut scanner, mut line, mut trigger) =
//!     (InputScanner::new(), InputLine::new(), TriggerDetector::new());
//! let mut to_pty = Vec::new();
//! for event in scanner.feed(b"/wujie") {
//!     to_pty.extend_from_slice(&event.bytes); // forward first, then look
//!     line.apply(&event);
//!     trigger.on_input(line.trigger_query(), ms(0));
//! }
//! trigger.on_adapter_output(ms(4)); // the adapter echoed "/wujie"
//! assert_eq!(trigger.next_deadline(), Some(ms(14)));
//! let Some(TriggerAction::OpenMenu { query, .. }) = trigger.poll(ms(14)) else { panic!() };
//!
//! // Hold back adapter output from here on.
//! let mut menu = Menu::new(default_commands(), &query);
//! let size = TermSize { cols: 80, rows: 24 };
//! let place = Placement::new(size, CursorPos { row: 10, col: 8 }); // from the shadow screen
//! let mut to_screen = Vec::new();
//! let rows = MENU_MAX_ROWS.min(Overlay::capacity(size));
//! let mut overlay = Overlay::open(place, &menu.lines(size.cols, rows), &mut to_screen)?;
//!
//! for event in scanner.feed(b"\x1b[B\r") {
//!     if !event.is_typing() {
//!         continue; // replies: forward to the PTY; focus and mouse: drop
//!     }
//!     match menu.handle_key(Key::decode(&event.bytes)) {
//!         MenuUpdate::Unchanged => {}
//!         MenuUpdate::Redraw => {
//!             overlay.redraw(&menu.lines(size.cols, overlay.max_height()), &mut to_screen)
//!         }
//!         MenuUpdate::Closed(outcome) => {
//!             overlay.close(&mut to_screen);
//!             trigger.menu_closed();
//!             if let MenuOutcome::Chosen { command, erase } = outcome {
//!                 assert_eq!(command, CREATE_ISSUE);
//!                 to_pty.extend_from_slice(&erase); // six DEL bytes remove "/wujie"
//!                 line.clear();
//!             }
//!             break;
//!         }
//!     }
//! }
//! assert!(to_pty.ends_with(&[0x7f; 6]));
//! # Ok::<(), OverlayError>(())
//! ```

mod card;
mod editor;
mod inline;
mod keys;
mod line;
mod menu;
mod modes;
mod notice;
mod overlay;
mod report;
mod scanner;
mod screen;
mod sgr;
pub mod text;
mod trigger;

pub use card::{CARD_MAX_ROWS, CardChoice, CardKind, CardUpdate, IssueCard};
pub use editor::{EditorAction, HISTORY_CAP, LineEditor, PROMPT_CAP};
pub use inline::InlineArea;
pub use keys::{Key, erase_chars};
pub use line::{InputLine, LINE_CAP, TRIGGER};
pub use menu::{
    CREATE_ISSUE, MENU_MAX_ROWS, Menu, MenuItem, MenuOutcome, MenuUpdate, default_commands,
    promoted_commands,
};
pub use modes::{KITTY_STACK_CAP, TerminalModes};
pub use notice::{NOTICE_MAX_ROWS, NOTICE_SHOWN, notice_lines};
pub use overlay::{
    CursorPos, LineStyle, MARGIN_MOST_ROWS, MARGIN_ROWS, Overlay, OverlayError, OverlayLine,
    Placement, SCROLL_FOR_ROWS, TermSize,
};
pub use report::{CURSOR_POSITION_QUERY, cursor_report};
pub use scanner::{
    CSI_CAP, InputEvent, InputKind, InputScanner, MouseEncoding, PASTE_CAP, Pending, ReplyKind,
    STRING_CAP, StringKind, Terminator,
};
pub use screen::{Attributes, SavedCursor, ScreenModel};
pub use trigger::{
    ECHO_WAIT, REPAINT_SILENCE, REPAINT_WAIT, SETTLE_LIMIT, SILENCE, TriggerAction, TriggerDetector,
};

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_term;
#[cfg(test)]
#[path = "../tests/term/main.rs"]
mod suite;
