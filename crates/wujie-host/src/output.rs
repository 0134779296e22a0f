//! The adapter's terminal output on its way to the user's terminal, and the one lock that every
//! write to the user's terminal goes through.
//!
//! Output is the hot path (an agent redrawing its screen, a build log scrolling by), so a
//! thread of its own reads the PTY master and writes to our stderr: a read happens as soon as
//! the kernel has bytes, without a round trip through the runtime's event loop, and a slow
//! terminal blocks only this thread. The overlay, drawn by the host task, writes through the
//! same [`Screen`], so the terminal and the shadow model see the bytes in one order.

use std::io::{PipeReader, PipeWriter};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::io::Errno;
use tokio::sync::{Notify, oneshot};
use wujie_term::{CursorPos, MARGIN_MOST_ROWS, Placement, ScreenModel, TermSize, TerminalModes};

use crate::raw::write_to_terminal;
use crate::stop_pipe::{Woken, wait_readable};

/// DECAWM off and on: text reaching the right margin stays on its row, or goes on at the next.
const AUTOWRAP_OFF: &[u8] = b"\x1b[?7l";
const AUTOWRAP_ON: &[u8] = b"\x1b[?7h";

/// Adapter output held back while the overlay is open; beyond this the PTY is not read, so the
/// adapter blocks on its writes instead of our memory growing.
pub const HOLD_CAP: usize = 1 << 20;

/// The user's terminal as the adapter and the overlay share it.
pub struct Screen {
    state: Mutex<State>,
    /// Wakes the output thread when held output was let through or the relay stopped.
    released: Condvar,
    /// Wakes the host task after adapter output changed the screen (it listens while the
    /// trigger waits for the adapter's echo; a permit left from before only makes it look
    /// once more).
    pub changed: Notify,
    /// Set by the output thread when a read found the PTY empty, cleared before it reads again:
    /// while set, everything it read went through [`Screen::adapter_output`].
    drained: AtomicBool,
    origin: Instant,
}

struct State {
    /// A model of what the terminal shows (cursor, used rows), to place the overlay; only kept
    /// when there is an overlay (`wujie run` relays without parsing).
    shadow: Option<ScreenModel>,
    /// While the overlay is open, adapter output waits here.
    holding: bool,
    held: Vec<u8>,
    /// How much of `held` the adapter drew for a wider terminal than the one there is now
    /// ([`ScreenLock::release`]).
    held_wider: usize,
    /// When adapter output last drew or moved the cursor (a title update does neither).
    last_visible: Option<Duration>,
    /// When adapter output last asked the terminal something (its reply is on its way).
    last_query: Option<Duration>,
    /// When the adapter last printed anything (shown or held).
    last_output: Option<Duration>,
    /// The terminal modes the adapter set, from everything of its output that was shown; kept
    /// with or without a shadow (it costs a search for ESC), for a stop to leave them.
    modes: TerminalModes,
    stopped: bool,
}

impl Screen {
    pub fn new(shadow: Option<ScreenModel>) -> Arc<Screen> {
        Arc::new(Screen {
            state: Mutex::new(State {
                shadow,
                holding: false,
                held: Vec::new(),
                held_wider: 0,
                last_visible: None,
                last_query: None,
                last_output: None,
                modes: TerminalModes::new(),
                stopped: false,
            }),
            released: Condvar::new(),
            changed: Notify::new(),
            drained: AtomicBool::new(false),
            origin: Instant::now(),
        })
    }

    /// Time since the screen was set up: the clock of the trigger detector.
    pub fn now(&self) -> Duration {
        self.origin.elapsed()
    }

    /// When the screen was set up (time zero of [`Screen::now`]).
    pub fn origin(&self) -> Instant {
        self.origin
    }

