//! The relay: one task, on a thread and runtime of its own (`wujie-relay`, see [`spawn`]),
//! that reads the user's input, scans it, forwards it to the PTY (through the adapter's single
//! stdin writer, so control frames never interleave), runs the trigger, draws the areas (the
//! menu, the card, notices) while the output thread holds the adapter's output back, follows
//! SIGWINCH and job control, and answers [`TerminalHost`](crate::TerminalHost)'s requests.
//!
//! What it is doing with the terminal is its [`Mode`]; every change of mode goes through one
//! of the mode's transitions, and the screen holds the adapter's output back exactly while the
//! mode says so.

use std::collections::VecDeque;
use std::os::fd::OwnedFd;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use tokio::signal::unix::{Signal as UnixSignal, SignalKind, signal};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;
use wujie_term::{
    CURSOR_POSITION_QUERY, CardChoice, CardUpdate, CursorPos, InputEvent, InputKind, InputLine,
    InputScanner, IssueCard, Key, Menu, MenuOutcome, MenuUpdate, NOTICE_SHOWN, Overlay, Pending,
    ReplyKind, SETTLE_LIMIT, SILENCE, TermSize, TriggerAction, TriggerDetector, cursor_report,
    default_commands, promoted_commands,
};

use crate::error::HostError;
use crate::host::{HostEvent, JobControl};
use crate::master;
use crate::mode::{Answered, Area, Due, Mode, Resized, Shown};
use crate::output::{OutputThread, Screen, ScreenLock};
use crate::raw::{pause_raw_mode, resume_raw_mode, terminal_size};
use crate::start::to_bottom_row;
use crate::user_input::UserInput;
use crate::{AdapterStdin, sleep_until_opt};

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

/// Ctrl+Z: suspend, as in a shell.
const SUSPEND: u8 = 0x1a;
/// For an agent that takes Ctrl+Z itself: a second Ctrl+Z this soon after the one it got stops
/// the session. Gemini CLI asks for a second press within as long to suspend itself, which its
/// orphaned process group cannot (the kernel discards the stop), so `wujie` does it for it.
const CTRL_Z_AGAIN: Duration = Duration::from_secs(3);
/// How long after an agent that stops itself got Ctrl+Z its stop is waited for
/// ([`JobControl::agent_suspends_itself`]): Codex leaves its modes and stops within
/// milliseconds; an agent busy elsewhere may take the key for something else.
const AGENT_STOP_WAIT: Duration = Duration::from_secs(1);
/// How often the stop of such an agent is looked for while it is waited for.
const AGENT_STOP_POLL: Duration = Duration::from_millis(5);
/// Erases from the cursor to the end of the screen.
const ERASE_BELOW: &[u8] = b"\x1b[J";
/// After `fg`, how long the adapter's output must have paused before its terminal gets its
/// width back ([`JobControl::resize_to_repaint`]): it drew for the narrower size by then.
const REPAINT_QUIET: Duration = Duration::from_millis(50);
/// The longest the adapter's terminal stays narrower after `fg`, drawn or not.
const REPAINT_LIMIT: Duration = Duration::from_secs(1);

/// What the pump asks of the relay.
pub enum Request {
    ShowCard(IssueCard),
    Notice(String),
    Promoted(String),
}

