//! The screen model never panics on any output, at any size, from any start, across resizes; the cursor stays
//! on the screen (or one past the last column, a pending wrap), and so do the rows drawn under it;
//! chunking does not matter.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_term::{CursorPos, MARGIN_MOST_ROWS, ScreenModel, TermSize};

fuzz_target!(|data: &[u8]| {
    let [rows, cols, step, resize_rows, resize_cols, output @ ..] = data else {
        return;
    };
    let size = TermSize {
        rows: u16::from(*rows % 40),
        cols: u16::from(*cols % 90),
    };
    // Started where a terminal reported its cursor (anywhere, even off the screen).
    let start = CursorPos {
        row: u16::from(*step),
        col: u16::from(*resize_cols),
    };
    let mut whole = ScreenModel::starting_at(size, start);
    let mut chunked = ScreenModel::starting_at(size, start);
    whole.feed(output);
    for chunk in output.chunks(usize::from(*step).max(1)) {
        chunked.feed(chunk);
    }
    assert_eq!(whole.cursor(), chunked.cursor());
    assert_eq!(whole.used_rows(), chunked.used_rows());
    assert_eq!(
        whole.rows_drawn_below_cursor(MARGIN_MOST_ROWS),
        chunked.rows_drawn_below_cursor(MARGIN_MOST_ROWS)
    );

    let resized = TermSize {
        rows: u16::from(*resize_rows % 40),
        cols: u16::from(*resize_cols % 90),
    };
    for (model, size) in [(&mut whole, size), (&mut chunked, resized)] {
        model.resize(size);
        model.feed(output);
        let cursor = model.cursor();
        assert!(cursor.row < size.rows.max(1), "{cursor:?} in {size:?}");
        assert!(cursor.col <= size.cols.max(1), "{cursor:?} in {size:?}");
        assert!(model.used_rows() <= size.rows.max(1));
        let below = model.rows_drawn_below_cursor(u16::MAX);
        assert!(cursor.row + below < size.rows.max(1), "{below} rows under {cursor:?}");
    }
});