    pub fn lock(&self) -> ScreenLock<'_> {
        ScreenLock {
            screen: self,
            state: self.state.lock().unwrap_or_else(|e| e.into_inner()),
        }
    }

    /// When adapter output last changed what the screen shows.
    pub fn last_visible(&self) -> Option<Duration> {
        self.lock().state.last_visible
    }

    /// When adapter output last asked the terminal for a reply (cursor position, modes, …).
    pub fn last_query(&self) -> Option<Duration> {
        self.lock().state.last_query
    }

    /// When the adapter last printed anything.
    pub fn last_output(&self) -> Option<Duration> {
        self.lock().state.last_output
    }

    /// Whether the output thread's last read found nothing more: what it read before is on the
    /// screen (or held). Check the PTY for unread output first
    /// ([`crate::master::has_unread_output`]); then this tells whether what was read was shown.
    pub fn drained(&self) -> bool {
        self.drained.load(Ordering::SeqCst)
    }

    /// Ends the relay: the output thread stops at its next step and drops what it still reads.
    fn stop(&self) {
        let mut lock = self.lock();
        lock.state.stopped = true;
        lock.state.holding = false;
        self.released.notify_all();
    }

    /// Relays one chunk of adapter output; false once the relay was stopped.
    fn adapter_output(&self, bytes: &[u8]) -> bool {
        let mut lock = self.lock();
        lock.state.last_output = Some(self.now());
        loop {
            if lock.state.stopped {
                return false;
            }
            if !lock.state.holding {
                break;
            }
            if lock.state.held.len() < HOLD_CAP {
                lock.state.held.extend_from_slice(bytes);
                return true;
            }
            lock.state = self
                .released
                .wait(lock.state)
                .unwrap_or_else(|e| e.into_inner());
        }
        let seen = |shadow: &ScreenModel| (shadow.cursor(), shadow.drawn());
        let before = lock.state.shadow.as_ref().map(|s| (seen(s), s.queries()));
        lock.show_adapter_output(bytes);
        if let (Some((before, queries)), Some(shadow)) = (before, &lock.state.shadow) {
            let (visible, asked) = (seen(shadow) != before, shadow.queries() != queries);
            if asked {
                lock.state.last_query = Some(self.now());
            }
            if visible {
                lock.state.last_visible = Some(self.now());
                self.changed.notify_one();
            }
        }
        true
    }
}

/// Exclusive use of the user's terminal.
pub struct ScreenLock<'a> {
    screen: &'a Screen,
    state: MutexGuard<'a, State>,
}

impl ScreenLock<'_> {
    /// Writes to the real terminal and to its shadow.
    pub fn show(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        write_to_terminal(bytes);
        if let Some(shadow) = &mut self.state.shadow {
            shadow.feed(bytes);
        }
    }

    /// Writes the adapter's output, following the modes it sets.
    fn show_adapter_output(&mut self, bytes: &[u8]) {
        self.state.modes.feed(bytes);
        self.show(bytes);
    }

    /// Returns the terminal to its defaults from the modes the adapter set (for the shell,
    /// while `wujie` is stopped); the modes are kept for [`ScreenLock::restore_modes`].
    pub fn leave_modes(&mut self) {
        let leave = self.state.modes.leave();
        self.show(&leave);
    }

    /// Sets the modes the adapter set again, on a terminal in its defaults.
    pub fn restore_modes(&mut self) {
        let restore = self.state.modes.restore();
        self.show(&restore);
    }

    /// Where an overlay goes on a terminal of `size`: under the adapter's cursor and what it
    /// drew under it (its input box's border, a footer), keeping its used rows, setting its
    /// scroll region aside, and with what draws the top rows again (the overlay may move them
    /// off the screen). `None` without a shadow.
    pub fn placement(&self, size: TermSize) -> Option<Placement> {
        let shadow = self.state.shadow.as_ref()?;
        Some(
            Placement::new(size, shadow.cursor())
                .with_margin(shadow.rows_drawn_below_cursor(MARGIN_MOST_ROWS))
                .with_used_rows(shadow.used_rows())
                .with_scroll_region(shadow.scroll_region())
                .with_cursor_state(
                    shadow.saved_cursor(),
                    shadow.attributes(),
                    shadow.origin_mode(),
                )
                .with_restorable_rows(shadow.restorable_rows(size.rows)),
        )
    }

    /// From now on adapter output waits until [`ScreenLock::release`].
    pub fn hold(&mut self) {
        self.state.holding = true;
    }

    /// Shows the output held back and lets the adapter's output through again. What of it the
    /// adapter drew for a wider terminal (before the window got narrower) is shown with
    /// autowrap off: each row it drew stays one row, as the adapter counts them when it moves
    /// up over them to draw again (Ink's frames do), instead of wrapping into two and leaving
    /// the extra rows behind as copies of its input box.
    pub fn release(&mut self) {
        self.state.holding = false;
        let held = std::mem::take(&mut self.state.held);
        let wider = std::mem::take(&mut self.state.held_wider).min(held.len());
        if !held.is_empty() {
            let autowrap = self
                .state
                .shadow
                .as_ref()
                .is_some_and(ScreenModel::autowrap);
            let (drawn_wider, rest) = held.split_at(wider);
            if autowrap && !drawn_wider.is_empty() {
                self.show(AUTOWRAP_OFF);
                self.show_adapter_output(drawn_wider);
                // Unless the adapter turned it off itself meanwhile.
                if !drawn_wider
                    .windows(AUTOWRAP_OFF.len())
                    .any(|w| w == AUTOWRAP_OFF)
                {
                    self.show(AUTOWRAP_ON);
                }
                self.show_adapter_output(rest);
            } else {
                self.show_adapter_output(&held);
            }
            self.state.last_visible = Some(self.screen.now());
        }
        self.screen.released.notify_all();
    }

    /// The terminal showed other things meanwhile (the shell, while `wujie` was stopped): the
    /// shadow starts again with the cursor where the terminal reported it.
    pub fn restart(&mut self, size: TermSize, cursor: CursorPos) {
        if let Some(shadow) = &mut self.state.shadow {
            *shadow = ScreenModel::starting_at(size, cursor);
        }
    }

    /// The terminal is `size` now. Output held back so far was drawn for the size before; when
    /// that was wider, [`ScreenLock::release`] shows it without wrapping.
    pub fn resize(&mut self, size: TermSize) {
        let state = &mut *self.state;
        if let Some(shadow) = &mut state.shadow {
            if state.holding && size.cols < shadow.size().cols {
                state.held_wider = state.held.len();
            }
            shadow.resize(size);
        }
    }
}

