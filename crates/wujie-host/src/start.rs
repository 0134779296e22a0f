//! Where the user's terminal cursor is when the host starts.
//!
//! `wujie discuss` usually starts below a shell's output, not on a cleared screen, and the
//! overlay is drawn at absolute rows of the shadow screen: the shadow must start where the
//! terminal's cursor is. The host asks the terminal (a cursor position report) in raw mode,
//! before the adapter starts, and waits a short while for the answer. Keys typed meanwhile
//! are kept for the adapter. A terminal that does not answer gets a position that is true
//! whatever it showed: the cursor is moved to the bottom row by line feeds, which scroll what
//! was above it into the scrollback instead of erasing it.

use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::io::Errno;
use wujie_term::{
    CURSOR_POSITION_QUERY, CursorPos, InputKind, InputScanner, ReplyKind, TermSize, cursor_report,
};

use crate::raw::write_to_terminal;

/// How long the terminal may take to answer. Local terminals answer within milliseconds; this
/// leaves room for a slow ssh link, and is waited in full only by a terminal that never answers.
pub const REPORT_WAIT: Duration = Duration::from_millis(800);

/// The user's terminal as the host found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartScreen {
    pub cursor: CursorPos,
    /// What the user typed while the host waited for the answer, in order, for the adapter.
    pub typed_ahead: Vec<u8>,
}

/// Asks the terminal on stdin/stderr (in raw mode) where its cursor is.
pub fn locate_cursor(size: TermSize) -> StartScreen {
    write_to_terminal(CURSOR_POSITION_QUERY);
    let (cursor, typed_ahead) = read_report(std::io::stdin(), size, REPORT_WAIT);
    let cursor = cursor.unwrap_or_else(|| {
        tracing::debug!("the terminal did not report its cursor; starting on its bottom row");
        let (bytes, bottom) = to_bottom_row(size);
        write_to_terminal(&bytes);
        bottom
    });
    StartScreen {
        cursor,
        typed_ahead,
    }
}

/// What moves the cursor to the bottom row whatever the terminal shows (line feeds scroll
/// what is above into the scrollback, erasing nothing), and where it is then.
pub fn to_bottom_row(size: TermSize) -> (Vec<u8>, CursorPos) {
    let rows = size.rows.max(1);
    let mut bytes = vec![b'\r'];
    bytes.extend(std::iter::repeat_n(b'\n', usize::from(rows - 1)));
    (
        bytes,
        CursorPos {
            row: rows - 1,
            col: 0,
        },
    )
}

/// Reads `input` until a cursor position report arrived or `wait` passed; everything else
/// read (keys typed ahead) comes back, byte for byte.
fn read_report(input: impl AsFd, size: TermSize, wait: Duration) -> (Option<CursorPos>, Vec<u8>) {
    let deadline = Instant::now() + wait;
    let mut scanner = InputScanner::new();
    let mut other = Vec::new();
    let mut cursor = None;
    let mut buf = [0u8; 1024];
    while cursor.is_none() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        let timeout = Timespec::try_from(left).unwrap_or(Timespec {
            tv_sec: 1,
            tv_nsec: 0,
        });
        let mut fds = [PollFd::new(&input, PollFlags::IN)];
        match poll(&mut fds, Some(&timeout)) {
            Ok(0) => break,
            Ok(_) => {}
            Err(Errno::INTR) => continue,
            Err(_) => break,
        }
        let n = match rustix::io::read(&input, &mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(Errno::INTR | Errno::AGAIN) => continue,
            Err(_) => break,
        };
        for event in scanner.feed(&buf[..n]) {
            let report = match event.kind {
                InputKind::Reply(ReplyKind::CursorPosition) if cursor.is_none() => {
                    cursor_report(&event.bytes, size)
                }
                _ => None,
            };
            match report {
                Some(pos) => cursor = Some(pos),
                None => other.extend_from_slice(&event.bytes),
            }
        }
    }
    for event in scanner.flush_idle() {
        other.extend_from_slice(&event.bytes);
    }
    (cursor, other)
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    const SIZE: TermSize = TermSize { cols: 80, rows: 24 };

    #[test]
    fn the_report_is_taken_out_of_what_was_typed_around_it() {
        let (rx, mut tx) = std::io::pipe().unwrap();
        tx.write_all(b"ab\x1b[7;3Rc\x1b").unwrap();
        let (cursor, typed) = read_report(&rx, SIZE, Duration::from_secs(5));
        assert_eq!(cursor, Some(CursorPos { row: 6, col: 2 }));
        // What came after the report in the same read is kept too, unfinished escape included.
        assert_eq!(typed, b"abc\x1b");
    }

    #[test]
    fn a_report_split_across_reads_is_still_one_report() {
        let (rx, mut tx) = std::io::pipe().unwrap();
        let writer = std::thread::spawn(move || {
            tx.write_all(b"\x1b[12;").unwrap();
            std::thread::sleep(Duration::from_millis(50));
            tx.write_all(b"40R").unwrap();
        });
        let (cursor, typed) = read_report(&rx, SIZE, Duration::from_secs(5));
        writer.join().unwrap();
        assert_eq!(cursor, Some(CursorPos { row: 11, col: 39 }));
        assert!(typed.is_empty(), "{typed:?}");
    }

    #[test]
    fn without_an_answer_it_gives_up_and_keeps_the_keys() {
        let (rx, mut tx) = std::io::pipe().unwrap();
        tx.write_all(b"hi\x1b[").unwrap();
        let (cursor, typed) = read_report(&rx, SIZE, Duration::from_millis(50));
        assert_eq!(cursor, None);
        assert_eq!(typed, b"hi\x1b[");
        drop(tx);
    }
}
