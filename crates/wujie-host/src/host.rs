//! The relay between the user's terminal and the adapter's PTY, with the `/wujie` menu and the
//! issue card drawn as an overlay.
//!
//! The adapter's output reaches the terminal through a thread of its own
//! ([`crate::output`]). One task, on a thread and runtime of its own (`wujie-relay`, see
//! `spawn_relay`), owns the rest: it reads the user's input, scans it, forwards
//! it to the PTY (through the adapter's single stdin writer, so control frames never
//! interleave), runs the trigger, draws the overlay (while the output thread holds the adapter's
//! output back) and follows SIGWINCH. The pump that reads the adapter's events talks to it
//! through [`TerminalHost`]: it receives [`HostEvent`]s (a chosen command, a card decision) and
//! asks for a card with [`TerminalHost::show_card`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use std::os::fd::OwnedFd;

use nix::sys::signal::Signal;
use tokio::signal::unix::{Signal as UnixSignal, SignalKind, signal};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use wujie_term::{
    CARD_MAX_ROWS, CURSOR_POSITION_QUERY, CardChoice, CardUpdate, CursorPos, InputEvent, InputKind,
    InputLine, InputScanner, IssueCard, Key, MENU_MAX_ROWS, Menu, MenuOutcome, MenuUpdate,
    NOTICE_MAX_ROWS, NOTICE_SHOWN, Overlay, OverlayLine, Pending, ReplyKind, SETTLE_LIMIT, SILENCE,
    ScreenModel, TermSize, TriggerAction, TriggerDetector, cursor_report, default_commands,
    notice_lines, promoted_commands,
};

use crate::error::HostError;
use crate::master;
use crate::output::{OutputThread, Screen};
use crate::raw::{RawMode, pause_raw_mode, resume_raw_mode, stdin_is_terminal, terminal_size};
use crate::start::{REPORT_WAIT, StartScreen, locate_cursor, to_bottom_row};
use crate::user_input::UserInput;
use crate::{AdapterStdin, StdinSink, sleep_until_opt};

/// How long an unfinished escape sequence from the user may wait for its next byte before the
/// scanner hands it over as it is (a lone Esc key).
const ESCAPE_IDLE: Duration = Duration::from_millis(25);
/// How long the pieces of an unfinished CSI sequence may be apart while the terminal owes the
/// adapter a reply: over ssh and tmux a reply can arrive in pieces hundreds of milliseconds
/// apart. (A lone Esc is not a CSI sequence: it still goes after [`ESCAPE_IDLE`].)
const REPLY_IDLE: Duration = Duration::from_secs(1);
/// How long after the adapter asked the terminal something its reply is still expected.
const REPLY_OWED: Duration = Duration::from_secs(3);
/// How often the host looks whether the adapter's output settled before a card opens.
const SETTLE_POLL: Duration = Duration::from_millis(2);
/// After the adapter exited: how long its PTY may still take to deliver the last output.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// The user's terminal, made ready for a host by [`TerminalHost::prepare`]; dropping it
/// restores the terminal.
pub struct PreparedTerminal {
    size: TermSize,
    menu: bool,
    raw: Option<RawMode>,
    start: Option<StartScreen>,
}

/// What the user did in the overlay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostEvent {
    /// A menu command was chosen (the trigger text has been erased from the adapter's line).
    Command(String),
    /// A decision on the card asked for with [`TerminalHost::show_card`].
    Card(CardChoice),
}

enum Request {
    ShowCard(IssueCard),
    Notice(String),
    Promoted(String),
}

/// The running host. Dropping it (or [`TerminalHost::finish`]) restores the user's terminal.
pub struct TerminalHost {
    pub events: mpsc::Receiver<HostEvent>,
    requests: mpsc::Sender<Request>,
    /// What the relay returns when it ends: the notices it had no room for.
    done: oneshot::Receiver<Vec<String>>,
    /// Dropped to end the relay.
    stop: Option<oneshot::Sender<()>>,
    _raw: Option<RawMode>,
}

