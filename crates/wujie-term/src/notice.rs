//! A short message shown in the overlay for a moment: the issue was created and the agent
//! continues there, or why it was not. It holds the adapter's output back for at most
//! [`NOTICE_SHOWN`]; the user's next key closes it at once and still reaches the adapter.

use std::time::Duration;

use crate::overlay::{LineStyle, OverlayLine};
use crate::text;

/// How long a notice stays when no key closes it first.
pub const NOTICE_SHOWN: Duration = Duration::from_secs(2);
/// Most rows a notice asks for.
pub const NOTICE_MAX_ROWS: u16 = 3;

/// The lines of a notice in `cols` columns and at most `max_rows` rows: the message wrapped
/// (prefixed `wujie: `), the last shown line cut with `…` when the message does not fit.
pub fn notice_lines(message: &str, cols: u16, max_rows: u16) -> Vec<OverlayLine> {
    let cols = usize::from(cols);
    let rows = usize::from(max_rows.max(1));
    let wrapped = text::wrap(&format!("wujie: {message}"), cols);
    let cut = wrapped.len() > rows;
    wrapped
        .iter()
        .take(rows)
        .enumerate()
        .map(|(i, line)| {
            let shown = if cut && i + 1 == rows {
                format!("{}…", text::fit(line, cols.saturating_sub(1)))
            } else {
                line.clone()
            };
            OverlayLine::new(text::fit(&shown, cols), LineStyle::Title)
        })
        .collect()
}
