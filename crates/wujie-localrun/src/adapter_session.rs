//! One adapter session, the loop shared by `wujie run` and `wujie discuss`: it owns the child,
//! its stdout reader, the single writer of its stdin, the user's stop signals and the watch on
//! the adapter's exit, and maps how the session ended to a status and an exit code. What
//! differs between the flows (a run refuses handoffs; a discussion confirms them, attaches to
//! native sessions and drives the terminal host's menu and cards) is a [`SessionFlow`].
//!
//! Stopping is the same for every flow: the first stop (SIGINT, SIGTERM or SIGHUP to `wujie`,
//! the flow asking for it, or a stop asked from elsewhere, [`AdapterSession::stop_when`])
//! sends SIGTERM to the adapter's group, and what the adapter still prints is read until the
//! group is gone; [`STOP_GRACE`] later, or on a second signal, the group is killed.

use std::future::Future;
use std::pin::Pin;

use nix::sys::signal::Signal;
use tokio::time::{Instant, Sleep};
use wujie_host::user_input::UserInput;
use wujie_host::{
    AdapterStdin, HostEvent, StdinSink, TerminalHost, stdin_is_terminal, terminal_size,
};
use wujie_process::exit_code_of;
use wujie_protocol::api::RunStatus;

use crate::error::LocalRunError;
use crate::registry::{Origin, Provider};
use crate::session::{QuietClose, StdoutEvents, StopSignals};
use crate::spool::{ReadLines, SpoolFile};
use crate::supervisor::{Adapter, AdapterLife, ExitWatch, STDOUT_ABANDONED, STOP_GRACE, SpawnSpec};

/// What a flow made of a chunk of the user's input or of a terminal host event.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Handled {
    /// Pass these bytes on to the adapter.
    Forward(Vec<u8>),
    /// The flow used it (an answer to its card).
    Kept,
    /// The user ended the session (cancelled a handoff): stop the adapter.
    Stop,
    /// The user is back at the agent's input: tell an adapter that listens (see
    /// [`wujie_process::USER_AT_INPUT`]), so it reports the turn on screen as ended.
    UserAtInput,
}

/// What one flow does with what happens during a session.
pub(crate) trait SessionFlow {
    /// Lines read from the adapter's stdout, in order: record them and answer what they ask.
    /// `stopping` is set once the adapter was asked to stop. Returns the message of an invalid
    /// line, which ends the session.
    async fn on_lines(
        &mut self,
        read: ReadLines,
        stopping: bool,
    ) -> Result<Option<String>, LocalRunError>;

    /// A chunk of the user's input, for an adapter on pipes.
    async fn on_input(&mut self, bytes: Vec<u8>) -> Result<Handled, LocalRunError> {
        Ok(Handled::Forward(bytes))
    }

    /// The user's input ended (an adapter on pipes); its stdin closes after a quiet period.
    async fn on_input_end(&mut self) {}

    /// The next event of the terminal host the flow drives; never resolves without one.
    async fn host_event(&mut self) -> HostEvent {
        std::future::pending().await
    }

    async fn on_host_event(&mut self, _event: HostEvent) -> Result<Handled, LocalRunError> {
        Ok(Handled::Kept)
    }

    /// The user's first stop signal, before the adapter is told to stop.
    async fn before_stop(&mut self) {}

    /// A message for the user.
    async fn say(&mut self, message: String);
}

/// A stop asked from elsewhere than this terminal (a run cancelled from another machine or the
/// web UI): what the user at the terminal is told, and the error the end records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ElsewhereStop {
    pub said: String,
    pub error: String,
}

/// Resolves when a stop is asked from elsewhere.
type ElsewhereWatch = Pin<Box<dyn Future<Output = ElsewhereStop> + Send>>;

/// How a session ended, as recorded on a run and returned by `wujie`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Ending {
    pub status: RunStatus,
    /// The adapter's own code, 130 after a cancel, 1 after an invalid line.
    pub exit_code: i32,
    pub error: Option<String>,
}

impl Ending {
    fn exited(code: i32) -> Ending {
        if code == 0 {
            return Ending {
                status: RunStatus::Succeeded,
                exit_code: 0,
                error: None,
            };
        }
        Ending {
            status: RunStatus::Failed,
            exit_code: code,
            error: Some(format!("adapter exited with code {code}")),
        }
    }

    fn invalid(message: String) -> Ending {
        Ending {
            status: RunStatus::Failed,
            exit_code: 1,
            error: Some(message),
        }
    }

    /// A cancel: by the user at this terminal, or as `error` says.
    fn cancelled(error: Option<String>) -> Ending {
        Ending {
            status: RunStatus::Cancelled,
            exit_code: 130,
            error: Some(error.unwrap_or_else(|| "cancelled by the user".to_owned())),
        }
    }
}

/// How reading the adapter's stdout ended.
enum PumpEnd {
    Eof,
    Invalid(String),
    /// With the error of a stop asked from elsewhere.
    Cancelled(Option<String>),
}

