//! Decides when to open the command menu after the input line reached the trigger.
//!
//! The host first writes the user's bytes to the adapter PTY, then reports the line state with
//! [`TriggerDetector::on_input`]. The adapter normally echoes the typed text; the menu must be
//! drawn only after that echo, so the detector waits up to [`ECHO_WAIT`] for visible adapter
//! output, then for [`SILENCE`] without output. If nothing appears within [`ECHO_WAIT`] the menu
//! opens anyway (the adapter may not echo at all). If output never pauses, the menu opens at
//! [`SETTLE_LIMIT`] after the trigger so a busy adapter cannot keep it away forever. A menu
//! taken down by a resize or a stop waits for the adapter's repaint instead
//! ([`TriggerDetector::on_repaint_due`]): longer for it to start, longer for it to end.
//!
//! Time is given by the caller as a [`Duration`] since any fixed origin (e.g.
//! `Instant::now() - start`). The detector never reads a clock.

use std::time::Duration;

/// How long to wait for the adapter to echo the trigger.
pub const ECHO_WAIT: Duration = Duration::from_millis(100);
/// Silence after the echo that confirms the adapter finished drawing.
pub const SILENCE: Duration = Duration::from_millis(10);
/// Longest wait from the trigger to the menu when output keeps coming.
pub const SETTLE_LIMIT: Duration = Duration::from_millis(1000);
/// How long to wait for the adapter's repaint after a resize or `fg` before the menu that was
/// up opens again without it: agents debounce a change of size, and a repaint that came after
/// the menu opened would be held under it.
pub const REPAINT_WAIT: Duration = Duration::from_millis(1000);
/// Silence that ends a repaint: agents repaint in frames (Claude Code clears, then draws in
/// the next frames), so a pause between frames is not its end.
pub const REPAINT_SILENCE: Duration = Duration::from_millis(100);

/// How long the detector waits: for the echo of what was typed, or for a repaint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Patience {
    Echo,
    Repaint,
}

impl Patience {
    /// The wait for the first output.
    fn first(self) -> Duration {
        match self {
            Patience::Echo => ECHO_WAIT,
            Patience::Repaint => REPAINT_WAIT,
        }
    }

    /// The silence that ends the output.
    fn silence(self) -> Duration {
        match self {
            Patience::Echo => SILENCE,
            Patience::Repaint => REPAINT_SILENCE,
        }
    }

    /// The longest wait in all when output keeps coming.
    fn limit(self) -> Duration {
        match self {
            Patience::Echo => SETTLE_LIMIT,
            Patience::Repaint => REPAINT_WAIT.saturating_add(SETTLE_LIMIT),
        }
    }
}

/// What the host should do now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TriggerAction {
    /// Hold back adapter output and open the menu, narrowed by `query` (text after the trigger).
    /// `echoed` tells whether adapter output was seen before opening.
    OpenMenu { query: String, echoed: bool },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// No trigger on the line.
    Idle,
    /// The trigger is on the line, waiting for the echo (or repaint) since `since`.
    AwaitEcho { since: Duration, patience: Patience },
    /// The echo started; `last` is the latest adapter output.
    AwaitSilence {
        since: Duration,
        patience: Patience,
        last: Duration,
    },
    /// The menu is open.
    Open,
    /// The menu was closed while the trigger is still on the line; wait until it goes away so
    /// dismissing the menu does not reopen it at once.
    Spent,
}

/// The trigger state machine.
#[derive(Debug, Clone)]
pub struct TriggerDetector {
    phase: Phase,
    query: String,
}

impl Default for TriggerDetector {
    fn default() -> Self {
        Self::new()
    }
}

impl TriggerDetector {
    pub fn new() -> Self {
        Self {
            phase: Phase::Idle,
            query: String::new(),
        }
    }

    /// Reports the line state after input was written to the PTY: `query` is
    /// [`crate::InputLine::trigger_query`].
    pub fn on_input(&mut self, query: Option<&str>, now: Duration) {
        match (self.phase, query) {
            (Phase::Idle, Some(q)) => {
                self.phase = Phase::AwaitEcho {
                    since: now,
                    patience: Patience::Echo,
                };
                q.clone_into(&mut self.query);
            }
            (Phase::AwaitEcho { .. } | Phase::AwaitSilence { .. }, Some(q)) => {
                q.clone_into(&mut self.query);
            }
            (Phase::AwaitEcho { .. } | Phase::AwaitSilence { .. } | Phase::Spent, None) => {
                self.phase = Phase::Idle;
            }
            (Phase::Idle | Phase::Open | Phase::Spent, _) => {}
        }
    }

    /// [`TriggerDetector::on_input`] for a line that is to get the menu again once the
    /// adapter repainted after a resize or `fg` at `asked` (its output from then on counts):
    /// the repaint may come up to [`REPAINT_WAIT`] later, and the menu waits for it and for
    /// [`REPAINT_SILENCE`] after it.
    pub fn on_repaint_due(&mut self, query: Option<&str>, asked: Duration) {
        self.on_input(query, asked);
        if let Phase::AwaitEcho { patience, .. } = &mut self.phase {
            *patience = Patience::Repaint;
        }
    }

    /// Reports visible adapter output (output that changed the shadow screen).
    pub fn on_adapter_output(&mut self, now: Duration) {
        match self.phase {
            Phase::AwaitEcho { since, patience } => {
                self.phase = Phase::AwaitSilence {
                    since,
                    patience,
                    last: now,
                }
            }
            Phase::AwaitSilence {
                since,
                patience,
                last,
            } => {
                self.phase = Phase::AwaitSilence {
                    since,
                    patience,
                    last: last.max(now),
                }
            }
            Phase::Idle | Phase::Open | Phase::Spent => {}
        }
    }

    /// Returns the action due at `now`, if any. Call it at [`TriggerDetector::next_deadline`]
    /// and after every `on_*` call.
    pub fn poll(&mut self, now: Duration) -> Option<TriggerAction> {
        let deadline = self.next_deadline()?;
        if now < deadline {
            return None;
        }
        let echoed = matches!(self.phase, Phase::AwaitSilence { .. });
        self.phase = Phase::Open;
        Some(TriggerAction::OpenMenu {
            query: self.query.clone(),
            echoed,
        })
    }

    /// When [`TriggerDetector::poll`] should be called next, if a decision is pending.
    pub fn next_deadline(&self) -> Option<Duration> {
        match self.phase {
            Phase::AwaitEcho { since, patience } => Some(since.saturating_add(patience.first())),
            Phase::AwaitSilence {
                since,
                patience,
                last,
            } => Some(
                last.saturating_add(patience.silence())
                    .min(since.saturating_add(patience.limit())),
            ),
            Phase::Idle | Phase::Open | Phase::Spent => None,
        }
    }

    /// While the detector waits for the adapter's echo or its silence: when the trigger was
    /// reached (adapter output from then on counts).
    pub fn waiting_since(&self) -> Option<Duration> {
        match self.phase {
            Phase::AwaitEcho { since, .. } | Phase::AwaitSilence { since, .. } => Some(since),
            Phase::Idle | Phase::Open | Phase::Spent => None,
        }
    }

    /// True between the `OpenMenu` action and [`TriggerDetector::menu_closed`].
    pub fn is_open(&self) -> bool {
        self.phase == Phase::Open
    }

    /// The menu (or the card that followed it) closed. The detector fires again only after the
    /// line stopped being a trigger (call [`crate::InputLine::clear`] first when the host erased
    /// the trigger text).
    pub fn menu_closed(&mut self) {
        if self.phase == Phase::Open {
            self.phase = Phase::Spent;
        }
    }
}