impl TerminalHost {
    /// Gets the user's terminal ready before the adapter starts: raw mode when stdin is a
    /// terminal and, with the `/wujie` menu (`menu`, discussions), where its cursor is, so the
    /// shadow screen starts there ([`crate::start`]).
    pub fn prepare(size: TermSize, menu: bool) -> Result<PreparedTerminal, HostError> {
        let raw = if stdin_is_terminal() {
            Some(RawMode::enable().map_err(HostError::RawMode)?)
        } else {
            None
        };
        let start = (menu && raw.is_some()).then(|| locate_cursor(size));
        Ok(PreparedTerminal {
            size,
            menu,
            raw,
            start,
        })
    }

    /// Starts relaying for an adapter started with `Adapter::spawn_pty` (wujie-localrun's supervisor)
    /// on the terminal made ready by [`TerminalHost::prepare`]. Returns the host and the
    /// adapter's stdin writer (the PTY master), for control frames.
    pub fn start(
        pty: pty_process::Pty,
        terminal: PreparedTerminal,
    ) -> Result<(TerminalHost, AdapterStdin), HostError> {
        let PreparedTerminal {
            size,
            menu,
            raw,
            start,
        } = terminal;
        let interactive = raw.is_some();
        let (reader, writer) = master::split(pty).map_err(HostError::Relay)?;
        let shadow = menu.then(|| match &start {
            Some(start) => ScreenModel::starting_at(size, start.cursor),
            None => ScreenModel::new(size),
        });
        let screen = Screen::new(shadow);
        let master = reader.try_clone().map_err(HostError::Relay)?;
        let output = OutputThread::spawn(reader, Arc::clone(&screen)).map_err(HostError::Relay)?;
        let to_adapter = AdapterStdin::spawn(Some(StdinSink::Pty(writer)));
        let (events_tx, events) = mpsc::channel(8);
        let (requests, requests_rx) = mpsc::channel(8);
        let mut relay = Relay::new(to_adapter.clone(), screen, size, menu, events_tx);
        relay.master = Some(master);
        let typed_ahead = start.map(|s| s.typed_ahead).unwrap_or_default();
        let (stop, stopped) = oneshot::channel();
        let done = spawn_relay(
            relay,
            output,
            requests_rx,
            interactive,
            typed_ahead,
            stopped,
        )?;
        Ok((
            TerminalHost {
                events,
                requests,
                done,
                stop: Some(stop),
                _raw: raw,
            },
            to_adapter,
        ))
    }

    /// Draws `card`; the decision comes back as [`HostEvent::Card`].
    pub async fn show_card(&self, card: IssueCard) {
        let _ = self.requests.send(Request::ShowCard(card)).await;
    }

    /// Shows `message` for a moment (after the menu or card, if one is open).
    pub async fn notice(&self, message: String) {
        let _ = self.requests.send(Request::Notice(message)).await;
    }

    /// The discussion became issue `issue_key`: the menu says so from now on.
    pub async fn promoted(&self, issue_key: String) {
        let _ = self.requests.send(Request::Promoted(issue_key)).await;
    }

    /// After the adapter exited: let the last output through (bounded, since a grandchild may
    /// keep the PTY open), then restore the terminal. Returns the notices that were never shown
    /// (no room for them), for the caller to print.
    pub async fn finish(mut self) -> Vec<String> {
        let unshown = tokio::time::timeout(DRAIN_LIMIT, &mut self.done).await;
        // Ends the relay, if it is still running (dropping `self` does too).
        self.stop.take();
        unshown.ok().and_then(Result::ok).unwrap_or_default()
    }
}