/// A started adapter and everything that talks to it.
pub(crate) struct AdapterSession {
    adapter: Adapter,
    events: StdoutEvents,
    /// The single writer of the adapter's stdin (a pipe, or its PTY).
    to_adapter: AdapterStdin,
    /// The adapter is on pipes: the session forwards the user's stdin itself.
    forward_input: bool,
    /// The adapter is a built-in one, which takes [`wujie_process::USER_AT_INPUT`]; to any
    /// other the signal would be fatal.
    hears_user_at_input: bool,
    /// A stop that may be asked from elsewhere ([`AdapterSession::stop_when`]).
    elsewhere: Option<ElsewhereWatch>,
    /// Ctrl+C, SIGTERM and SIGHUP, listened for from before the adapter starts: one that
    /// arrives while it starts stops the adapter instead of ending `wujie` without it.
    signals: StopSignals,
}

impl AdapterSession {
    /// Start the adapter the way its manifest asks: on a PTY behind the terminal host for
    /// `interactive_pty` providers (`menu` enables the `/wujie` menu; the host is returned for
    /// the flow to drive), else on pipes. Its stdout goes through `spool`.
    pub fn spawn(
        spec: &SpawnSpec,
        provider: &Provider,
        menu: bool,
        spool: SpoolFile,
    ) -> Result<(AdapterSession, Option<TerminalHost>), LocalRunError> {
        let signals = StopSignals::install()?;
        let (mut adapter, to_adapter, host) = if provider.manifest.capabilities.interactive_pty {
            let size = terminal_size();
            let terminal = TerminalHost::prepare(size, menu, provider.job_control())?;
            let (adapter, pty) = Adapter::spawn_pty(spec, size, !stdin_is_terminal())?;
            let (host, to_adapter) = TerminalHost::start(pty, terminal)?;
            (adapter, to_adapter, Some(host))
        } else {
            let mut adapter = Adapter::spawn(spec)?;
            let to_adapter = AdapterStdin::spawn(adapter.stdin.take().map(StdinSink::Pipe));
            (adapter, to_adapter, None)
        };
        let events = StdoutEvents::take_from(&mut adapter, spool)?;
        let session = AdapterSession {
            adapter,
            events,
            to_adapter,
            forward_input: host.is_none(),
            hears_user_at_input: provider.origin == Origin::Builtin,
            elsewhere: None,
            signals,
        };
        Ok((session, host))
    }

    /// A handle on the adapter's stdin writer, for the flow's answers (decision frames).
    pub fn stdin(&self) -> AdapterStdin {
        self.to_adapter.clone()
    }

    /// Stops the adapter as a Ctrl+C does once `asked` resolves (it is polled while the
    /// session runs, with or without a terminal), telling the user what it says.
    pub fn stop_when(&mut self, asked: impl Future<Output = ElsewhereStop> + Send + 'static) {
        self.elsewhere = Some(Box::pin(asked));
    }

    /// Read the adapter's stdout to its end and until the adapter exited, then reap it. Stdout
    /// held open by something the adapter started is read only for a bounded time after the
    /// adapter exited ([`ExitWatch`]). On an error the adapter's group is stopped.
    pub async fn run(mut self, flow: &mut impl SessionFlow) -> Result<Ending, LocalRunError> {
        let end = match self.pump(flow).await {
            Ok(end) => end,
            Err(e) => {
                let _ = self.adapter.stop(STOP_GRACE).await;
                return Err(e);
            }
        };
        match end {
            PumpEnd::Eof => {
                let status =
                    self.adapter
                        .wait()
                        .await
                        .map_err(|source| LocalRunError::Adapter {
                            doing: "cannot wait for the adapter to exit",
                            source,
                        })?;
                Ok(Ending::exited(exit_code_of(status)))
            }
            // A stopped adapter's own status is not its answer; what is left of its group
            // goes too.
            PumpEnd::Invalid(message) => {
                let _ = self.adapter.stop(STOP_GRACE).await;
                Ok(Ending::invalid(message))
            }
            PumpEnd::Cancelled(error) => {
                let _ = self.adapter.stop(STOP_GRACE).await;
                Ok(Ending::cancelled(error))
            }
        }
    }

    fn tell_user_at_input(&self) {
        if self.hears_user_at_input {
            self.adapter.signal_alone(wujie_process::USER_AT_INPUT);
        }
    }

