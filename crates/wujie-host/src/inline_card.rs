//! The issue card for a provider on pipes while the user sits at a terminal: drawn where the
//! output ends ([`InlineArea`]) instead of over an adapter screen, answered with the same keys
//! as in the overlay. The terminal is in raw mode while the card is shown (so arrows, Enter and
//! Ctrl+C arrive as keys) and back in its own mode as soon as the card is gone.

use wujie_term::{
    CARD_MAX_ROWS, CardChoice, CardUpdate, InlineArea, InputScanner, IssueCard, Key, TermSize,
};

use crate::raw::{RawMode, terminal_size, write_to_terminal};

pub struct InlineCard {
    card: IssueCard,
    area: Option<InlineArea>,
    size: TermSize,
    scanner: InputScanner,
    _raw: RawMode,
}

impl InlineCard {
    /// Switches the terminal to raw mode and draws `card`.
    pub fn open(card: IssueCard) -> std::io::Result<InlineCard> {
        let raw = RawMode::enable()?;
        let size = terminal_size();
        let rows = CARD_MAX_ROWS.min(InlineArea::max_rows_for(size));
        let mut out = Vec::new();
        let area = InlineArea::open(size, &card.lines(size.cols, rows), &mut out);
        write_to_terminal(&out);
        Ok(InlineCard {
            card,
            area: Some(area),
            size,
            scanner: InputScanner::new(),
            _raw: raw,
        })
    }

    /// Keys the user typed; the decision once one was made (the card is erased then, and the
    /// terminal's mode comes back when this is dropped).
    pub fn input(&mut self, bytes: &[u8]) -> Option<CardChoice> {
        for event in self.scanner.feed(bytes) {
            if !event.is_typing() {
                continue;
            }
            let mut out = Vec::new();
            match self.card.handle_key(Key::decode(&event.bytes)) {
                CardUpdate::Unchanged => {}
                CardUpdate::Redraw => {
                    if let Some(area) = &mut self.area {
                        let rows = area.max_rows().min(CARD_MAX_ROWS);
                        area.redraw(&self.card.lines(self.size.cols, rows), &mut out);
                    }
                }
                CardUpdate::Decided(choice) => {
                    if let Some(area) = self.area.take() {
                        area.close(&mut out);
                    }
                    write_to_terminal(&out);
                    return Some(choice);
                }
            }
            write_to_terminal(&out);
        }
        None
    }
}
