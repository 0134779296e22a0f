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

mod card;
mod keys;
mod line;
mod menu;
mod overlay;
mod scanner;
pub mod text;
mod trigger;

pub use card::{CardChoice, CardKind, CardUpdate, IssueCard};
pub use keys::{Key, erase_chars};
pub use line::{InputLine, LINE_CAP, TRIGGER};
pub use menu::{
    CREATE_ISSUE, MENU_MAX_ROWS, Menu, MenuItem, MenuOutcome, MenuUpdate, default_commands,
};
pub use overlay::{
    CursorPos, LineStyle, MARGIN_ROWS, Overlay, OverlayError, OverlayLine, Placement, TermSize,
};
pub use scanner::{
    CSI_CAP, InputEvent, InputKind, InputScanner, MouseEncoding, PASTE_CAP, Pending, ReplyKind,
    STRING_CAP, StringKind, Terminator,
};
pub use trigger::{ECHO_WAIT, SETTLE_LIMIT, SILENCE, TriggerAction, TriggerDetector};
