//! The issue confirmation card shown in the overlay.
//!
//! Two kinds: after `/wujiecreateissue` the user can create the issue and continue in the
//! current context, go back to the discussion, or cancel, which also goes back to it (Esc and
//! Ctrl+C too: the adapter keeps running). For an adapter's native `handoff_ready` there is no
//! way back to the discussion: Enter creates, Ctrl+C cancels and ends the adapter.
//!
//! The card always shows its title and the first lines of its body, whatever the height it
//! got; a body that does not fit scrolls with PageUp/PageDown (and, on the handoff card, which
//! has no choices to move between, with Up/Down too), and the title row says which lines show.

use std::cell::Cell;

use crate::keys::Key;
use crate::overlay::{LineStyle, OverlayLine};
use crate::text;

/// Most rows the card asks for.
pub const CARD_MAX_ROWS: u16 = 12;

/// Which card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardKind {
    /// Promotion by `/wujiecreateissue`.
    CreateIssue,
    /// The adapter's native handoff; `keep_context` is true for mode `current_context`, false
    /// for `native_clear`.
    NativeHandoff { keep_context: bool },
}

/// A decision on the card.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardChoice {
    /// Create the issue (and the run) and continue.
    Create,
    /// Close the card and keep discussing (only for [`CardKind::CreateIssue`]).
    BackToDiscussion,
    /// Cancel: on the `/wujiecreateissue` card the card closes and the discussion goes on; for
    /// a native handoff the host answers `accepted=false` and ends the adapter.
    Cancel,
}

/// What a key did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardUpdate {
    Unchanged,
    /// The selection changed: redraw with [`IssueCard::lines`].
    Redraw,
    /// Done: close the overlay and act on the choice.
    Decided(CardChoice),
}

const CREATE_ISSUE_CHOICES: &[CardChoice] = &[
    CardChoice::Create,
    CardChoice::BackToDiscussion,
    CardChoice::Cancel,
];

/// The card state.
#[derive(Debug, Clone)]
pub struct IssueCard {
    kind: CardKind,
    title: String,
    description: String,
    selected: usize,
    /// The first body line shown.
    scroll: usize,
    /// The body as last drawn: how many lines showed and how many it has (a page, and how far
    /// scrolling may go).
    shown: Cell<BodyView>,
}

#[derive(Debug, Clone, Copy, Default)]
struct BodyView {
    rows: usize,
    total: usize,
}

impl IssueCard {
    /// The card for `/wujiecreateissue`, showing the issue `title` and a preview of
    /// `description` (the latest plan).
    pub fn create_issue(title: impl Into<String>, description: impl Into<String>) -> Self {
        Self::new(CardKind::CreateIssue, title.into(), description.into())
    }

    /// The card for a native `handoff_ready`.
    pub fn native_handoff(
        title: impl Into<String>,
        description: impl Into<String>,
        keep_context: bool,
    ) -> Self {
        Self::new(
            CardKind::NativeHandoff { keep_context },
            title.into(),
            description.into(),
        )
    }

    fn new(kind: CardKind, title: String, description: String) -> Self {
        Self {
            kind,
            title,
            description,
            selected: 0,
            scroll: 0,
            shown: Cell::new(BodyView::default()),
        }
    }

    /// The fewest rows the card is drawn in when more cannot be had without moving rows the
    /// host cannot draw again: the title, the body's first line and the choices.
    pub fn least_rows(&self) -> u16 {
        u16::try_from(self.choice_lines(0).len() + 2).unwrap_or(u16::MAX)
    }

    pub fn kind(&self) -> CardKind {
        self.kind
    }

    /// The highlighted choice.
    pub fn selected(&self) -> CardChoice {
        match self.kind {
            CardKind::CreateIssue => CREATE_ISSUE_CHOICES
                .get(self.selected)
                .copied()
                .unwrap_or(CardChoice::Create),
            CardKind::NativeHandoff { .. } => CardChoice::Create,
        }
    }

    /// Handles one key.
    pub fn handle_key(&mut self, key: Key) -> CardUpdate {
        match (self.kind, key) {
            (_, Key::Enter) => CardUpdate::Decided(self.selected()),
            (_, Key::CtrlC) => CardUpdate::Decided(CardChoice::Cancel),
            (CardKind::CreateIssue, Key::Esc) => CardUpdate::Decided(CardChoice::BackToDiscussion),
            (CardKind::CreateIssue, Key::Up | Key::BackTab) => {
                let n = CREATE_ISSUE_CHOICES.len();
                self.selected = (self.selected + n - 1) % n;
                CardUpdate::Redraw
            }
            (CardKind::CreateIssue, Key::Down | Key::Tab) => {
                self.selected = (self.selected + 1) % CREATE_ISSUE_CHOICES.len();
                CardUpdate::Redraw
            }
            (_, Key::PageUp) => self.scroll_body(-1, true),
            (_, Key::PageDown) => self.scroll_body(1, true),
            (CardKind::NativeHandoff { .. }, Key::Up) => self.scroll_body(-1, false),
            (CardKind::NativeHandoff { .. }, Key::Down) => self.scroll_body(1, false),
            _ => CardUpdate::Unchanged,
        }
    }

