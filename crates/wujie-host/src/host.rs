//! The terminal host as its users see it: the user's terminal made ready
//! ([`TerminalHost::prepare`]), the relay between it and the adapter's PTY started
//! ([`TerminalHost::start`]), and what the pump that reads the adapter's events says to it.
//!
//! The adapter's output reaches the terminal through a thread of its own
//! ([`crate::output`]); the relay ([`crate::relay`]) owns the rest: the user's input, the
//! trigger, the `/wujie` menu and the issue card drawn as an overlay, signals. The pump
//! receives [`HostEvent`]s (a chosen command, a card decision) and asks for a card with
//! [`TerminalHost::show_card`].

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use wujie_term::{CardChoice, IssueCard, ScreenModel, TermSize};

use crate::error::HostError;
use crate::master;
use crate::output::{OutputThread, Screen};
use crate::raw::{RawMode, stdin_is_terminal};
use crate::relay::{self, Relay, RelayOptions, Request};
use crate::start::{StartScreen, locate_cursor};
use crate::{AdapterStdin, StdinSink};

/// After the adapter exited: how long its PTY may still take to deliver the last output.
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// How the agent behind an adapter goes along with job control (the built-in providers say,
/// in their table; plugins get the default).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct JobControl {
    /// The agent uses Ctrl+Z itself (an undo in its input): the key goes to it instead of
    /// stopping the session; a second one within 3 s stops the session (the agent's own
    /// double press to suspend, which it cannot do under `wujie`). SIGTSTP sent to `wujie`
    /// still stops it.
    pub agent_takes_ctrl_z: bool,
    /// After `fg` the agent repaints in full only when its window size changed (a SIGWINCH of
    /// the same size is not enough): its terminal is made one column narrower, and set back
    /// once it drew.
    pub resize_to_repaint: bool,
    /// The agent stops itself on Ctrl+Z, in a process group of its own in the foreground of
    /// the adapter's terminal, and draws again where the shell left the cursor once continued:
    /// the key goes to it, and the session stops when its group did (looked for during 1 s);
    /// after `fg` it is continued alone, with no nudge to repaint. If it does not stop, a
    /// second Ctrl+Z within 3 s stops the session as any other.
    pub agent_suspends_itself: bool,
}

/// The user's terminal, made ready for a host by [`TerminalHost::prepare`]; dropping it
/// restores the terminal.
pub struct PreparedTerminal {
    size: TermSize,
    menu: bool,
    job: JobControl,
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
    /// shadow screen starts there ([`crate::start`]). `job` says how the agent goes along
    /// with Ctrl+Z and `fg`.
    pub fn prepare(
        size: TermSize,
        menu: bool,
        job: JobControl,
    ) -> Result<PreparedTerminal, HostError> {
        let raw = if stdin_is_terminal() {
            Some(RawMode::enable().map_err(HostError::RawMode)?)
        } else {
            None
        };
        let start = (menu && raw.is_some()).then(|| locate_cursor(size));
        Ok(PreparedTerminal {
            size,
            menu,
            job,
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
            job,
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
        let relay = Relay::new(
            to_adapter.clone(),
            master,
            screen,
            size,
            RelayOptions {
                menu_enabled: menu,
                interactive,
                job,
            },
            events_tx,
        );
        let typed_ahead = start.map(|s| s.typed_ahead).unwrap_or_default();
        let (stop, stopped) = oneshot::channel();
        let done = relay::spawn(relay, output, requests_rx, typed_ahead, stopped)?;
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