/// Runs the relay on a thread of its own, with a runtime of its own. The relay shares the
/// terminal's lock with the output thread, which holds it while it writes to the terminal; a
/// terminal that stops taking output (a stalled ssh session) blocks that write, and then the
/// relay too. On a thread of its own that stalls only the relay: on a runtime worker it would
/// stall every task the worker runs (on a one-core machine, all of them: signals, stopping the
/// adapter, delivery). Returns once the relay's signals are installed.
fn spawn_relay(
    mut relay: Relay,
    output: OutputThread,
    mut requests: mpsc::Receiver<Request>,
    interactive: bool,
    typed_ahead: Vec<u8>,
    stopped: oneshot::Receiver<()>,
) -> Result<oneshot::Receiver<Vec<String>>, HostError> {
    let (done_tx, done) = oneshot::channel();
    let (ready_tx, ready) = std::sync::mpsc::sync_channel(1);
    std::thread::Builder::new()
        .name("wujie-relay".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(e) => {
                    let _ = ready_tx.send(Err(HostError::Relay(e)));
                    return;
                }
            };
            runtime.block_on(async move {
                let mut signals = match HostSignals::install(interactive) {
                    Ok(signals) => signals,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let relayed = relay.run(
                    output,
                    &mut signals,
                    &mut requests,
                    interactive,
                    typed_ahead,
                );
                tokio::select! {
                    unshown = relayed => {
                        let _ = done_tx.send(unshown);
                    }
                    _ = stopped => {}
                }
            });
        })
        .map_err(HostError::Relay)?;
    match ready.recv() {
        Ok(Ok(())) => Ok(done),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(HostError::Relay(std::io::Error::other(
            "the terminal relay stopped while starting",
        ))),
    }
}

/// An area that was open when the terminal changed size, until the terminal reported where
/// the cursor went.
struct Rewrapped {
    shown: Shown,
    overlay: Overlay,
    /// Without a report by then, the area is closed where it was drawn.
    due: Instant,
}

/// Ctrl+Z: suspend, as in a shell.
const SUSPEND: u8 = 0x1a;

/// The signals the host follows: window-size changes and, on a terminal, job control.
struct HostSignals {
    winch: UnixSignal,
    stop: Option<UnixSignal>,
    cont: Option<UnixSignal>,
}

impl HostSignals {
    fn install(job_control: bool) -> Result<HostSignals, HostError> {
        let sig = |kind| signal(kind).map_err(HostError::Signal);
        let job = |number| {
            job_control
                .then(|| sig(SignalKind::from_raw(number)))
                .transpose()
        };
        Ok(HostSignals {
            winch: sig(SignalKind::window_change())?,
            stop: job(Signal::SIGTSTP as i32)?,
            cont: job(Signal::SIGCONT as i32)?,
        })
    }
}

/// The next delivery of an optional signal; never resolves without one.
async fn recv_opt(signal: &mut Option<UnixSignal>) -> Option<()> {
    match signal {
        Some(signal) => signal.recv().await,
        None => std::future::pending().await,
    }
}

/// How long the terminal may take to report the cursor after a resize.
const REWRAP_REPORT_WAIT: Duration = Duration::from_millis(800);

/// What an open overlay shows.
enum Shown {
    Menu(Menu),
    Card(IssueCard),
    /// A notice, closed at its deadline or by the user's next key.
    Notice(String, Instant),
}

struct Relay {
    to_adapter: AdapterStdin,
    screen: Arc<Screen>,
    size: TermSize,
    scanner: InputScanner,
    line: InputLine,
    trigger: TriggerDetector,
    menu_enabled: bool,
    /// The open overlay and what it shows.
    view: Option<(Shown, Overlay)>,
    /// A card asked for, waiting (until the instant at the latest) for the adapter's output to
    /// settle.
    card_due: Option<(IssueCard, Instant)>,
    /// Notices waiting for the overlay to be free.
    notices: VecDeque<String>,
    /// Notices there was no room for: printed after the session.
    unshown: Vec<String>,
    /// The issue the discussion became.
    promoted: Option<String>,
    /// Keys typed while the trigger waits for the adapter's echo (or while the area waits for
    /// the cursor's report after a resize): they go to the menu once it opens (or to the
    /// adapter when it does not).
    held_keys: Vec<InputEvent>,
    /// After a resize with the area open: the area, waiting for the terminal to report where
    /// the cursor went when it rewrapped its rows.
    rewrapped: Option<Rewrapped>,
    /// Cursor position reports the host asked for itself and has not received yet: they are
    /// the host's, not the adapter's.
    own_reports_owed: u32,
    /// Raw mode on a terminal: the host can ask it things.
    interactive: bool,
    /// After a stop: until the terminal reported where the cursor is now.
    resuming: Option<Instant>,
    /// The adapter's PTY master, to signal its foreground process group.
    master: Option<OwnedFd>,
    /// When the scanner hands over the unfinished sequence it holds, unless more bytes come.
    escape_due: Option<Instant>,
    events: mpsc::Sender<HostEvent>,
}

