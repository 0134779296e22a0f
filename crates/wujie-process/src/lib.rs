//! Stopping a child's whole process group without ever signalling a recycled process id.
//!
//! Children are started as leaders of their own process group (`process_group(0)`), so the
//! group id is the leader's pid. Once the leader has been reaped its pid — and so the group id —
//! can be handed to an unrelated process that becomes a group leader itself, and a late
//! `killpg` would hit that stranger. On a busy machine (`pid_max` 32768, test suites spawning
//! thousands of processes) this really happens. The rule here: signal the group only while the
//! leader is alive or a zombie, i.e. before it is reaped. `waitid(…, WNOWAIT)` waits for the
//! leader's exit without reaping it; the reap comes last.
//!
//! Children can also be tied to this process's life ([`parent_death_hook`]): on Linux the
//! kernel kills them when it dies, even by SIGKILL.
//!
//! Files that must survive a crash whole are written by [`atomic_file::write_atomic`].

pub mod atomic_file;
pub mod foreground;
pub mod marks;
pub mod stderr;
pub mod tree;

use std::io;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{Signal, killpg};
use nix::sys::wait::{Id, WaitPidFlag, waitid};
use nix::unistd::Pid;
use tokio::process::Child;

/// Signal the child's process group, if the child has not been reaped yet. Returns whether a
/// signal was sent.
pub fn signal_group(child: &Child, signal: Signal) -> bool {
    match child.id() {
        // `id()` is `None` once tokio has reaped the child: the group id may belong to someone
        // else by now.
        Some(pid) => killpg(Pid::from_raw(pid as i32), signal).is_ok(),
        None => false,
    }
}

/// The signal a built-in adapter takes as "the user is back at the agent's input": the turn
/// shown on the terminal has ended, so a reply it still holds back is that turn's last. It
/// goes to the adapter alone ([`signal_child`]): the agent in its group would take it for its
/// own (Node starts its inspector on SIGUSR1).
pub const USER_AT_INPUT: Signal = Signal::SIGUSR1;

/// Signal the child alone, not its group, if it has not been reaped yet. Returns whether a
/// signal was sent.
pub fn signal_child(child: &Child, signal: Signal) -> bool {
    match child.id() {
        Some(pid) => nix::sys::signal::kill(Pid::from_raw(pid as i32), signal).is_ok(),
        None => false,
    }
}

/// Wait until the leader has exited, leaving it a zombie (its pid stays reserved).
async fn exited_unreaped(pid: u32) -> io::Result<()> {
    tokio::task::spawn_blocking(move || {
        loop {
            match waitid(
                Id::Pid(Pid::from_raw(pid as i32)),
                WaitPidFlag::WEXITED | WaitPidFlag::WNOWAIT,
            ) {
                Err(nix::errno::Errno::EINTR) => continue,
                // ECHILD: reaped elsewhere already; nothing left to wait for.
                Err(nix::errno::Errno::ECHILD) | Ok(_) => return Ok(()),
                Err(e) => return Err(io::Error::from(e)),
            }
        }
    })
    .await
    .map_err(io::Error::other)?
}

/// Resolves once the child has exited, leaving it unreaped (so its group can still be signalled
/// safely); owns nothing of the child, so it can be awaited beside other uses of it.
pub fn exit_of(child: &Child) -> impl Future<Output = io::Result<()>> + Send + 'static {
    let pid = child.id();
    async move {
        match pid {
            Some(pid) => exited_unreaped(pid).await,
            None => Ok(()),
        }
    }
}

/// Wait up to `timeout` for the child to exit on its own, without reaping it (so its group can
/// still be signalled safely afterwards). Returns whether it exited.
pub async fn exited_within(child: &Child, timeout: Duration) -> bool {
    match child.id() {
        Some(pid) => matches!(
            tokio::time::timeout(timeout, exited_unreaped(pid)).await,
            Ok(Ok(()))
        ),
        None => true,
    }
}

/// Stop the child's whole group: SIGTERM, SIGKILL if the leader is still there after `grace`,
/// then SIGKILL for any member that outlived the leader — all before the leader is reaped.
/// Returns the leader's exit status.
pub async fn stop_group(child: &mut Child, grace: Duration) -> io::Result<ExitStatus> {
    let Some(pid) = child.id() else {
        return child.wait().await;
    };
    let group = Pid::from_raw(pid as i32);
    let _ = killpg(group, Signal::SIGTERM);
    if tokio::time::timeout(grace, exited_unreaped(pid))
        .await
        .is_err()
    {
        let _ = killpg(group, Signal::SIGKILL);
        exited_unreaped(pid).await?;
    }
    // The leader is a zombie: the group id is still ours, so stragglers can go too.
    let _ = killpg(group, Signal::SIGKILL);
    child.wait().await
}

