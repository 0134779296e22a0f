//! A `wujie` child process that a test waits for with a bound, and that is continued and
//! killed on drop — with every process group named in its pid files — if the test ends early.

use std::path::PathBuf;
use std::process::Child;

use nix::sys::signal::Signal;

use super::{pid_alive, signal_group, signal_pid, wait_until};

pub struct Spawned {
    pub child: Child,
    /// Files holding the pid of a process group leader to kill on drop (an adapter, or a
    /// descendant that left the adapter's group).
    pub pid_files: Vec<PathBuf>,
}

impl Spawned {
    pub fn new(child: Child, pid_files: Vec<PathBuf>) -> Spawned {
        Spawned { child, pid_files }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Waits up to `secs` for the process to end; returns its exit code (`None` for a signal).
    pub fn wait(&mut self, secs: u64, what: &str) -> Option<i32> {
        let mut status = None;
        wait_until(secs, what, || {
            status = self.child.try_wait().unwrap();
            status.is_some()
        });
        status.and_then(|s| s.code())
    }

    /// All of stderr, once the process has ended.
    pub fn stderr(&mut self) -> String {
        let mut text = String::new();
        if let Some(mut pipe) = self.child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut text).unwrap();
        }
        text
    }
}

/// The pid a test's process wrote to `file`, if it did.
pub fn pid_in(file: &std::path::Path) -> Option<i32> {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

impl Drop for Spawned {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            signal_pid(self.pid(), Signal::SIGCONT);
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        for file in &self.pid_files {
            if let Some(pid) = pid_in(file)
                && pid_alive(pid)
            {
                signal_group(pid, Signal::SIGKILL);
                signal_pid(pid, Signal::SIGKILL);
            }
        }
    }
}
