//! Menu, card and overlay with arbitrary sizes, cursor positions, text and keys never panic and
//! always keep the area inside the screen.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wujie_term::{
    Attributes, CursorPos, IssueCard, Key, Menu, MenuItem, MenuUpdate, Overlay, Placement,
    SavedCursor, TermSize,
};

fn u16_at(data: &[u8], i: usize) -> u16 {
    let lo = data.get(i).copied().unwrap_or(0);
    let hi = data.get(i + 1).copied().unwrap_or(0);
    u16::from_le_bytes([lo, hi]) % 512
}

fuzz_target!(|data: &[u8]| {
    let size = TermSize { cols: u16_at(data, 0), rows: u16_at(data, 2) };
    let cursor = CursorPos { row: u16_at(data, 4), col: u16_at(data, 6) };
    let used = u16_at(data, 8);
    // Any pair, ordered or not, in or out of the screen: the overlay must cope.
    let region = (u16_at(data, 10) % 2 == 1).then(|| (u16_at(data, 10) / 2, u16_at(data, 12)));
    let saved = (u16_at(data, 14) % 2 == 1).then(|| SavedCursor {
        pos: CursorPos { row: u16_at(data, 14) / 2, col: u16_at(data, 16) },
        origin_mode: u16_at(data, 16) % 3 == 0,
        attributes: Attributes::default(),
    });
    let rest = data.get(20..).unwrap_or_default();
    let text = String::from_utf8_lossy(rest);
    let mut items = wujie_term::default_commands();
    items.push(MenuItem::new(format!("/wujie{text}"), text.to_string()));
    let mut menu = Menu::new(items, "");
    let mut card = IssueCard::create_issue(text.to_string(), text.to_string());
    let place = Placement::new(size, cursor)
        .with_margin(u16_at(data, 18))
        .with_used_rows(used)
        .with_scroll_region(region)
        .with_cursor_state(saved, Attributes::default(), u16_at(data, 12) % 5 == 0);
    let capacity = Overlay::capacity(size);
    let mut out = Vec::new();
    let Ok(mut overlay) = Overlay::open(place, &menu.lines(size.cols, capacity), &mut out) else {
        return;
    };
    assert!(overlay.height() >= 1 && overlay.top() + overlay.height() <= size.rows);
    for chunk in rest.chunks(3) {
        let key = Key::decode(chunk);
        if let MenuUpdate::Closed(_) = menu.handle_key(key) {
            break;
        }
        // Opened again for the same line (a resize): what was typed and selected carries over.
        let again = Menu::new(wujie_term::default_commands(), "").carrying_over(&menu);
        assert_eq!(again.filter(), menu.filter());
        overlay.redraw(&menu.lines(size.cols, overlay.max_height()), &mut out);
        let _ = card.handle_key(key);
        assert!(overlay.top() + overlay.height() <= size.rows);
    }
    overlay.redraw(&card.lines(size.cols, overlay.max_height()), &mut out);
    overlay.close(&mut out);
});