impl Relay {
    fn new(
        to_adapter: AdapterStdin,
        screen: Arc<Screen>,
        size: TermSize,
        menu_enabled: bool,
        events: mpsc::Sender<HostEvent>,
    ) -> Relay {
        Relay {
            to_adapter,
            screen,
            size,
            scanner: InputScanner::new(),
            line: InputLine::new(),
            trigger: TriggerDetector::new(),
            menu_enabled,
            view: None,
            card_due: None,
            notices: VecDeque::new(),
            unshown: Vec::new(),
            promoted: None,
            held_keys: Vec::new(),
            rewrapped: None,
            own_reports_owed: 0,
            interactive: false,
            resuming: None,
            master: None,
            escape_due: None,
            events,
        }
    }

    async fn run(
        &mut self,
        mut output: OutputThread,
        signals: &mut HostSignals,
        requests: &mut mpsc::Receiver<Request>,
        interactive: bool,
        typed_ahead: Vec<u8>,
    ) -> Vec<String> {
        self.interactive = interactive;
        let mut from_user = UserInput::spawn();
        let mut user_open = true;
        let screen = Arc::clone(&self.screen);
        if !typed_ahead.is_empty() {
            self.user_input(&typed_ahead).await;
        }
        loop {
            let deadline = self.next_deadline();
            tokio::select! {
                // Every process that had the adapter's terminal closed it.
                _ = &mut output.ended => break,
                input = from_user.recv(), if user_open => match input {
                    Some(bytes) => self.user_input(&bytes).await,
                    None => {
                        user_open = false;
                        if !interactive {
                            // Scripted input ended: the end-of-file character tells a
                            // line-reading adapter, as a terminal would.
                            self.to_adapter.send(vec![0x04]).await;
                        }
                    }
                },
                () = screen.changed.notified(), if self.trigger.waiting_since().is_some() => {
                    self.poll_trigger();
                }
                _ = signals.winch.recv() => self.resize(terminal_size()).await,
                Some(()) = recv_opt(&mut signals.stop) => self.suspend(),
                Some(()) = recv_opt(&mut signals.cont) => self.resumed(),
                Some(request) = requests.recv() => match request {
                    Request::ShowCard(card) => self.ask_card(card),
                    Request::Notice(message) => self.notices.push_back(message),
                    Request::Promoted(key) => self.promoted = Some(key),
                },
                () = sleep_until_opt(deadline), if deadline.is_some() => self.tick().await,
            }
            self.replay_held_keys().await;
            self.show_notice();
        }
        // The adapter is gone: never leave an overlay or held output behind, and leave the
        // cursor on a fresh line under everything it drew (its margin rows included), so what
        // `wujie` prints next does not land inside the adapter's last screen.
        self.close_view();
        let mut lock = self.screen.lock();
        lock.release();
        self.leave_below(&mut lock);
        let mut unshown = std::mem::take(&mut self.unshown);
        unshown.extend(self.notices.drain(..));
        unshown
    }

    /// Puts the cursor on a fresh line under everything the adapter drew (its margin rows
    /// included), for what the shell or `wujie` prints next.
    fn leave_below(&self, lock: &mut crate::output::ScreenLock<'_>) {
        let mut out = Vec::new();
        if let Some(place) = lock.placement(self.size) {
            let below = place.used_rows.saturating_sub(place.cursor.row + 1);
            if below > 0 {
                out.extend_from_slice(format!("\x1b[{below}B").as_bytes());
            }
        }
        out.extend_from_slice(b"\r\n");
        lock.show(&out);
    }

    /// Ctrl+Z (or SIGTSTP to `wujie`): the session stops like any shell job. The adapter is
    /// stopped first (with SIGSTOP: the stop signals it would raise itself are discarded by the
    /// kernel, since it leads its own session), its output is held, the cursor goes under its
    /// rows and the terminal gets its own settings back; then `wujie` stops itself. The shell's
    /// `fg` continues it with SIGCONT ([`Relay::resumed`]).
    fn suspend(&mut self) {
        self.close_view();
        {
            let mut lock = self.screen.lock();
            lock.hold();
            self.leave_below(&mut lock);
        }
        self.signal_adapter(Signal::SIGSTOP);
        pause_raw_mode();
        let _ = nix::sys::signal::raise(Signal::SIGSTOP);
    }

