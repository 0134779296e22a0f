//! A sidecar's process tree and how it is stopped, on every path: a timeout, `close`, an error,
//! a dropped call (a cancelled MCP request, a signal to `wujie`), a panic.
//!
//! The tree is the sidecar's own process group, the groups its descendants moved into
//! (`detached: true` in node is `setsid`), and, over ssh, the remote sidecar's process group on
//! the host, which the local ssh client cannot reach: a second ssh command stops it there.
//! Stopping is TERM, a grace period, then KILL, and then a check that each process is gone; a
//! [`TreeStop`] says what was verified, so that no message claims a kill that did not happen.
//!
//! A [`ProcessTree`] dropped without being stopped stops itself in the background (a task on the
//! current runtime, or right away when there is none or the thread is panicking);
//! [`stops_finished`] waits for those, so an owner can exit only once its trees are gone.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::time::Duration;

use nix::sys::signal::{Signal, kill, killpg};
use nix::unistd::Pid;
use tokio::process::Child;
use tokio::task::JoinHandle;
use wujie_process::tree::{is_running, running_processes, tree_of_group};

/// A sidecar's process group on a remote host, found through the file its launching shell
/// wrote its pid (= the group id: sshd starts each command in a session of its own) into.
#[derive(Debug, Clone)]
pub struct RemoteGroup {
    /// `ssh` arguments up to and including the destination.
    pub ssh_args: Vec<String>,
    /// The host, for messages.
    pub host: String,
    /// Remote path of the pid file.
    pub pid_file: String,
}

/// What stopping a tree achieved. Empty means every process of it was seen gone.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TreeStop {
    /// Processes still running after KILL.
    pub left: Vec<String>,
    /// Parts of the tree whose end could not be checked, and why.
    pub unverified: Vec<String>,
}

impl TreeStop {
    pub fn verified(&self) -> bool {
        self.left.is_empty() && self.unverified.is_empty()
    }
}

impl std::fmt::Display for TreeStop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.verified() {
            return f.write_str("its process tree was killed (checked: nothing of it is left)");
        }
        f.write_str("its process tree was signalled (TERM, then KILL), but")?;
        if !self.left.is_empty() {
            write!(
                f,
                " these processes were still running afterwards: {}",
                self.left.join(", ")
            )?;
        }
        if !self.unverified.is_empty() {
            if !self.left.is_empty() {
                f.write_str(";")?;
            }
            write!(f, " {}", self.unverified.join("; "))?;
        }
        Ok(())
    }
}

/// The sidecar process (leader of its own group) and, over ssh, its remote group.
#[derive(Debug)]
pub struct ProcessTree {
    /// `None` once handed to a background stop.
    child: Option<Child>,
    remote: Option<RemoteGroup>,
    grace: Duration,
}

impl ProcessTree {
    pub fn new(child: Child, remote: Option<RemoteGroup>, grace: Duration) -> Self {
        Self {
            child: Some(child),
            remote,
            grace,
        }
    }

    /// Waits up to `timeout` for the sidecar to exit by itself (it is not reaped, so its group
    /// can still be signalled safely). Returns whether it exited.
    pub async fn exited_within(&self, timeout: Duration) -> bool {
        match &self.child {
            Some(child) => wujie_process::exited_within(child, timeout).await,
            None => true,
        }
    }

    /// Stops the whole tree (remote group first, while its ssh session still stands) and
    /// returns the sidecar's exit status, unless it was reaped before, with what was verified.
    pub async fn stop(&mut self) -> (Option<std::process::ExitStatus>, TreeStop) {
        let mut report = TreeStop::default();
        if let Some(remote) = self.remote.take() {
            stop_remote(&remote, self.grace, &mut report).await;
        }
        let status = match self.child.as_mut() {
            Some(child) => stop_local(child, self.grace, &mut report).await,
            None => None,
        };
        (status, report)
    }
}

impl Drop for ProcessTree {
    fn drop(&mut self) {
        let child = self.child.take().filter(|c| c.id().is_some());
        let remote = self.remote.take();
        if child.is_none() && remote.is_none() {
            return;
        }
        let grace = self.grace;
        let handle = tokio::runtime::Handle::try_current();
        match handle {
            Ok(handle) if !std::thread::panicking() => {
                let mut tree = LastResort {
                    child,
                    remote,
                    grace,
                };
                let task = handle.spawn(async move {
                    let mut report = TreeStop::default();
                    if let Some(remote) = &tree.remote {
                        stop_remote(remote, grace, &mut report).await;
                        tree.remote = None;
                    }
                    if let Some(child) = tree.child.as_mut() {
                        stop_local(child, grace, &mut report).await;
                    }
                    if !report.verified() {
                        tracing::warn!(%report, "stopping an abandoned sidecar");
                    }
                });
                pending().push(task);
            }
            _ => stop_now(child, remote, grace),
        }
    }
}

