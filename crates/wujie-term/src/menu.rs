//! The command menu opened by the trigger: candidates, selection, narrowing, outcome.
//!
//! Keys typed while the menu is open go to the menu, not to the adapter. The adapter's input
//! line still holds the text written before the menu opened (`/wujie` plus whatever followed
//! it); the outcome says how to reconcile it: erase it after a choice, or forward the keys the
//! menu consumed after a dismissal so the user loses nothing. A filter that matches nothing
//! dismisses the menu; Ctrl+U clears what was typed into it, then (with nothing typed) goes to
//! the adapter, which clears its line.

use crate::keys::{Key, erase_chars};
use crate::line::TRIGGER;
use crate::overlay::{LineStyle, OverlayLine};
use crate::text;

/// The command that turns the discussion into an issue.
pub const CREATE_ISSUE: &str = "/wujiecreateissue";

/// Most candidate rows the menu asks for.
pub const MENU_MAX_ROWS: u16 = 6;

/// One candidate command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MenuItem {
    pub name: String,
    pub description: String,
}

impl MenuItem {
    pub fn new(name: impl Into<String>, description: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            description: description.into(),
        }
    }
}

/// The commands of an interactive discussion.
pub fn default_commands() -> Vec<MenuItem> {
    vec![MenuItem::new(
        CREATE_ISSUE,
        "create an issue from this discussion",
    )]
}

/// The commands of a discussion that already became issue `issue_key`: the menu says so
/// where it offered to create one (choosing it says so again).
pub fn promoted_commands(issue_key: &str) -> Vec<MenuItem> {
    vec![MenuItem::new(
        CREATE_ISSUE,
        format!("this discussion is already issue {issue_key}"),
    )]
}

/// How the menu ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MenuOutcome {
    /// A command was chosen. Write `erase` to the adapter PTY to remove the trigger text from
    /// its input line (then clear the tracked [`crate::InputLine`]).
    Chosen { command: String, erase: Vec<u8> },
    /// The menu was dismissed; the trigger text stays. Write `forward` (keys the menu consumed
    /// that belong to the adapter, possibly empty) to the adapter PTY and feed it to the line
    /// tracker.
    Dismissed { forward: Vec<u8> },
}

/// What a key did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MenuUpdate {
    /// Nothing visible changed.
    Unchanged,
    /// The list or selection changed: redraw with [`Menu::lines`].
    Redraw,
    /// The menu is finished: close the overlay.
    Closed(MenuOutcome),
}

/// The menu state.
#[derive(Debug, Clone)]
pub struct Menu {
    items: Vec<MenuItem>,
    /// What the adapter's input line holds (`/wujie…`), written before the menu opened.
    forwarded: String,
    /// Characters typed into the menu since it opened.
    typed: String,
    /// Index into the current matches.
    selected: usize,
}

impl Menu {
    /// A menu over `items`; `query` is the text after the trigger on the adapter's input line
    /// when it opened (from [`crate::TriggerAction::OpenMenu`]; `""` for a bare `/wujie`).
    pub fn new(items: Vec<MenuItem>, query: &str) -> Self {
        Self {
            items,
            forwarded: format!("{TRIGGER}{query}"),
            typed: String::new(),
            selected: 0,
        }
    }

    /// This menu, opened again for the same line after `earlier` was taken down (a resize, a
    /// stop): what was typed into `earlier` and its selection carry over. For another line
    /// (the adapter's text changed meanwhile) it stays as it is.
    pub fn carrying_over(mut self, earlier: &Menu) -> Menu {
        if earlier.forwarded != self.forwarded {
            return self;
        }
        let chosen = earlier.selected().map(|item| item.name.clone());
        self.typed = earlier.typed.clone();
        self.selected = chosen
            .and_then(|name| self.matches().iter().position(|item| item.name == name))
            .unwrap_or(0);
        self
    }

    /// The text candidates must start with.
    pub fn filter(&self) -> String {
        format!("{}{}", self.forwarded, self.typed)
    }

    /// Candidates that start with [`Menu::filter`].
    pub fn matches(&self) -> Vec<&MenuItem> {
        let filter = self.filter();
        self.items
            .iter()
            .filter(|item| item.name.starts_with(&filter))
            .collect()
    }

    /// The highlighted candidate.
    pub fn selected(&self) -> Option<&MenuItem> {
        self.matches().get(self.selected).copied()
    }

    /// Handles one key.
    pub fn handle_key(&mut self, key: Key) -> MenuUpdate {
        let count = self.matches().len();
        match key {
            Key::Up | Key::BackTab if count > 0 => {
                self.selected = (self.selected + count - 1) % count;
                MenuUpdate::Redraw
            }
            Key::Down | Key::Tab if count > 0 => {
                self.selected = (self.selected + 1) % count;
                MenuUpdate::Redraw
            }
            Key::Enter => match self.selected() {
                Some(item) => MenuUpdate::Closed(MenuOutcome::Chosen {
                    command: item.name.clone(),
                    erase: erase_chars(self.forwarded.chars().count()),
                }),
                None => self.dismiss(b"\r"),
            },
            Key::Esc => self.dismiss(b""),
            Key::CtrlC => MenuUpdate::Closed(MenuOutcome::Dismissed {
                forward: Vec::new(),
            }),
            Key::Backspace => {
                if self.typed.pop().is_none() {
                    // Deleting into the adapter's own text: give the key back to it.
                    return self.dismiss(b"\x7f");
                }
                self.selected = 0;
                MenuUpdate::Redraw
            }
            Key::CtrlU => {
                if self.typed.is_empty() {
                    // The filter is the adapter's own text: the adapter clears its line.
                    return self.dismiss(b"\x15");
                }
                self.typed.clear();
                self.selected = 0;
                MenuUpdate::Redraw
            }
            Key::Char(c) => {
                self.typed.push(c);
                self.selected = 0;
                if self.matches().is_empty() {
                    // Not a command after all (e.g. a space): hand the text to the adapter.
                    return self.dismiss(b"");
                }
                MenuUpdate::Redraw
            }
            Key::Up
            | Key::Down
            | Key::Tab
            | Key::BackTab
            | Key::Left
            | Key::Right
            | Key::PageUp
            | Key::PageDown
            | Key::Other => MenuUpdate::Unchanged,
        }
    }

    /// The lines to draw in `cols` columns and at most `max_rows` rows. The list scrolls so
    /// the selection is visible.
    pub fn lines(&self, cols: u16, max_rows: u16) -> Vec<OverlayLine> {
        let cols = usize::from(cols);
        let rows = usize::from(max_rows.max(1));
        let matches = self.matches();
        if matches.is_empty() {
            return vec![OverlayLine::new(
                text::fit("  no matching command", cols),
                LineStyle::Dim,
            )];
        }
        let start = (self.selected + 1).saturating_sub(rows);
        matches
            .iter()
            .enumerate()
            .skip(start)
            .take(rows)
            .map(|(i, item)| {
                let (marker, style) = if i == self.selected {
                    ("> ", LineStyle::Selected)
                } else {
                    ("  ", LineStyle::Plain)
                };
                let label = format!("{marker}{}  {}", item.name, item.description);
                OverlayLine::new(text::fit(&label, cols), style)
            })
            .collect()
    }

    fn dismiss(&self, extra: &[u8]) -> MenuUpdate {
        let mut forward = self.typed.as_bytes().to_vec();
        forward.extend_from_slice(extra);
        MenuUpdate::Closed(MenuOutcome::Dismissed { forward })
    }
}