    /// `wujie` was continued: raw mode again; then, once the terminal said where the cursor is
    /// now (the shell printed meanwhile), the shadow starts there and the adapter is continued
    /// and asked to redraw ([`Relay::after_resume`]).
    fn resumed(&mut self) {
        resume_raw_mode();
        let mut lock = self.screen.lock();
        if lock.placement(self.size).is_none() {
            lock.release();
            drop(lock);
            self.continue_adapter();
            return;
        }
        lock.hold();
        lock.show(CURSOR_POSITION_QUERY);
        self.own_reports_owed += 1;
        self.resuming = Some(Instant::now() + REPORT_WAIT);
    }

    /// The terminal reported the cursor after a stop (`None`: it did not in time, so the
    /// cursor is moved to the bottom row, a known place).
    fn after_resume(&mut self, cursor: Option<CursorPos>) {
        if self.resuming.take().is_none() {
            return;
        }
        let mut lock = self.screen.lock();
        let cursor = cursor.unwrap_or_else(|| {
            let (bytes, bottom) = to_bottom_row(self.size);
            lock.show(&bytes);
            bottom
        });
        lock.restart(self.size, cursor);
        lock.release();
        drop(lock);
        self.continue_adapter();
    }

    /// Continues the adapter and has it redraw (SIGWINCH, as a window-size change would).
    fn continue_adapter(&self) {
        self.signal_adapter(Signal::SIGCONT);
        self.signal_adapter(Signal::SIGWINCH);
    }