/// Holds a tree during a background stop. If that task is dropped unfinished — its runtime
/// shut down, as when the owner's main task panicked — what is left is stopped right away.
struct LastResort {
    child: Option<Child>,
    remote: Option<RemoteGroup>,
    grace: Duration,
}

impl Drop for LastResort {
    fn drop(&mut self) {
        // A reaped child was stopped already; `stop_now` skips it.
        stop_now(self.child.take(), self.remote.take(), self.grace);
    }
}

fn pending() -> std::sync::MutexGuard<'static, Vec<JoinHandle<()>>> {
    static PENDING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());
    PENDING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Waits until every tree dropped so far (and any dropped meanwhile) has been stopped.
pub async fn stops_finished() {
    loop {
        let tasks: Vec<JoinHandle<()>> = pending().drain(..).collect();
        if tasks.is_empty() {
            return;
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// The groups to signal and the processes to check: the leader's group, groups led by one of
/// its descendants (they moved out with `setsid`), and every descendant by pid. A group that
/// a descendant merely joined is not signalled as a whole: it may hold processes of others.
#[derive(Default)]
struct Targets {
    groups: BTreeSet<i32>,
    pids: BTreeSet<i32>,
}

impl Targets {
    /// Adds what is running now; false where the system offers no process listing.
    fn scan(&mut self, leader: i32) -> bool {
        self.groups.insert(leader);
        let Some(all) = running_processes() else {
            return false;
        };
        let tree = tree_of_group(leader, &all);
        let own = nix::unistd::getpgrp().as_raw();
        for entry in &tree {
            if entry.pid != leader {
                self.pids.insert(entry.pid);
            }
            let led_by_member = tree.iter().any(|e| e.pid == entry.pgid);
            if led_by_member && entry.pgid > 1 && entry.pgid != own {
                self.groups.insert(entry.pgid);
            }
        }
        true
    }

    fn signal(&self, signal: Signal) {
        for group in &self.groups {
            let _ = killpg(Pid::from_raw(*group), signal);
        }
        for pid in &self.pids {
            let _ = kill(Pid::from_raw(*pid), signal);
        }
    }

    fn still_running(&self) -> Vec<i32> {
        self.pids
            .iter()
            .copied()
            .filter(|p| is_running(*p))
            .collect()
    }
}

/// SIGKILL is delivered asynchronously: a process killed a moment ago may run once more.
const KILL_SETTLE: Duration = Duration::from_secs(2);

fn no_listing(report: &mut TreeStop) {
    report.unverified.push(
        "this system offers no process listing (/proc), so only the sidecar's own process group \
         was signalled: processes that left it may remain"
            .to_owned(),
    );
}

async fn stop_local(
    child: &mut Child,
    grace: Duration,
    report: &mut TreeStop,
) -> Option<std::process::ExitStatus> {
    // Already reaped: its group id may belong to another process now.
    let leader = child.id()? as i32;
    let mut targets = Targets::default();
    let listed = targets.scan(leader);
    targets.signal(Signal::SIGTERM);
    wujie_process::exited_within(child, grace).await;
    // Whatever was started during the grace period goes too.
    targets.scan(leader);
    targets.signal(Signal::SIGKILL);
    // The leader is unreaped until the wait below, so its group id is still ours.
    let deadline = tokio::time::Instant::now() + KILL_SETTLE;
    let mut left = targets.still_running();
    while !left.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
        left = targets.still_running();
    }
    if !wujie_process::exited_within(child, KILL_SETTLE).await {
        left.insert(0, leader);
    }
    report
        .left
        .extend(left.iter().map(|pid| format!("pid {pid} (this machine)")));
    if !listed {
        no_listing(report);
    }
    child.wait().await.ok()
}

/// The synchronous twin of `stop_local` + `stop_remote`, for a drop without a runtime or while
/// panicking: the owner may be about to exit, so this does not return before KILL was sent.
fn stop_now(child: Option<Child>, remote: Option<RemoteGroup>, grace: Duration) {
    if let Some(remote) = &remote {
        let _ = std::process::Command::new("ssh")
            .args(remote_stop_args(remote, grace))
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
    let Some(child) = child else { return };
    let Some(leader) = child.id().map(|p| p as i32) else {
        return;
    };
    let mut targets = Targets::default();
    targets.scan(leader);
    targets.signal(Signal::SIGTERM);
    let deadline = std::time::Instant::now() + grace;
    while is_running(leader) && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    targets.scan(leader);
    targets.signal(Signal::SIGKILL);
    // Dropping the child hands it to tokio's orphan reaping (or kill_on_drop).
    drop(child);
}

/// The shell script that stops a remote group: the same targets as `Targets` (the group, groups
/// led by descendants, descendants by pid), TERM, grace, KILL, then one line per process still
/// running (`left <pid> <command>`). Exit 0: all gone; 1: some left; 3: no pid file.
fn remote_stop_script(pid_file: &str, grace: Duration) -> String {
    let grace = grace.as_secs().max(1);
    let file = crate::runtime::shell_quote(pid_file);
    format!(
        r#"g=$(cat {file} 2>/dev/null)
case "$g" in ''|*[!0-9]*) echo "no pid file {file}"; exit 3;; esac
tree() {{
  ps -A -o pid= -o ppid= -o pgid= -o stat= | awk -v g="$g" '
    $4 !~ /^Z/ {{ n++; pid[n]=$1; pp[n]=$2; pg[n]=$3; if ($3==g || $1==g) in_[$1]=1 }}
    END {{
      do {{ more=0; for (i=1;i<=n;i++) if (!(pid[i] in in_) && (pp[i] in in_)) {{ in_[pid[i]]=1; more=1 }} }} while (more)
      for (i=1;i<=n;i++) if (pid[i] in in_) print pid[i], pg[i]
    }}'
}}
hit() {{
  tree | while read p pg; do
    if [ "$p" = "$pg" ]; then kill -$1 -"$pg" 2>/dev/null; fi
    kill -$1 "$p" 2>/dev/null
  done
}}
hit TERM
i=0; while [ $i -lt {grace} ] && [ -n "$(tree)" ]; do sleep 1; i=$((i+1)); done
hit KILL
i=0; while [ $i -lt 3 ] && [ -n "$(tree)" ]; do sleep 1; i=$((i+1)); done
left=$(tree)
if [ -z "$left" ]; then rm -f {file}; exit 0; fi
echo "$left" | while read p pg; do echo "left $p $(ps -o args= -p "$p" 2>/dev/null)"; done
exit 1
"#
    )
}

fn remote_stop_args(remote: &RemoteGroup, grace: Duration) -> Vec<String> {
    let mut args = remote.ssh_args.clone();
    args.push("--".into());
    // Run by sh whatever the remote login shell is.
    args.push(format!(
        "sh -c {}",
        crate::runtime::shell_quote(&remote_stop_script(&remote.pid_file, grace))
    ));
    args
}

async fn stop_remote(remote: &RemoteGroup, grace: Duration, report: &mut TreeStop) {
    let mut cmd = tokio::process::Command::new("ssh");
    cmd.args(remote_stop_args(remote, grace))
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true);
    // TERM grace + KILL settling + connecting: a bound only against a hung connection.
    let bound = grace + Duration::from_secs(60);
    let host = &remote.host;
    let output = match tokio::time::timeout(bound, cmd.output()).await {
        Ok(Ok(output)) => output,
        Ok(Err(e)) => {
            report.unverified.push(format!(
                "the remote sidecar's process group on {host} could not be stopped (ssh: {e}); \
                 its processes may remain there (pid file {})",
                remote.pid_file
            ));
            return;
        }
        Err(_) => {
            report.unverified.push(format!(
                "stopping the remote sidecar's process group on {host} got no answer within \
                 {bound:?}; its processes may remain there (pid file {})",
                remote.pid_file
            ));
            return;
        }
    };
    let said = String::from_utf8_lossy(&output.stdout);
    match output.status.code() {
        Some(0) => {}
        Some(1) => report.left.extend(
            said.lines()
                .filter_map(|l| l.strip_prefix("left "))
                .map(|l| format!("pid {} on {host}", l.trim())),
        ),
        // No pid file: the remote shell never got as far as starting the sidecar.
        Some(3) => {}
        _ => report.unverified.push(format!(
            "the remote sidecar's process group on {host} could not be checked ({}; ssh said: {}); \
             its processes may remain there (pid file {})",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim(),
            remote.pid_file
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stop_report_claims_only_what_was_checked() {
        let ok = TreeStop::default();
        assert!(ok.to_string().contains("was killed"));
        let left = TreeStop {
            left: vec!["pid 7 (this machine)".into()],
            unverified: vec![],
        };
        let text = left.to_string();
        assert!(
            !text.contains("was killed") && text.contains("pid 7"),
            "{text}"
        );
    }

    #[test]
    fn the_remote_stop_script_is_valid_sh() {
        let script = remote_stop_script("dir/it's.pgid", Duration::from_secs(2));
        let status = std::process::Command::new("sh")
            .args(["-n", "-c", &script])
            .status()
            .unwrap();
        assert!(status.success());
    }
}
