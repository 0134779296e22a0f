//! Every process an adapter or a sidecar started, however it left: a process that moved into a
//! session of its own (`setsid`) and whose parent exited has no parent link or group left to
//! find it by. What it keeps is its environment: each process `wujie` starts carries a mark in
//! [`MARK_ENV`], inherited by whatever it starts, and the processes holding a mark are found in
//! `/proc/<pid>/environ` (Linux; elsewhere none are found, and callers say so).
//!
//! A process of ours ends its marked processes when the adapter or sidecar ends, on every path
//! it sees (normal end, Ctrl+C, SIGTERM, SIGHUP). For the path it cannot see (SIGKILL), a guard
//! process ([`start_guard`]) waits for the end of a pipe only this process holds open, and then
//! ends what is left of every mark of this process.
//!
//! A process that clears its environment (`env -i`) loses the mark: nothing finds it.

use std::io::{self, Read};
use std::path::Path;
use std::process::Stdio;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use crate::tree::is_running;

/// The environment variable that carries a process's mark.
pub const MARK_ENV: &str = "WUJIE_PROCESS_MARK";

/// How long marked processes get between SIGTERM and SIGKILL.
pub const MARK_GRACE: Duration = Duration::from_secs(2);

/// The mark of one started process and its descendants: `<this process's prefix>.<n>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mark(String);

/// What every mark of this process starts with: its pid and start time, so that no other
/// process of the machine, now or later, makes the same marks.
fn prefix() -> &'static str {
    static PREFIX: OnceLock<String> = OnceLock::new();
    PREFIX.get_or_init(|| {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        format!("{}-{nanos}", std::process::id())
    })
}

impl Mark {
    /// A mark no other process start of this machine has.
    pub fn new() -> Mark {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Mark(format!(
            "{}.{}",
            prefix(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ))
    }

    /// The value of [`MARK_ENV`] for the process to start.
    pub fn value(&self) -> &str {
        &self.0
    }
}

impl Default for Mark {
    fn default() -> Self {
        Mark::new()
    }
}

/// The value of `name` in an environment block as `/proc/<pid>/environ` holds it
/// (`NAME=value` entries, each ended by a NUL).
pub fn env_value<'a>(environ: &'a [u8], name: &str) -> Option<&'a [u8]> {
    environ.split(|b| *b == 0).find_map(|entry| {
        entry
            .strip_prefix(name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b"="))
    })
}

/// The running processes (this one aside) whose mark satisfies `wanted`, or `None` where the
/// system offers no `/proc` to read. Processes of other users are unreadable, so never found.
pub fn marked_processes(wanted: impl Fn(&[u8]) -> bool) -> Option<Vec<i32>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let own = std::process::id() as i32;
    let mut found = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == own {
            continue;
        }
        // A process may end, or be another user's, between the listing and the read.
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if env_value(&environ, MARK_ENV).is_some_and(&wanted) && is_running(pid) {
            found.push(pid);
        }
    }
    Some(found)
}

/// What [`stop_marked`] left running (empty when every marked process was seen gone), or why
/// nothing could be looked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkedStop {
    Done { left: Vec<i32> },
    NoListing,
}