/// Wait for the leader to exit, kill whatever it left in its group (nobody supervises that any
/// more), then reap the leader. Returns the leader's exit status.
pub async fn reap_stopping_leftovers(child: &mut Child) -> io::Result<ExitStatus> {
    if let Some(pid) = child.id() {
        exited_unreaped(pid).await?;
        let _ = killpg(Pid::from_raw(pid as i32), Signal::SIGKILL);
    }
    child.wait().await
}

/// Like `Child::wait_with_output`, but once the leader has exited, whatever it left in its
/// group is killed before the leader is reaped.
pub async fn wait_with_output(mut child: Child) -> io::Result<std::process::Output> {
    use tokio::io::AsyncReadExt;
    async fn read_all(pipe: Option<impl tokio::io::AsyncRead + Unpin>) -> io::Result<Vec<u8>> {
        let mut buf = Vec::new();
        if let Some(mut pipe) = pipe {
            pipe.read_to_end(&mut buf).await?;
        }
        Ok(buf)
    }
    let (stdout, stderr) =
        tokio::try_join!(read_all(child.stdout.take()), read_all(child.stderr.take()))?;
    let status = reap_stopping_leftovers(&mut child).await?;
    Ok(std::process::Output {
        status,
        stdout,
        stderr,
    })
}

/// What a child runs between `fork` and `exec` (`pre_exec`) so that it does not outlive this
/// process: on Linux, `PR_SET_PDEATHSIG` with SIGKILL, then a check that this process did not
/// die before that took effect. Only async-signal-safe system calls are made.
///
/// The kernel sends the signal when the *thread* that forked the child ends, so children must
/// be started from threads that live as long as the process (the async runtime's workers or
/// the main thread, never a `spawn_blocking` thread, which ends when idle).
///
/// Linux only: elsewhere this does nothing, and a child learns of its parent's death only by
/// its pipes (end of stdin, EPIPE on stdout).
pub fn parent_death_hook() -> impl FnMut() -> io::Result<()> + Send + Sync + 'static {
    #[cfg(target_os = "linux")]
    {
        let parent = nix::unistd::getpid();
        move || {
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(io::Error::from)?;
            // Gone before the signal was armed: nobody would send it. (No allocation here:
            // this runs between fork and exec.)
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from(nix::errno::Errno::ESRCH));
            }
            Ok(())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        || Ok(())
    }
}

/// Ties the child `cmd` starts to this process's life (see [`parent_death_hook`]).
pub fn die_with_parent(cmd: &mut tokio::process::Command) {
    let hook = parent_death_hook();
    // SAFETY: the hook makes only async-signal-safe system calls (prctl, getppid) and touches
    // no memory shared with other threads, as `pre_exec` requires.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(hook);
    }
}

/// The exit code a shell would report: the code, or 128 + the signal number.
pub fn exit_code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;

    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .map(|s| {
                !s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(false)
    }

    /// SIGKILL is delivered asynchronously: give the kernel a moment (bounded) to finish it.
    fn gone_soon(pid: i32) -> bool {
        (0..250).any(|_| {
            std::thread::sleep(Duration::from_millis(20));
            !alive(pid)
        })
    }

    fn spawn(script: &str) -> Child {
        tokio::process::Command::new("sh")
            .args(["-c", script])
            .process_group(0)
            .stdout(Stdio::piped())
            .spawn()
            .expect("sh runs")
    }

    async fn grandchild(child: &mut Child) -> i32 {
        use tokio::io::AsyncBufReadExt;
        let mut line = String::new();
        let out = child.stdout.take().unwrap();
        tokio::io::BufReader::new(out)
            .read_line(&mut line)
            .await
            .unwrap();
        line.trim().parse().unwrap()
    }

    #[tokio::test]
    async fn output_is_collected_and_leftovers_are_killed() {
        // The leftover holds no pipe, so the output ends when the leader does.
        let child = spawn("sleep 300 >/dev/null 2>&1 & echo $!; echo done");
        let out = wait_with_output(child).await.unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        let sleeper: i32 = text.lines().next().unwrap().parse().unwrap();
        assert!(out.status.success());
        assert_eq!(text.lines().nth(1), Some("done"));
        assert!(gone_soon(sleeper));
    }

    #[tokio::test]
    async fn stop_kills_the_leader_and_what_it_started() {
        let mut child = spawn("sleep 300 & echo $!; trap '' TERM; sleep 300");
        let sleeper = grandchild(&mut child).await;
        assert!(alive(sleeper));
        let status = stop_group(&mut child, Duration::from_millis(200))
            .await
            .unwrap();
        assert!(!status.success());
        assert!(gone_soon(sleeper), "the group member is gone too");
        // Reaped: nothing is signalled any more.
        assert!(!signal_group(&child, Signal::SIGTERM));
    }
}
