//! The issue confirmation card shown in the overlay.
//!
//! Two kinds: after `/wujiecreateissue` the user can create the issue and continue in the
//! current context, go back to the discussion, or cancel, which also goes back to it (Esc and
//! Ctrl+C too: the adapter keeps running). For an adapter's native `handoff_ready` there is no
//! way back to the discussion: Enter creates, Ctrl+C cancels and ends the adapter.

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
        }
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
            _ => CardUpdate::Unchanged,
        }
    }

    /// The lines to draw in `cols` columns and at most `max_rows` rows: a title, the wrapped
    /// description (cut with `…` when it does not fit) and the choices. When rows are short the
    /// description goes first, then the title; the selected choice always stays visible.
    pub fn lines(&self, cols: u16, max_rows: u16) -> Vec<OverlayLine> {
        let cols = usize::from(cols);
        let rows = usize::from(max_rows.max(1));
        let choices = self.choice_lines(cols);
        if rows < choices.len() + 1 {
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
        let mut lines = vec![OverlayLine::new(
            text::fit(&format!("{heading}{}", self.title), cols),
            LineStyle::Title,
        )];
        let room = rows - choices.len() - 1;
        let wrapped = text::wrap(&self.description, cols.saturating_sub(2));
        let cut = wrapped.len() > room;
        for (i, line) in wrapped.iter().take(room).enumerate() {
            let shown = if cut && i + 1 == room {
                format!("{}…", text::fit(line, cols.saturating_sub(3)))
            } else {
                line.clone()
            };
            lines.push(OverlayLine::new(
                text::fit(&format!("  {shown}"), cols),
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