    fn signal_adapter(&self, signal: Signal) {
        if let Some(master) = &self.master
            && let Err(e) = master::signal_foreground(master, signal)
        {
            tracing::debug!("could not send {signal} to the adapter: {e}");
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let origin = Instant::from_std(self.screen.origin());
        let trigger = self.trigger.next_deadline().map(|d| origin + d);
        let escape = self
            .escape_due
            .into_iter()
            .chain(self.rewrapped.as_ref().map(|r| r.due))
            .chain(self.resuming)
            .min();
        let notice = match &self.view {
            Some((Shown::Notice(_, until), _)) => Some(*until),
            _ => None,
        };
        let card = self.card_due.as_ref().map(|_| Instant::now() + SETTLE_POLL);
        [trigger, escape, notice, card].into_iter().flatten().min()
    }

    async fn tick(&mut self) {
        if matches!(&self.view, Some((Shown::Notice(_, until), _)) if *until <= Instant::now()) {
            self.close_view();
        }
        if self.resuming.is_some_and(|due| due <= Instant::now()) {
            self.after_resume(None);
        }
        if self
            .rewrapped
            .as_ref()
            .is_some_and(|r| r.due <= Instant::now())
        {
            self.after_rewrap(None).await;
        }
        if self.escape_due.is_some_and(|at| at <= Instant::now()) {
            self.escape_due = None;
            let events = self.scanner.flush_idle();
            self.handle_events(events).await;
        }
        self.poll_trigger();
        self.open_due_card().await;
    }

    /// Tells the trigger about the adapter's latest visible output, then opens the menu when
    /// it is due.
    fn poll_trigger(&mut self) {
        if let Some(from) = self.trigger.waiting_since()
            && let Some(at) = self.screen.last_visible()
            && at >= from
        {
            self.trigger.on_adapter_output(at);
        }
        if let Some(TriggerAction::OpenMenu { query, .. }) = self.trigger.poll(self.screen.now()) {
            let commands = match &self.promoted {
                Some(key) => promoted_commands(key),
                None => default_commands(),
            };
            self.open_menu(Menu::new(commands, &query));
        }
    }

    async fn user_input(&mut self, bytes: &[u8]) {
        let events = self.scanner.feed(bytes);
        let idle = match self.scanner.pending() {
            Pending::Escape => Some(ESCAPE_IDLE),
            Pending::Csi if self.reply_owed() => Some(REPLY_IDLE),
            Pending::Csi => Some(ESCAPE_IDLE),
            Pending::Nothing | Pending::String | Pending::Paste => None,
        };
        self.escape_due = idle.map(|idle| Instant::now() + idle);
        self.handle_events(events).await;
    }

    /// The adapter asked the terminal something a moment ago: its reply may still be coming.
    fn reply_owed(&self) -> bool {
        self.screen
            .last_query()
            .is_some_and(|at| self.screen.now().saturating_sub(at) < REPLY_OWED)
    }

    async fn handle_events(&mut self, events: Vec<InputEvent>) {
        let mut forward = Vec::new();
        for event in events {
            // The user's next key (or paste) closes a notice, then goes where it always goes.
            if matches!(self.view, Some((Shown::Notice(..), _)))
                && matches!(event.kind, InputKind::Typing | InputKind::Paste { .. })
            {
                self.close_view();
            }
            if self.own_reports_owed > 0
                && event.kind == InputKind::Reply(ReplyKind::CursorPosition)
            {
                self.own_reports_owed -= 1;
                if self.resuming.is_some() {
                    self.after_resume(cursor_report(&event.bytes, self.size));
                } else if self.rewrapped.is_some() {
                    self.flush_forward(&mut forward).await;
                    self.after_rewrap(cursor_report(&event.bytes, self.size))
                        .await;
                }
                continue;
            }
            if self.interactive && event.kind == InputKind::Typing && event.bytes == [SUSPEND] {
                self.flush_forward(&mut forward).await;
                self.suspend();
                continue;
            }
            if self.view.is_none() {
                let typed = matches!(event.kind, InputKind::Typing | InputKind::Paste { .. });
                if typed && (self.waiting_for_terminal() || self.trigger.waiting_since().is_some())
                {
                    self.held_keys.push(event);
                    continue;
                }
                forward.extend_from_slice(&event.bytes);
                self.line.apply(&event);
                // The line reads `/wujie…` now: the trigger starts waiting before the next
                // key, which then waits for the menu.
                if typed && self.menu_enabled && self.line.trigger_query().is_some() {
                    self.flush_forward(&mut forward).await;
                }
                continue;
            }
            match event.kind {
                InputKind::Typing => {
                    // What was typed before this key reaches the adapter first.
                    self.flush_forward(&mut forward).await;
                    self.overlay_key(Key::decode(&event.bytes)).await;
                }
                // Focus and mouse events belong to the overlay's screen, not the adapter's.
                InputKind::Focus { .. } | InputKind::Mouse(_) => {}
                // Terminal replies and pastes still go to the adapter, unchanged.
                _ => forward.extend_from_slice(&event.bytes),
            }
        }
        self.flush_forward(&mut forward).await;
    }

    /// The host waits for the terminal to report the cursor (after a resize or a stop).
    fn waiting_for_terminal(&self) -> bool {
        self.rewrapped.is_some() || self.resuming.is_some()
    }

    /// Once the trigger stopped waiting, the keys typed meanwhile go where keys go now: to the
    /// menu when it opened, else to the adapter.
    async fn replay_held_keys(&mut self) {
        if self.held_keys.is_empty()
            || self.trigger.waiting_since().is_some()
            || self.waiting_for_terminal()
        {
            return;
        }
        let held = std::mem::take(&mut self.held_keys);
        self.handle_events(held).await;
    }

    /// Sends forwarded bytes, then tells the trigger detector what the line looks like now.
    async fn flush_forward(&mut self, forward: &mut Vec<u8>) {
        if forward.is_empty() {
            return;
        }
        let sent = self.screen.now();
        self.to_adapter.send(std::mem::take(forward)).await;
        if self.menu_enabled && self.view.is_none() {
            self.trigger.on_input(self.line.trigger_query(), sent);
            self.poll_trigger();
        }
    }

    async fn overlay_key(&mut self, key: Key) {
        let cols = self.size.cols;
        let mut out = Vec::new();
        let Some((shown, overlay)) = &mut self.view else {
            return;
        };
        match shown {
            // A key closes a notice before it gets here.
            Shown::Notice(..) => {}
            Shown::Menu(menu) => match menu.handle_key(key) {
                MenuUpdate::Unchanged => {}
                MenuUpdate::Redraw => {
                    overlay.redraw(&menu.lines(cols, overlay.max_height()), &mut out)
                }
                MenuUpdate::Closed(outcome) => {
                    self.close_view();
                    match outcome {
                        MenuOutcome::Chosen { command, erase } => {
                            self.to_adapter.send(erase).await;
                            self.line.clear();
                            self.trigger.menu_closed();
                            self.trigger.on_input(None, self.screen.now());
                            let _ = self.events.send(HostEvent::Command(command)).await;
                        }
                        MenuOutcome::Dismissed { forward } => {
                            self.trigger.menu_closed();
                            for event in InputScanner::new().feed(&forward) {
                                self.line.apply(&event);
                            }
                            if !forward.is_empty() {
                                self.to_adapter.send(forward).await;
                            }
                            self.trigger
                                .on_input(self.line.trigger_query(), self.screen.now());
                        }
                    }
                    return;
                }
            },
            Shown::Card(card) => match card.handle_key(key) {
                CardUpdate::Unchanged => {}
                CardUpdate::Redraw => {
                    overlay.redraw(&card.lines(cols, overlay.max_height()), &mut out)
                }
                CardUpdate::Decided(choice) => {
                    self.close_view();
                    let _ = self.events.send(HostEvent::Card(choice)).await;
                    return;
                }
            },
        }
        self.screen.lock().show(&out);
    }

    fn open_menu(&mut self, menu: Menu) {
        if menu.matches().is_empty() {
            // Not a command (`/wujiex`): the text simply stays with the adapter.
            self.trigger.menu_closed();
            return;
        }
        let cols = self.size.cols;
        match self.open_overlay(MENU_MAX_ROWS, 1, |rows| menu.lines(cols, rows)) {
            Some(overlay) => self.view = Some((Shown::Menu(menu), overlay)),
            // No room on a tiny terminal: the typed text simply stays with the adapter.
            None => self.trigger.menu_closed(),
        }
    }

    /// A card asked for: it goes under everything the adapter printed before it was asked for
    /// (a native handoff's plan, streamed line by line, and the input box under it), so it
    /// opens once the adapter's output settled ([`Relay::open_due_card`]), else it would hold
    /// the rest of that output back. Keys typed meanwhile still go to the adapter.
    fn ask_card(&mut self, card: IssueCard) {
        self.close_view();
        self.card_due = Some((card, Instant::now() + SETTLE_LIMIT));
    }

    /// Opens the card asked for once the adapter's output settled, or at its limit when output
    /// keeps coming; not while the host waits for the terminal to say where the cursor is.
    async fn open_due_card(&mut self) {
        let Some((_, limit)) = &self.card_due else {
            return;
        };
        let placed = self.resuming.is_none() && self.rewrapped.is_none();
        if placed
            && (*limit <= Instant::now() || self.output_settled())
            && let Some((card, _)) = self.card_due.take()
        {
            self.open_card(card).await;
        }
    }

    /// Nothing unread on the adapter's PTY, everything the output thread read is on the screen
    /// (in this order: the thread marks itself drained only after a read found the PTY empty),
    /// and no visible output for [`SILENCE`], as before the menu.
    fn output_settled(&self) -> bool {
        let unread = self.master.as_ref().is_some_and(master::has_unread_output);
        let quiet = self
            .screen
            .last_visible()
            .is_none_or(|at| self.screen.now().saturating_sub(at) >= SILENCE);
        !unread && self.screen.drained() && quiet
    }

    async fn open_card(&mut self, card: IssueCard) {
        self.close_view();
        let cols = self.size.cols;
        let least = card.least_rows();
        match self.open_overlay(CARD_MAX_ROWS, least, |rows| card.lines(cols, rows)) {
            Some(overlay) => self.view = Some((Shown::Card(card), overlay)),
            // Without room for the card nothing may be created behind the user's back.
            None => {
                let _ = self.events.send(HostEvent::Card(CardChoice::Cancel)).await;
            }
        }
    }

    /// Draws an overlay under the adapter's cursor and holds the adapter's output back while it
    /// is open. `lines` makes the content for a height: the overlay asks for as many rows as the
    /// content takes at `most_rows` (making do with `least` rather than lose a row of the
    /// screen), and the content is made again for the height it gets. Without room (or without
    /// a shadow) the adapter's output flows on.
    fn open_overlay(
        &mut self,
        most_rows: u16,
        least: u16,
        lines: impl Fn(u16) -> Vec<OverlayLine>,
    ) -> Option<Overlay> {
        let wanted = u16::try_from(lines(most_rows).len()).unwrap_or(most_rows);
        let mut lock = self.screen.lock();
        let mut out = Vec::new();
        let opened = lock
            .placement(self.size)
            .and_then(|place| Overlay::open_with(place, wanted, least, lines, &mut out).ok());
        match opened {
            Some(overlay) => {
                lock.hold();
                lock.show(&out);
                Some(overlay)
            }
            None => {
                lock.release();
                None
            }
        }
    }

    /// Removes the overlay and lets the output held back meanwhile through.
    fn close_view(&mut self) {
        let mut out = Vec::new();
        let Some((_, overlay)) = self.view.take() else {
            return;
        };
        overlay.close(&mut out);
        let mut lock = self.screen.lock();
        lock.show(&out);
        lock.release();
    }

    /// Shows the next notice when the overlay is free (and no card waits to open).
    fn show_notice(&mut self) {
        if self.view.is_some() || self.card_due.is_some() {
            return;
        }
        let Some(message) = self.notices.pop_front() else {
            return;
        };
        let cols = self.size.cols;
        // Without room it is only in the summary printed after the session.
        match self.open_overlay(NOTICE_MAX_ROWS, 1, |rows| {
            notice_lines(&message, cols, rows)
        }) {
            Some(overlay) => {
                let until = Instant::now() + NOTICE_SHOWN;
                self.view = Some((Shown::Notice(message, until), overlay));
            }
            None => self.unshown.push(message),
        }
    }

    /// The user's terminal changed size. The shadow and the adapter's PTY follow. An open
    /// overlay is taken down and opened again at the new size, with the adapter's output still
    /// held. The terminal may have rewrapped rows that no longer fit (the area's among them),
    /// moving everything, so on an interactive terminal the host first asks where the cursor
    /// went ([`Relay::after_rewrap`]); elsewhere the area is closed where it was drawn.
    async fn resize(&mut self, size: TermSize) {
        if size == self.size {
            return;
        }
        let open = self.view.take();
        self.screen.lock().resize(size);
        self.size = size;
        self.to_adapter.resize(size).await;
        let open = match (open, self.rewrapped.take()) {
            (Some((shown, overlay)), _) | (None, Some(Rewrapped { shown, overlay, .. })) => {
                (shown, overlay)
            }
            (None, None) => return,
        };
        let (shown, overlay) = open;
        if self.interactive {
            self.own_reports_owed += 1;
            self.screen.lock().show(CURSOR_POSITION_QUERY);
            self.rewrapped = Some(Rewrapped {
                shown,
                overlay,
                due: Instant::now() + REWRAP_REPORT_WAIT,
            });
            return;
        }
        let mut out = Vec::new();
        overlay.close(&mut out);
        self.screen.lock().show(&out);
        self.reopen(shown).await;
    }

    /// The terminal reported its cursor (`cursor`) after a resize, or did not in time: the area
    /// is removed from there (everything under the adapter's margin rows is erased, which also
    /// takes rows the area was rewrapped into) or, without a report, where it was drawn, and
    /// opened again at the new size.
    async fn after_rewrap(&mut self, cursor: Option<CursorPos>) {
        let Some(Rewrapped { shown, overlay, .. }) = self.rewrapped.take() else {
            return;
        };
        let mut out = Vec::new();
        match cursor {
            Some(cursor) => overlay.close_after_rewrap(cursor, self.size, &mut out),
            None => overlay.close(&mut out),
        }
        self.screen.lock().show(&out);
        self.reopen(shown).await;
    }

    async fn reopen(&mut self, shown: Shown) {
        match shown {
            Shown::Menu(menu) => self.open_menu(menu),
            Shown::Card(card) => self.open_card(card).await,
            // Shown again in full at the new size.
            Shown::Notice(message, _) => self.notices.push_front(message),
        }
    }
}