/// Runs the relay on a thread of its own, with a runtime of its own. The relay shares the
/// terminal's lock with the output thread, which holds it while it writes to the terminal; a
/// terminal that stops taking output (a stalled ssh session) blocks that write, and then the
/// relay too. On a thread of its own that stalls only the relay: on a runtime worker it would
/// stall every task the worker runs (on a one-core machine, all of them: signals, stopping the
/// adapter, delivery). Returns once the relay's signals are installed; the receiver gets the
/// notices there was no room for when the relay ends, unless `stopped` ended it first.
pub fn spawn(
    relay: Relay,
    output: OutputThread,
    mut requests: mpsc::Receiver<Request>,
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
                let mut signals = match HostSignals::install(relay.interactive) {
                    Ok(signals) => signals,
                    Err(e) => {
                        let _ = ready_tx.send(Err(e));
                        return;
                    }
                };
                let _ = ready_tx.send(Ok(()));
                let relayed = relay.run(output, &mut signals, &mut requests, typed_ahead);
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

/// The adapter's terminal made narrower at `fg` so that the agent repaints in full.
struct Narrowed {
    /// When the adapter was continued ([`Screen::now`]): output after it is the repaint.
    since: Duration,
    /// When its width comes back whatever it drew.
    limit: Instant,
}

/// Notices on their way to the user.
#[derive(Default)]
struct Notices {
    /// Waiting for the terminal to be free.
    waiting: VecDeque<String>,
    /// There was no room for them: printed after the session.
    unshown: Vec<String>,
}

pub struct Relay {
    to_adapter: AdapterStdin,
    /// The adapter's PTY master, to signal its foreground process group.
    master: OwnedFd,
    screen: Arc<Screen>,
    events: mpsc::Sender<HostEvent>,
    size: TermSize,
    /// Raw mode on a terminal: the host can ask it things, and Ctrl+Z stops the session.
    interactive: bool,
    menu_enabled: bool,
    job: JobControl,
    /// When the agent, which takes Ctrl+Z itself, got the last one ([`CTRL_Z_AGAIN`]).
    ctrl_z_given: Option<Instant>,
    /// Until when the stop of an agent that stops itself, which got Ctrl+Z, is waited for
    /// ([`AGENT_STOP_WAIT`]).
    agent_stop_due: Option<Instant>,
    /// At the last stop the agent stopped itself, and the session with it: after `fg` it is
    /// continued alone, as it redraws by itself. Set by every stop.
    agent_stopped_itself: bool,
    /// `wujie` stopped itself and has not gone on yet: the adapter's terminal modes were left
    /// for the shell, and are set again when it goes on.
    suspended: bool,
    /// After `fg`, the adapter's terminal is one column narrower until it drew
    /// ([`JobControl::resize_to_repaint`]).
    narrowed: Option<Narrowed>,
    /// What the relay is doing with the terminal.
    mode: Mode,
    scanner: InputScanner,
    /// When the scanner hands over the unfinished sequence it holds, unless more bytes come.
    escape_due: Option<Instant>,
    line: InputLine,
    trigger: TriggerDetector,
    /// When the user's terminal last changed size: the adapter's repaint for it counts from
    /// then ([`Relay::reopen_after_repaint`]).
    resized_at: Duration,
    /// The menu that was up when a resize or a stop took it down: the one opened again for
    /// the same line keeps what was typed into it and its selection.
    menu_aside: Option<Menu>,
    /// Keys typed while the trigger waits for the adapter's echo (or while the host waits for
    /// the terminal to say where the cursor is): they go to the menu once it opens (or to the
    /// adapter when it does not).
    held_keys: Vec<InputEvent>,
    /// Cursor position reports the host asked for itself and has not received yet: they are
    /// the host's, not the adapter's (also when they come after the host stopped waiting).
    own_reports_owed: u32,
    /// A card asked for, waiting (until the instant at the latest) for the adapter's output to
    /// settle.
    card_due: Option<(IssueCard, Instant)>,
    notices: Notices,
    /// The issue the discussion became.
    promoted: Option<String>,
}

/// What a relay does besides relaying.
pub struct RelayOptions {
    /// The `/wujie` menu (discussions).
    pub menu_enabled: bool,
    /// On a terminal in raw mode.
    pub interactive: bool,
    pub job: JobControl,
}

impl Relay {
    pub fn new(
        to_adapter: AdapterStdin,
        master: OwnedFd,
        screen: Arc<Screen>,
        size: TermSize,
        options: RelayOptions,
        events: mpsc::Sender<HostEvent>,
    ) -> Relay {
        let RelayOptions {
            menu_enabled,
            interactive,
            job,
        } = options;
        Relay {
            to_adapter,
            master,
            screen,
            events,
            size,
            interactive,
            menu_enabled,
            job,
            ctrl_z_given: None,
            agent_stop_due: None,
            agent_stopped_itself: false,
            suspended: false,
            narrowed: None,
            mode: Mode::Passing,
            scanner: InputScanner::new(),
            escape_due: None,
            line: InputLine::new(),
            trigger: TriggerDetector::new(),
            resized_at: Duration::ZERO,
            menu_aside: None,
            held_keys: Vec::new(),
            own_reports_owed: 0,
            card_due: None,
            notices: Notices::default(),
            promoted: None,
        }
    }

    /// Relays until every process that had the adapter's terminal closed it; returns the
    /// notices there was no room for.
    async fn run(
        mut self,
        mut output: OutputThread,
        signals: &mut HostSignals,
        requests: &mut mpsc::Receiver<Request>,
        typed_ahead: Vec<u8>,
    ) -> Vec<String> {
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
                        if !self.interactive {
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
                Some(()) = recv_opt(&mut signals.stop) => self.suspend(false),
                Some(()) = recv_opt(&mut signals.cont) => self.resumed(),
                Some(request) = requests.recv() => match request {
                    Request::ShowCard(card) => self.ask_card(card),
                    Request::Notice(message) => self.notices.waiting.push_back(message),
                    Request::Promoted(key) => self.promoted = Some(key),
                },
                () = sleep_until_opt(deadline), if deadline.is_some() => self.tick().await,
            }
            self.replay_held_keys().await;
            self.show_notice();
        }
        self.end()
    }

    /// Moves to the mode `transition` makes of the current one; returns what the transition
    /// says to do next.
    fn step<T>(&mut self, transition: impl FnOnce(Mode) -> (Mode, T)) -> T {
        let (mode, then) = transition(std::mem::replace(&mut self.mode, Mode::Passing));
        self.mode = mode;
        then
    }

    /// The adapter is gone: never leave an area or held output behind, and leave the cursor on
    /// a fresh line under everything it drew (its margin rows included), so what `wujie`
    /// prints next does not land inside the adapter's last screen. An adapter that ended
    /// without leaving the modes it set (killed, crashed) leaves them through us, as at a stop:
    /// the shell gets its screen, its cursor and no mouse reporting back.
    fn end(mut self) -> Vec<String> {
        let area = std::mem::replace(&mut self.mode, Mode::Passing).end();
        let mut lock = self.screen.lock();
        if let Some(area) = area {
            take_down(&mut lock, area.overlay);
        }
        lock.release();
        self.leave_below(&mut lock);
        lock.leave_modes();
        drop(lock);
        let Notices {
            waiting,
            mut unshown,
        } = std::mem::take(&mut self.notices);
        unshown.extend(waiting);
        unshown
    }

    /// Puts the cursor on a fresh line under everything the adapter drew (its margin rows
    /// included), for what the shell or `wujie` prints next.
    fn leave_below(&self, lock: &mut ScreenLock<'_>) {
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
    /// rows, the terminal modes it set are left (its alternate screen too, which gives the
    /// shell its screen back) and the terminal gets its own settings back; then `wujie` stops
    /// itself. The shell's `fg` continues it with SIGCONT ([`Relay::resumed`]).
    /// `agent_stopped` says whether the agent stopped itself first, which decides how it is
    /// continued (`agent_stopped_itself`).
    fn suspend(&mut self, agent_stopped: bool) {
        self.agent_stopped_itself = agent_stopped;
        self.widen();
        let area = self.step(Mode::stop);
        {
            let screen = Arc::clone(&self.screen);
            let mut lock = screen.lock();
            if let Some(area) = area {
                take_down(&mut lock, area.overlay);
                // What the adapter printed while the area was up is on the screen before the
                // shell's turn.
                lock.release();
                self.put_aside(area.shown);
            }
            lock.hold();
            self.leave_below(&mut lock);
            // What the adapter drew under its cursor (an inline agent's hint rows, which
            // `wujie run` keeps no shadow to step over) is not left for the shell to print
            // over; the adapter draws it again after `fg`.
            lock.show(ERASE_BELOW);
            lock.leave_modes();
        }
        self.suspended = true;
        self.signal_adapter(Signal::SIGSTOP);
        pause_raw_mode();
        let _ = nix::sys::signal::raise(Signal::SIGSTOP);
    }

    /// `wujie` was continued: raw mode again; then, once the terminal said where the cursor is
    /// now (the shell printed meanwhile), the shadow starts there, the adapter's terminal modes
    /// are set again, and the adapter is continued and asked to redraw ([`Relay::resume_at`]).
    fn resumed(&mut self) {
        resume_raw_mode();
        let screen = Arc::clone(&self.screen);
        let mut lock = screen.lock();
        let placed = lock.placement(self.size).is_some();
        let area = self.step(|mode| mode.continued(placed, Instant::now()));
        if let Some(area) = area {
            take_down(&mut lock, area.overlay);
            lock.release();
            self.put_aside(area.shown);
        }
        if !self.mode.holds_output() {
            self.restore_modes(&mut lock);
            lock.release();
            drop(lock);
            self.continue_adapter();
            return;
        }
        lock.hold();
        lock.show(CURSOR_POSITION_QUERY);
        self.own_reports_owed += 1;
    }

    /// The terminal said where the cursor is (`cursor`; `None`: it did not in time), or the
    /// wait for it ended: what waited for it goes on. Input forwarded before the answer
    /// (`forward`) reaches the adapter before an area opens again.
    async fn answered(&mut self, cursor: Option<CursorPos>, forward: &mut Vec<u8>) {
        if matches!(self.mode, Mode::Rewrapping { .. }) {
            self.flush_forward(forward).await;
        }
        match self.step(Mode::answered) {
            Answered::Nothing => {}
            Answered::Resume => self.resume_at(cursor),
            Answered::Reopen(area) => self.after_rewrap(area, cursor),
        }
    }

    /// An area was up when `wujie` stopped (or was continued): what it showed comes back once
    /// the adapter redrew after the resume ([`Relay::resume_at`]). A menu is dismissed and the
    /// trigger made ready to fire again for the line (still `/wujie…`), a card is asked for
    /// again, a notice waits for its turn again.
    fn put_aside(&mut self, shown: Shown) {
        match shown {
            Shown::Menu(menu) => {
                self.menu_aside = Some(menu);
                self.trigger.menu_closed();
                self.trigger.on_input(None, self.screen.now());
            }
            Shown::Card(card) => self.card_due = Some((card, Instant::now() + SETTLE_LIMIT)),
            Shown::Notice { message, .. } => self.notices.waiting.push_front(message),
        }
    }

    /// After a stop: the shadow starts again at `cursor` (without one the cursor is moved to
    /// the bottom row, a known place), the output passes and the adapter goes on and redraws.
    /// The trigger, and a card asked for, wait for that redraw as they wait for any output: a
    /// menu or card that was up at the stop opens again under it.
    fn resume_at(&mut self, cursor: Option<CursorPos>) {
        let screen = Arc::clone(&self.screen);
        let mut lock = screen.lock();
        let cursor = cursor.unwrap_or_else(|| {
            let (bytes, bottom) = to_bottom_row(self.size);
            lock.show(&bytes);
            bottom
        });
        lock.restart(self.size, cursor);
        self.restore_modes(&mut lock);
        lock.release();
        drop(lock);
        let continued = self.screen.now();
        self.continue_adapter();
        if self.menu_enabled {
            self.await_repaint(continued);
        }
        if let Some((_, limit)) = &mut self.card_due {
            *limit = Instant::now() + SETTLE_LIMIT;
        }
    }

    /// After a stop of `wujie`'s own: the terminal modes the adapter set, left for the shell,
    /// are set again (before the output held since, which was printed in them). Not after
    /// anyone else's SIGCONT: nothing was left then.
    fn restore_modes(&mut self, lock: &mut ScreenLock<'_>) {
        if std::mem::take(&mut self.suspended) {
            lock.restore_modes();
            if self.job.resize_to_repaint && !self.agent_stopped_itself && self.size.cols > 1 {
                self.narrow();
            }
        }
    }

    /// Continues the adapter and has it redraw (SIGWINCH, as a window-size change would),
    /// unless its agent stopped itself: that one redraws by itself where the cursor is now,
    /// and takes a SIGWINCH for a change of size, which Codex answers by clearing the
    /// scrollback and drawing its whole transcript again.
    fn continue_adapter(&self) {
        self.signal_adapter(Signal::SIGCONT);
        if !self.agent_stopped_itself {
            self.signal_adapter(Signal::SIGWINCH);
        }
    }

    /// Makes the adapter's terminal one column narrower (the adapter still stopped: it sees
    /// the new size once continued), for an agent that repaints in full only on a change of
    /// size; [`Relay::widen`] sets it back once the adapter drew.
    fn narrow(&mut self) {
        let narrower = TermSize {
            cols: self.size.cols - 1,
            ..self.size
        };
        if let Err(e) = master::set_size(&self.master, narrower) {
            tracing::debug!("could not make the adapter's terminal narrower: {e}");
            return;
        }
        self.narrowed = Some(Narrowed {
            since: self.screen.now(),
            limit: Instant::now() + REPAINT_LIMIT,
        });
    }

    /// Whether the adapter drew since its terminal was made narrower and paused since (or
    /// the limit passed): then it gets its width back.
    fn repainted(&self, narrowed: &Narrowed) -> bool {
        let now = self.screen.now();
        let drew = self
            .screen
            .last_output()
            .is_some_and(|at| at > narrowed.since && now.saturating_sub(at) >= REPAINT_QUIET);
        drew || narrowed.limit <= Instant::now()
    }

    /// The adapter's terminal gets its width back (a second SIGWINCH, a second repaint).
    fn widen(&mut self) {
        if self.narrowed.take().is_some()
            && let Err(e) = master::set_size(&self.master, self.size)
        {
            tracing::debug!("could not set the adapter's terminal size back: {e}");
        }
    }

    fn signal_adapter(&self, signal: Signal) {
        if let Err(e) = master::signal_foreground(&self.master, signal) {
            tracing::debug!("could not send {signal} to the adapter: {e}");
        }
    }

    fn next_deadline(&self) -> Option<Instant> {
        let origin = Instant::from_std(self.screen.origin());
        let trigger = self.trigger.next_deadline().map(|d| origin + d);
        let card = self.card_due.as_ref().map(|_| Instant::now() + SETTLE_POLL);
        let narrowed = self.narrowed.as_ref().map(|_| Instant::now() + SETTLE_POLL);
        let agent_stop = self
            .agent_stop_due
            .map(|_| Instant::now() + AGENT_STOP_POLL);
        [
            trigger,
            self.escape_due,
            self.mode.deadline(),
            card,
            narrowed,
            agent_stop,
        ]
        .into_iter()
        .flatten()
        .min()
    }

    async fn tick(&mut self) {
        match self.mode.due(Instant::now()) {
            Some(Due::NoticeEnd) => self.close_area(),
            Some(Due::NoAnswer) => self.answered(None, &mut Vec::new()).await,
            None => {}
        }
        if self.escape_due.is_some_and(|at| at <= Instant::now()) {
            self.escape_due = None;
            let events = self.scanner.flush_idle();
            self.handle_events(events).await;
        }
        if self.narrowed.as_ref().is_some_and(|n| self.repainted(n)) {
            self.widen();
        }
        self.poll_agent_stop();
        self.poll_trigger();
        self.open_due_card().await;
    }

    /// The menu is to open again for the line once the adapter repainted after a resize or
    /// `fg` at `asked` ([`TriggerDetector::on_repaint_due`]); a repaint already drawn since
    /// counts at once.
    fn await_repaint(&mut self, asked: Duration) {
        self.trigger
            .on_repaint_due(self.line.trigger_query(), asked);
        self.poll_trigger();
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
            let menu = Menu::new(commands, &query);
            let menu = match self.menu_aside.take() {
                Some(earlier) => menu.carrying_over(&earlier),
                None => menu,
            };
            self.open_menu(menu);
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
            let typed = matches!(event.kind, InputKind::Typing | InputKind::Paste { .. });
            // The user's next key (or paste) closes a notice, then goes where it always goes.
            if typed && self.mode.shows_notice() {
                self.close_area();
            }
            if self.own_reports_owed > 0
                && event.kind == InputKind::Reply(ReplyKind::CursorPosition)
            {
                self.own_reports_owed -= 1;
                self.answered(cursor_report(&event.bytes, self.size), &mut forward)
                    .await;
                continue;
            }
            // An agent that stops itself on Ctrl+Z comes back with its input line as it was.
            let mut line_unchanged = false;
            if self.interactive && event.kind == InputKind::Typing && event.bytes == [SUSPEND] {
                if self.ctrl_z_stops() {
                    self.flush_forward(&mut forward).await;
                    self.suspend(false);
                    continue;
                }
                self.ctrl_z_given = Some(Instant::now());
                if self.job.agent_suspends_itself {
                    self.agent_stop_due = Some(Instant::now() + AGENT_STOP_WAIT);
                    line_unchanged = true;
                }
            }
            if !matches!(self.mode, Mode::Open(_)) {
                if typed
                    && (self.mode.waits_for_terminal() || self.trigger.waiting_since().is_some())
                {
                    self.held_keys.push(event);
                    continue;
                }
                forward.extend_from_slice(&event.bytes);
                if !line_unchanged {
                    self.line.apply(&event);
                }
                if typed {
                    // The line went on without the menu coming back: a later menu on it is a
                    // new one, not the one put aside.
                    self.menu_aside = None;
                }
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
                    self.area_key(Key::decode(&event.bytes)).await;
                }
                // Focus and mouse events belong to the area's screen, not the adapter's.
                InputKind::Focus { .. } | InputKind::Mouse(_) => {}
                // Terminal replies and pastes still go to the adapter, unchanged.
                _ => forward.extend_from_slice(&event.bytes),
            }
        }
        self.flush_forward(&mut forward).await;
    }

    /// Whether Ctrl+Z stops the session now: always, unless the agent takes it itself (or
    /// stops itself on it, with nothing of ours up); then when it comes again within
    /// [`CTRL_Z_AGAIN`] of the one the agent got.
    fn ctrl_z_stops(&mut self) -> bool {
        let again = self
            .ctrl_z_given
            .take()
            .is_some_and(|at| at.elapsed() < CTRL_Z_AGAIN);
        let agent_takes_it = self.job.agent_takes_ctrl_z
            || (self.job.agent_suspends_itself && matches!(self.mode, Mode::Passing));
        !agent_takes_it || again
    }

    /// An agent that stops itself got Ctrl+Z: once its group stopped, the session stops with
    /// it; after [`AGENT_STOP_WAIT`] without a stop the key was the agent's to use.
    fn poll_agent_stop(&mut self) {
        let Some(due) = self.agent_stop_due else {
            return;
        };
        if master::foreground_stopped(&self.master) {
            self.agent_stop_due = None;
            self.suspend(true);
        } else if Instant::now() >= due {
            self.agent_stop_due = None;
        }
    }

    /// Once the trigger stopped waiting, the keys typed meanwhile go where keys go now: to the
    /// menu when it opened, else to the adapter.
    async fn replay_held_keys(&mut self) {
        if self.held_keys.is_empty()
            || self.trigger.waiting_since().is_some()
            || self.mode.waits_for_terminal()
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
        if self.menu_enabled && !matches!(self.mode, Mode::Open(_)) {
            self.trigger.on_input(self.line.trigger_query(), sent);
            self.poll_trigger();
        }
    }

    /// A key for the open area.
    async fn area_key(&mut self, key: Key) {
        let cols = self.size.cols;
        let mut out = Vec::new();
        let Some(Area { shown, overlay }) = self.mode.area_mut() else {
            return;
        };
        match shown {
            // A key closes a notice before it gets here.
            Shown::Notice { .. } => {}
            Shown::Menu(menu) => match menu.handle_key(key) {
                MenuUpdate::Unchanged => {}
                MenuUpdate::Redraw => {
                    overlay.redraw(&menu.lines(cols, overlay.max_height()), &mut out)
                }
                MenuUpdate::Closed(outcome) => {
                    self.close_area();
                    self.menu_closed(outcome).await;
                    return;
                }
            },
            Shown::Card(card) => match card.handle_key(key) {
                CardUpdate::Unchanged => {}
                CardUpdate::Redraw => {
                    overlay.redraw(&card.lines(cols, overlay.max_height()), &mut out)
                }
                CardUpdate::Decided(choice) => {
                    self.close_area();
                    let _ = self.events.send(HostEvent::Card(choice)).await;
                    return;
                }
            },
        }
        self.screen.lock().show(&out);
    }

    /// The menu closed with `outcome`: a chosen command erases the trigger text from the
    /// adapter's line and goes to the pump; a dismissed menu gives the adapter the keys it did
    /// not take.
    async fn menu_closed(&mut self, outcome: MenuOutcome) {
        self.trigger.menu_closed();
        match outcome {
            MenuOutcome::Chosen { command, erase } => {
                self.to_adapter.send(erase).await;
                self.line.clear();
                self.trigger.on_input(None, self.screen.now());
                let _ = self.events.send(HostEvent::Command(command)).await;
            }
            MenuOutcome::Dismissed { forward } => {
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
    }

    fn open_menu(&mut self, menu: Menu) {
        if menu.matches().is_empty() {
            // Not a command (`/wujiex`): the text simply stays with the adapter.
            self.trigger.menu_closed();
            return;
        }
        if self.open_area(Shown::Menu(menu)).is_err() {
            // No room on a tiny terminal, or not now (another area is up, the host waits for
            // the terminal): the typed text simply stays with the adapter.
            self.trigger.menu_closed();
        }
    }

    /// A card asked for: it goes under everything the adapter printed before it was asked for
    /// (a native handoff's plan, streamed line by line, and the input box under it), so it
    /// opens once the adapter's output settled ([`Relay::open_due_card`]), else it would hold
    /// the rest of that output back. Keys typed meanwhile still go to the adapter.
    fn ask_card(&mut self, card: IssueCard) {
        self.close_area();
        self.card_due = Some((card, Instant::now() + SETTLE_LIMIT));
    }

    /// Opens the card asked for once the adapter's output settled, or at its limit when output
    /// keeps coming; not while the host waits for the terminal to say where the cursor is.
    async fn open_due_card(&mut self) {
        let Some((_, limit)) = &self.card_due else {
            return;
        };
        if self.mode.can_draw()
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
        let unread = master::has_unread_output(&self.master);
        let quiet = self
            .screen
            .last_visible()
            .is_none_or(|at| self.screen.now().saturating_sub(at) >= SILENCE);
        !unread && self.screen.drained() && quiet
    }

    async fn open_card(&mut self, card: IssueCard) {
        self.close_area();
        if self.open_area(Shown::Card(card)).is_err() {
            // Without room for the card nothing may be created behind the user's back.
            let _ = self.events.send(HostEvent::Card(CardChoice::Cancel)).await;
        }
    }

    /// Shows the next notice when the terminal is free (and no card waits to open).
    fn show_notice(&mut self) {
        if self.mode.holds_output() || self.card_due.is_some() {
            return;
        }
        let Some(message) = self.notices.waiting.pop_front() else {
            return;
        };
        let until = Instant::now() + NOTICE_SHOWN;
        // Without room it is only in the summary printed after the session.
        if let Err(Shown::Notice { message, .. }) = self.open_area(Shown::Notice { message, until })
        {
            self.notices.unshown.push(message);
        }
    }

    /// Draws an area for `shown` under the adapter's cursor and holds the adapter's output back
    /// while it is open; only while the output passes. The area asks for as many rows as the
    /// content takes at its most (making do with its least rather than lose a row of the
    /// screen), and the content is made again for the height it gets. Without room (or without
    /// a shadow) the adapter's output flows on, and `shown` comes back.
    fn open_area(&mut self, shown: Shown) -> Result<(), Shown> {
        if !matches!(self.mode, Mode::Passing) {
            return Err(shown);
        }
        let cols = self.size.cols;
        let (most, least) = shown.rows();
        let lines = |rows| shown.lines(cols, rows);
        let wanted = u16::try_from(lines(most).len()).unwrap_or(most);
        let mut lock = self.screen.lock();
        let mut out = Vec::new();
        let opened = lock
            .placement(self.size)
            .and_then(|place| Overlay::open_with(place, wanted, least, lines, &mut out).ok());
        let Some(overlay) = opened else {
            lock.release();
            return Err(shown);
        };
        lock.hold();
        lock.show(&out);
        drop(lock);
        self.mode = Mode::Open(Area { shown, overlay });
        Ok(())
    }

    /// Takes the open area down and lets the output held back meanwhile through.
    fn close_area(&mut self) {
        let Some(area) = self.step(Mode::close) else {
            return;
        };
        let mut lock = self.screen.lock();
        take_down(&mut lock, area.overlay);
        lock.release();
    }

    /// The user's terminal changed size. The shadow and the adapter's PTY follow. An area is
    /// taken down and opened again once the adapter repainted for the new size
    /// ([`Relay::reopen_after_repaint`]). The terminal may have rewrapped rows that no longer
    /// fit (the area's among them), moving everything, so on an interactive terminal the host
    /// first asks where the cursor went ([`Relay::after_rewrap`]); elsewhere the area is taken
    /// down where it was drawn.
    async fn resize(&mut self, size: TermSize) {
        if size == self.size {
            return;
        }
        self.screen.lock().resize(size);
        self.resized_at = self.screen.now();
        self.size = size;
        self.to_adapter.resize(size).await;
        let interactive = self.interactive;
        match self.step(|mode| mode.resized(interactive, Instant::now())) {
            Resized::Nothing => {}
            Resized::AskCursor => {
                self.own_reports_owed += 1;
                self.screen.lock().show(CURSOR_POSITION_QUERY);
            }
            Resized::Reopen(area) => {
                take_down(&mut self.screen.lock(), area.overlay);
                self.reopen_after_repaint(area.shown);
            }
        }
    }

    /// The terminal reported its cursor (`cursor`) after a resize, or did not in time: the area
    /// is removed from there (everything under the adapter's margin rows is erased, which also
    /// takes rows the area was rewrapped into) or, without a report, where it was drawn, and
    /// opened again once the adapter repainted.
    fn after_rewrap(&mut self, area: Area, cursor: Option<CursorPos>) {
        let mut out = Vec::new();
        match cursor {
            Some(cursor) => area.overlay.close_after_rewrap(cursor, self.size, &mut out),
            None => area.overlay.close(&mut out),
        }
        self.screen.lock().show(&out);
        self.reopen_after_repaint(area.shown);
    }

    /// After a resize, with the area taken down: the adapter's output passes (it repaints for
    /// the new size on a screen that is its own again; opened at once, the area would hold
    /// that repaint back and let it land on a screen the adapter did not draw), and what the
    /// area showed comes back once that output settled, as after a stop
    /// ([`Relay::put_aside`]): the trigger waits for the repaint, the line still reading
    /// `/wujie…`, and opens the menu again under it (keys typed meanwhile go to it); a card is
    /// asked for again; a notice waits for its turn again.
    fn reopen_after_repaint(&mut self, shown: Shown) {
        let menu = matches!(shown, Shown::Menu(_));
        self.screen.lock().release();
        self.put_aside(shown);
        if menu {
            self.await_repaint(self.resized_at);
        }
    }
}

/// Removes an area from the screen, as it was drawn.
fn take_down(lock: &mut ScreenLock<'_>, overlay: Overlay) {
    let mut out = Vec::new();
    overlay.close(&mut out);
    lock.show(&out);
}
