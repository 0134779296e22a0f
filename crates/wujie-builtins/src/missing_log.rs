//! Saying so when an agent is used but its session log is nowhere to be found: an agent CLI
//! that moved its transcripts in a new version would otherwise give a run that "succeeded"
//! with nothing synced and no word why.
//!
//! "Used" is read from the terminal the agent shares with the adapter, without taking any of
//! its input: the kernel keeps a terminal's last-read time (input the agent took) and
//! last-write time (output it drew) on the device node, as `w` reads for idle times, at a
//! granularity of 8 s. The agent's own start-up exchange with the terminal (its queries'
//! answers are input too) is the baseline, taken once it has started; input after it that was
//! followed by output, and then [`MISSING_LOG_AFTER`] without a log, is a user waiting on an
//! agent whose session is not being read.

use std::io::IsTerminal;
use std::os::fd::AsFd;
use std::time::{Duration, SystemTime};

use wujie_protocol::event::{Event, MessageKind, RUN_WARNING_KEY_PREFIX};

use crate::content_message;
use crate::tui::Every;

/// How long after the user's input (and the agent's output after it) a session log may still
/// be missing before the run says so.
pub const MISSING_LOG_AFTER: Duration = Duration::from_secs(30);

/// When the terminal baseline is taken after the agent starts: its start-up queries have been
/// answered by then.
const BASELINE_AFTER: Duration = Duration::from_secs(2);

/// The terminal's last input and output times, as the kernel keeps them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TerminalTimes {
    pub input: SystemTime,
    pub output: SystemTime,
}

impl TerminalTimes {
    /// The times of the terminal on our stdin; `None` when stdin is not one (or says nothing).
    pub fn of_stdin() -> Option<TerminalTimes> {
        let stdin = std::io::stdin();
        if !stdin.is_terminal() {
            return None;
        }
        let meta = std::fs::File::from(stdin.as_fd().try_clone_to_owned().ok()?)
            .metadata()
            .ok()?;
        Some(TerminalTimes {
            input: meta.accessed().ok()?,
            output: meta.modified().ok()?,
        })
    }
}

/// Whether the user has waited on the agent for [`MISSING_LOG_AFTER`]: input after `baseline`
/// (the start-up exchange), output after that input, and the time since the input.
pub fn user_waited(baseline: SystemTime, now: TerminalTimes, at: SystemTime) -> bool {
    now.input > baseline
        && now.output >= now.input
        && at
            .duration_since(now.input)
            .is_ok_and(|waited| waited >= MISSING_LOG_AFTER)
}

/// Watches one run's missing log: said at most once, live or at the end.
#[derive(Debug)]
pub struct MissingLog {
    program: &'static str,
    /// Where the log was looked for, as a user would look for it.
    looked_in: String,
    /// The agent's version, when its package says.
    version: Option<String>,
    started: SystemTime,
    /// The terminal's last input once the agent had started; `None` until then, or without a
    /// terminal.
    baseline: Option<SystemTime>,
    said: bool,
    /// The terminal's times are read once a second, not on every poll of the log.
    check: Every,
}

impl MissingLog {
    pub fn new(program: &'static str, looked_in: String, version: Option<String>) -> MissingLog {
        MissingLog {
            program,
            looked_in,
            version,
            started: SystemTime::now(),
            baseline: None,
            said: false,
            check: Every::new(Duration::from_secs(1)),
        }
    }

    /// A poll without a log: the warning, once the user has waited on the agent.
    pub fn poll(&mut self) -> Option<Event> {
        if self.said || !self.check.due() {
            return None;
        }
        let now = SystemTime::now();
        let times = TerminalTimes::of_stdin()?;
        let Some(baseline) = self.baseline else {
            let started = now
                .duration_since(self.started)
                .is_ok_and(|d| d >= BASELINE_AFTER);
            if started {
                self.baseline = Some(times.input);
            }
            return None;
        };
        user_waited(baseline, times, now).then(|| self.say())
    }

    /// The agent exited without a log ever found: the warning, when the user had typed to it
    /// (a session opened and quit at once writes none) and it was not said yet.
    pub fn at_end(&mut self) -> Option<Event> {
        let baseline = self.baseline?;
        let times = TerminalTimes::of_stdin()?;
        (!self.said && times.input > baseline).then(|| self.say())
    }

    fn say(&mut self) -> Event {
        self.said = true;
        let text = warning(self.program, &self.looked_in, self.version.as_deref());
        wujie_process::stderr_line!("wujie adapter {}: {text}", self.program);
        content_message(
            self.program,
            MessageKind::Error,
            text,
            format!("{RUN_WARNING_KEY_PREFIX}{}:no-session-log", self.program),
        )
    }
}

/// The words of the warning, for the terminal and the run's record.
pub fn warning(program: &str, looked_in: &str, version: Option<&str>) -> String {
    let version = version.map(|v| format!(" {v}")).unwrap_or_default();
    format!(
        "no transcript found at {looked_in}: {program}{version} may write its sessions elsewhere; \
         nothing it does in this run is synced"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + secs)
    }

    fn times(input: u64, output: u64) -> TerminalTimes {
        TerminalTimes {
            input: at(input),
            output: at(output),
        }
    }

    #[test]
    fn a_user_who_typed_and_was_answered_and_waited_is_said_to() {
        assert!(user_waited(at(0), times(8, 9), at(38)));
    }

    #[test]
    fn nothing_is_said_before_the_wait_is_over() {
        assert!(!user_waited(at(0), times(8, 9), at(37)));
    }

    #[test]
    fn the_start_up_exchange_alone_is_not_the_user_typing() {
        assert!(!user_waited(at(0), times(0, 60), at(100)));
    }

    #[test]
    fn input_the_agent_drew_nothing_after_is_not_waited_on() {
        assert!(!user_waited(at(0), times(16, 8), at(100)));
    }

    #[test]
    fn a_clock_set_back_says_nothing() {
        assert!(!user_waited(at(0), times(16, 16), at(1)));
    }

    #[test]
    fn the_warning_says_where_what_and_what_follows() {
        assert_eq!(
            warning("claude", "/home/u/.claude/projects", Some("9.0.0")),
            "no transcript found at /home/u/.claude/projects: claude 9.0.0 may write its sessions elsewhere; nothing it does in this run is synced"
        );
        assert_eq!(
            warning("codex", "/c/sessions", None),
            "no transcript found at /c/sessions: codex may write its sessions elsewhere; nothing it does in this run is synced"
        );
    }
}