/// Ends the processes whose mark `wanted` accepts: SIGTERM, up to `grace` for them to go, then
/// SIGKILL for what is still there (and for what they started meanwhile).
pub async fn stop_marked(wanted: impl Fn(&[u8]) -> bool, grace: Duration) -> MarkedStop {
    let Some(first) = marked_processes(&wanted) else {
        return MarkedStop::NoListing;
    };
    if first.is_empty() {
        return MarkedStop::Done { left: Vec::new() };
    }
    signal_all(&first, Signal::SIGTERM);
    let deadline = tokio::time::Instant::now() + grace;
    while tokio::time::Instant::now() < deadline && first.iter().any(|p| is_running(*p)) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut left = Vec::new();
    // SIGKILL is delivered asynchronously; a few rounds catch what was started meanwhile.
    for _ in 0..50 {
        left = marked_processes(&wanted).unwrap_or_default();
        if left.is_empty() {
            break;
        }
        signal_all(&left, Signal::SIGKILL);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    MarkedStop::Done { left }
}

/// Ends the processes that carry `mark` (see [`stop_marked`]).
pub async fn stop_mark(mark: &Mark, grace: Duration) -> MarkedStop {
    stop_marked(|value| value == mark.value().as_bytes(), grace).await
}

fn signal_all(pids: &[i32], signal: Signal) {
    for pid in pids {
        let _ = kill(Pid::from_raw(*pid), signal);
    }
}

/// Whether `value` is a mark this process made (or, in a guard, the process it guards).
fn of_prefix(prefix: &str, value: &[u8]) -> bool {
    value
        .strip_prefix(prefix.as_bytes())
        .is_some_and(|rest| rest.first() == Some(&b'.'))
}

/// Starts the guard of this process's marks: `program args… <prefix>`, a process that must run
/// [`guard`] with the prefix it is given. It outlives this process (no parent-death signal, a
/// process group of its own, no mark, no standard output or error to hold a pipe open) and
/// reads a pipe whose writing end only this process holds: the end of that pipe is this
/// process's end, whatever its cause.
pub fn start_guard(program: &Path, args: &[&str]) -> io::Result<()> {
    use std::os::unix::process::CommandExt;
    let mut child = std::process::Command::new(program)
        .args(args)
        .arg(prefix())
        .env_remove(MARK_ENV)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()?;
    // Kept open until this process ends (the descriptor is close-on-exec, so no child of ours
    // holds it); the kernel closes it then, on every path.
    std::mem::forget(child.stdin.take());
    // Not waited for: it ends after this process.
    std::mem::forget(child);
    Ok(())
}

/// What a guard process does: wait for the end of its standard input (its owner ended), then
/// end whatever still carries one of the owner's marks.
pub async fn guard(prefix: &str) -> MarkedStop {
    let mut sink = [0u8; 64];
    let stdin = tokio::task::spawn_blocking(move || {
        let mut stdin = io::stdin().lock();
        while !matches!(stdin.read(&mut sink), Ok(0) | Err(_)) {}
    });
    let _ = stdin.await;
    stop_marked(|value| of_prefix(prefix, value), MARK_GRACE).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_value_reads_whole_entries_only() {
        let environ = b"A=1\0WUJIE_PROCESS_MARKX=no\0WUJIE_PROCESS_MARK=12-3.4\0B=\0";
        assert_eq!(env_value(environ, MARK_ENV), Some(&b"12-3.4"[..]));
        assert_eq!(env_value(environ, "B"), Some(&b""[..]));
        assert_eq!(env_value(environ, "C"), None);
        assert_eq!(env_value(b"", MARK_ENV), None);
        assert_eq!(env_value(b"\0\0=\0", MARK_ENV), None);
    }

    #[test]
    fn a_prefix_matches_its_own_marks_only() {
        assert!(of_prefix("12-3", b"12-3.1"));
        assert!(!of_prefix("12-3", b"12-34.1"));
        assert!(!of_prefix("12-3", b"12-3"));
        assert!(!of_prefix("12-3", b"2-3.1"));
    }

    #[test]
    fn marks_differ() {
        let (a, b) = (Mark::new(), Mark::new());
        assert_ne!(a, b);
        assert!(of_prefix(prefix(), a.value().as_bytes()));
    }

    /// A descendant that moved into a session of its own and whose parent exited is found by
    /// its mark alone, and stopped.
    #[tokio::test]
    async fn an_escaped_orphan_is_found_by_its_mark_and_stopped() {
        let dir = tempfile::tempdir().unwrap();
        let pid_file = dir.path().join("escaped.pid");
        let mut cmd = tokio::process::Command::new("sh");
        cmd.arg("-c").arg(format!(
            "setsid sh -c 'echo $$ > {0}; exec sleep 300' </dev/null >/dev/null 2>&1 &\n\
             while [ ! -s {0} ]; do sleep 0.01; done",
            pid_file.display()
        ));
        let mark = Mark::new();
        cmd.env(MARK_ENV, mark.value());
        let status = cmd.status().await.unwrap();
        assert!(status.success());
        let escaped: i32 = std::fs::read_to_string(&pid_file)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        assert!(is_running(escaped), "the escaped process runs on");
        let found = marked_processes(|v| v == mark.value().as_bytes()).unwrap();
        assert_eq!(found, [escaped]);
        let other = Mark::new();
        assert_eq!(
            stop_mark(&other, MARK_GRACE).await,
            MarkedStop::Done { left: vec![] }
        );
        assert!(is_running(escaped), "another mark's stop leaves it alone");
        assert_eq!(
            stop_mark(&mark, MARK_GRACE).await,
            MarkedStop::Done { left: vec![] }
        );
        assert!(!is_running(escaped));
    }
}