    async fn pump(&mut self, flow: &mut impl SessionFlow) -> Result<PumpEnd, LocalRunError> {
        let mut life = ExitWatch::new(&self.adapter);
        let (mut stdout_open, mut exited) = (true, false);
        let mut from_user = self.forward_input.then(UserInput::spawn);
        let mut close = QuietClose::default();
        let mut stop = Stop::new();
        let mut elsewhere = self.elsewhere.take();
        loop {
            tokio::select! {
                read = self.events.next(), if stdout_open => {
                    let Some(read) = read? else {
                        if exited {
                            return Ok(stop.end());
                        }
                        stdout_open = false;
                        continue;
                    };
                    close.on_output();
                    if let Some(message) = flow.on_lines(read, stop.requested).await? {
                        return Ok(PumpEnd::Invalid(message));
                    }
                    // After a stop, nothing the adapter's descendants print delays the end.
                    if !stop.requested {
                        life.on_output();
                    }
                }
                event = flow.host_event() => match flow.on_host_event(event).await? {
                    Handled::Stop => stop.begin(&self.adapter),
                    Handled::UserAtInput => self.tell_user_at_input(),
                    Handled::Forward(_) | Handled::Kept => {}
                },
                input = next_input(&mut from_user), if from_user.is_some() => match input {
                    Some(bytes) => match flow.on_input(bytes).await? {
                        Handled::Forward(bytes) => self.to_adapter.send(bytes).await,
                        Handled::Kept => {}
                        Handled::Stop => stop.begin(&self.adapter),
                        Handled::UserAtInput => self.tell_user_at_input(),
                    },
                    // The end of the user's input closes the adapter's stdin too.
                    None => {
                        from_user = None;
                        flow.on_input_end().await;
                        close.arm();
                    }
                },
                () = close.due(), if close.is_armed() => self.to_adapter.close().await,
                () = self.signals.recv() => {
                    if stop.requested {
                        self.adapter.signal(Signal::SIGKILL);
                    } else {
                        flow.before_stop().await;
                        stop.begin(&self.adapter);
                    }
                }
                asked = stop_asked(&mut elsewhere), if elsewhere.is_some() && !stop.requested => {
                    elsewhere = None;
                    flow.say(asked.said).await;
                    stop.error = Some(asked.error);
                    stop.begin(&self.adapter);
                }
                () = stop.grace_over() => self.adapter.signal(Signal::SIGKILL),
                change = life.next(&self.adapter) => match change {
                    AdapterLife::Exited if !stdout_open => return Ok(stop.end()),
                    AdapterLife::Exited => exited = true,
                    AdapterLife::StdoutAbandoned => {
                        flow.say(STDOUT_ABANDONED.to_owned()).await;
                        return Ok(stop.end());
                    }
                },
            }
        }
    }
}

/// The user's stop: SIGTERM to the group once, SIGKILL after [`STOP_GRACE`].
struct Stop {
    requested: bool,
    /// The error a stop asked from elsewhere records.
    error: Option<String>,
    killed: bool,
    kill_at: Pin<Box<Sleep>>,
}

impl Stop {
    fn new() -> Stop {
        Stop {
            requested: false,
            error: None,
            killed: false,
            kill_at: Box::pin(tokio::time::sleep(STOP_GRACE)),
        }
    }

    fn begin(&mut self, adapter: &Adapter) {
        if std::mem::replace(&mut self.requested, true) {
            return;
        }
        adapter.signal(Signal::SIGTERM);
        self.kill_at.as_mut().reset(Instant::now() + STOP_GRACE);
    }

    /// Resolves once, when the grace period after the stop is over.
    async fn grace_over(&mut self) {
        if !self.requested || self.killed {
            return std::future::pending().await;
        }
        self.kill_at.as_mut().await;
        self.killed = true;
    }

    fn end(&self) -> PumpEnd {
        if self.requested {
            PumpEnd::Cancelled(self.error.clone())
        } else {
            PumpEnd::Eof
        }
    }
}

/// A stop asked from elsewhere; never resolves without a watch.
async fn stop_asked(elsewhere: &mut Option<ElsewhereWatch>) -> ElsewhereStop {
    match elsewhere {
        Some(asked) => asked.await,
        None => std::future::pending().await,
    }
}

/// The next chunk of the user's input; never resolves without a reader.
async fn next_input(from_user: &mut Option<UserInput>) -> Option<Vec<u8>> {
    match from_user {
        Some(input) => input.recv().await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_end_maps_to_the_status_and_the_code_wujie_exits_with() {
        let of = |e: Ending| (e.status, e.exit_code, e.error);
        assert_eq!(of(Ending::exited(0)), (RunStatus::Succeeded, 0, None));
        let failed = of(Ending::exited(3));
        assert_eq!((failed.0, failed.1), (RunStatus::Failed, 3));
        assert_eq!(failed.2.as_deref(), Some("adapter exited with code 3"));
        let cancelled = of(Ending::cancelled(None));
        assert_eq!((cancelled.0, cancelled.1), (RunStatus::Cancelled, 130));
        let elsewhere = of(Ending::cancelled(Some("cancelled by alice".to_owned())));
        assert_eq!(elsewhere.2.as_deref(), Some("cancelled by alice"));
        let invalid = of(Ending::invalid("line 2: not JSON".to_owned()));
        assert_eq!(
            invalid,
            (RunStatus::Failed, 1, Some("line 2: not JSON".to_owned()))
        );
    }
}
