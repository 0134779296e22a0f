//! A child run as the foreground job of this process's terminal, as a shell runs one: a
//! process group of its own that the terminal's keys and reads belong to.
//!
//! An adapter on a PTY leads its own session, so the group it shares with its agent has no
//! parent elsewhere in the session: it is orphaned, and the kernel discards the stop an agent
//! sends itself on Ctrl+Z. In a group of its own, under the adapter in the same session, the
//! agent's group is not orphaned and its stop stops it, as under a shell.

use std::io;
use std::os::fd::BorrowedFd;

use nix::errno::Errno;
use nix::sys::signal::{SigSet, SigmaskHow, Signal, sigprocmask};
use nix::unistd::{Pid, getpid, setpgid, tcsetpgrp};

/// Has the child `cmd` starts lead a process group of its own and take the foreground of the
/// terminal on its standard input before it runs. (A group outside the foreground that sets
/// it would get SIGTTOU; the child blocks it meanwhile, and the kernel then lets it through.)
pub fn in_foreground_group(cmd: &mut tokio::process::Command) {
    // SAFETY: between fork and exec the hook makes only async-signal-safe system calls
    // (sigprocmask, setpgid, getpid, tcsetpgrp), allocates nothing and touches no memory
    // shared with other threads, as `pre_exec` requires; descriptor 0 stays open throughout.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            let ttou = ttou();
            sigprocmask(SigmaskHow::SIG_BLOCK, Some(&ttou), None)?;
            setpgid(Pid::from_raw(0), Pid::from_raw(0))?;
            // Not `std::io::stdin()`, whose first call allocates. Standard input that is not
            // our terminal (ENOTTY) has no foreground to take: the group alone is enough.
            let taken = match tcsetpgrp(BorrowedFd::borrow_raw(0), getpid()) {
                Err(Errno::ENOTTY) => Ok(()),
                other => other,
            };
            // The agent starts with the signal mask it would have had.
            sigprocmask(SigmaskHow::SIG_UNBLOCK, Some(&ttou), None)?;
            taken.map_err(io::Error::from)
        });
    }
}

/// Gives the foreground of the terminal on standard input back to this process's group, once
/// the child that had it ended (what this process still writes or reads there is then its
/// own again). Nothing happens where standard input is no terminal.
pub fn take_foreground_back() {
    let mut before = SigSet::empty();
    if sigprocmask(SigmaskHow::SIG_BLOCK, Some(&ttou()), Some(&mut before)).is_err() {
        return;
    }
    let _ = tcsetpgrp(std::io::stdin(), nix::unistd::getpgrp());
    let _ = sigprocmask(SigmaskHow::SIG_SETMASK, Some(&before), None);
}

/// The set of SIGTTOU alone: blocked while a background group sets the terminal's foreground.
fn ttou() -> SigSet {
    let mut set = SigSet::empty();
    set.add(Signal::SIGTTOU);
    set
}

#[cfg(test)]
mod tests {
    use std::process::Stdio;

    use super::*;

    #[tokio::test]
    async fn without_a_terminal_the_child_still_leads_a_group_of_its_own() {
        let mut cmd = tokio::process::Command::new("sh");
        // The fifth field of /proc/PID/stat is the process group ("(sh)" has no spaces).
        cmd.args(["-c", "cut -d' ' -f5 /proc/$$/stat"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped());
        in_foreground_group(&mut cmd);
        let child = cmd
            .spawn()
            .expect("sh starts though its stdin is no terminal");
        let pid = child.id().expect("pid");
        let out = child.wait_with_output().await.expect("output");
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), pid.to_string());
    }
}