/// The thread that relays the adapter's output.
pub struct OutputThread {
    /// Resolves when the adapter's side of the PTY is closed (every process that had it
    /// exited) or the relay was stopped.
    pub ended: oneshot::Receiver<()>,
    screen: Arc<Screen>,
    /// Closed (dropped with this) to wake the thread from its wait for output.
    _wake: PipeWriter,
}

impl OutputThread {
    /// Starts relaying from `master` (non-blocking) through `screen`.
    pub fn spawn(master: OwnedFd, screen: Arc<Screen>) -> std::io::Result<OutputThread> {
        let (wake_rx, wake) = std::io::pipe()?;
        let (ended_tx, ended) = oneshot::channel();
        let relay_screen = Arc::clone(&screen);
        std::thread::Builder::new()
            .name("wujie-output".into())
            .spawn(move || {
                relay(&master, &wake_rx, &relay_screen);
                let _ = ended_tx.send(());
            })?;
        Ok(OutputThread {
            ended,
            screen,
            _wake: wake,
        })
    }
}

impl Drop for OutputThread {
    /// Stops the thread, even when a process the adapter left behind keeps the PTY open.
    /// Nothing reaches the terminal afterwards: the thread writes only under the screen's lock,
    /// and checks under it that the relay still runs.
    fn drop(&mut self) {
        self.screen.stop();
    }
}

/// Reads whatever the kernel has and passes it on at once; waits in `poll` only when there is
/// nothing to read. (Collecting several reads into one write was measured slower: the user's
/// terminal then waits for bigger, later chunks.)
fn relay(master: &OwnedFd, wake: &PipeReader, screen: &Screen) {
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        match rustix::io::read(master, &mut buf) {
            Ok(0) => return,
            Ok(n) => {
                if !screen.adapter_output(&buf[..n]) {
                    return;
                }
            }
            Err(Errno::INTR) => {}
            Err(Errno::AGAIN) => {
                screen.drained.store(true, Ordering::SeqCst);
                match wait_readable(master, wake) {
                    Ok(Woken::Readable) => screen.drained.store(false, Ordering::SeqCst),
                    Ok(Woken::Stopped) | Err(_) => return,
                }
            }
            // EIO: every process that had the adapter's side open closed it.
            Err(_) => return,
        }
    }
}