    /// Moves the body by a page (`page`) or a line, `direction` -1 up or 1 down, within what
    /// the last drawing showed.
    fn scroll_body(&mut self, direction: i8, page: bool) -> CardUpdate {
        let BodyView { rows, total } = self.shown.get();
        let step = if page { rows.max(1) } else { 1 };
        let last = total.saturating_sub(rows);
        let scroll = if direction < 0 {
            self.scroll.min(last).saturating_sub(step)
        } else {
            self.scroll.saturating_add(step).min(last)
        };
        if scroll == self.scroll {
            return CardUpdate::Unchanged;
        }
        self.scroll = scroll;
        CardUpdate::Redraw
    }

    /// The lines to draw in `cols` columns and at most `max_rows` rows: a title, the wrapped
    /// description from the line scrolled to and the choices. A description that does not fit
    /// shows as many lines as there is room for, and the title row ends with which lines show
    /// and the keys that scroll (`(1-3/9 PgUp/PgDn)`). When rows are short the description
    /// goes first, then the title; the selected choice always stays visible.
    pub fn lines(&self, cols: u16, max_rows: u16) -> Vec<OverlayLine> {
        let cols = usize::from(cols);
        let rows = usize::from(max_rows.max(1));
        let choices = self.choice_lines(cols);
        if rows < choices.len() + 1 {
            self.shown.set(BodyView::default());
            let selected = match self.kind {
                CardKind::CreateIssue => self.selected,
                CardKind::NativeHandoff { .. } => 0,
            };
            return choices.into_iter().skip(selected).take(rows).collect();
        }
        let heading = match self.kind {
            CardKind::CreateIssue => "New issue: ",
            CardKind::NativeHandoff { .. } => "Hand off to a new issue: ",
        };
        let room = rows - choices.len() - 1;
        let wrapped = text::wrap(&self.description, cols.saturating_sub(2));
        let first = self.scroll.min(wrapped.len().saturating_sub(room));
        let body = &wrapped[first..(first + room).min(wrapped.len())];
        self.shown.set(BodyView {
            rows: body.len(),
            total: wrapped.len(),
        });
        let title = format!("{heading}{}", self.title);
        let mut title = match scroll_keys(first, body.len(), wrapped.len()) {
            None => text::fit(&title, cols),
            Some(keys) => {
                // The title keeps at least half the row (or all of itself); the line numbers
                // go first when there is no room for them.
                let keep = text::width(&title).min(cols / 2);
                let full = format!(
                    " ({}-{}/{} {keys})",
                    first + 1,
                    first + body.len(),
                    wrapped.len()
                );
                let hint = if cols.saturating_sub(text::width(&full)) >= keep {
                    full
                } else {
                    format!(" ({keys})")
                };
                let mut shown = text::fit(&title, cols.saturating_sub(text::width(&hint)));
                shown.push_str(&hint);
                shown
            }
        };
        title = text::fit(&title, cols);
        let mut lines = vec![OverlayLine::new(title, LineStyle::Title)];
        for line in body {
            lines.push(OverlayLine::new(
                text::fit(&format!("  {line}"), cols),
                LineStyle::Dim,
            ));
        }
        lines.extend(choices);
        lines
    }

    fn choice_lines(&self, cols: usize) -> Vec<OverlayLine> {
        match self.kind {
            CardKind::CreateIssue => CREATE_ISSUE_CHOICES
                .iter()
                .enumerate()
                .map(|(i, choice)| {
                    let label = match choice {
                        CardChoice::Create => "Create the issue and continue in this context",
                        CardChoice::BackToDiscussion => "Back to the discussion",
                        CardChoice::Cancel => "Cancel",
                    };
                    if i == self.selected {
                        OverlayLine::new(
                            text::fit(&format!("> {label}"), cols),
                            LineStyle::Selected,
                        )
                    } else {
                        OverlayLine::new(text::fit(&format!("  {label}"), cols), LineStyle::Plain)
                    }
                })
                .collect(),
            CardKind::NativeHandoff { keep_context } => {
                let mode = if keep_context {
                    "keeps the current context"
                } else {
                    "clears the context"
                };
                vec![
                    OverlayLine::new(
                        text::fit(&format!("> Enter: create the issue and run ({mode})"), cols),
                        LineStyle::Selected,
                    ),
                    OverlayLine::new(
                        text::fit("  Ctrl+C: cancel and end this session", cols),
                        LineStyle::Dim,
                    ),
                ]
            }
        }
    }
}

/// The keys that scroll a body of `total` lines showing `shown` from line `first` (0-based):
/// none when it all shows.
fn scroll_keys(first: usize, shown: usize, total: usize) -> Option<&'static str> {
    let (above, below) = (first > 0, first + shown < total);
    match (above, below) {
        (false, false) => None,
        (false, true) => Some("PgDn"),
        (true, false) => Some("PgUp"),
        (true, true) => Some("PgUp/PgDn"),
    }
}
