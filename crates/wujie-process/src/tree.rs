//! The processes a child started, found by parent links: a child that moved itself into a group
//! of its own (`setsid`, node's `detached: true`) leaves its parent's process group, so stopping
//! that group alone would orphan it. Linux reads `/proc`; elsewhere the listing is unavailable
//! and callers say so instead of claiming more than they did.

use std::collections::BTreeSet;

/// One running process (zombies are left out: they run nothing and cannot be signalled away).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessEntry {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
}

/// Every running process, or `None` where the system offers no `/proc` to read.
pub fn running_processes() -> Option<Vec<ProcessEntry>> {
    let entries = std::fs::read_dir("/proc").ok()?;
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        // A process may end between the listing and the read: it is simply not running.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some(entry) = parse_stat(pid, &stat) {
            out.push(entry);
        }
    }
    Some(out)
}

/// `pid (comm) state ppid pgrp …`; `comm` may contain spaces and parentheses, so the fields
/// are read after the last `)`.
fn parse_stat(pid: i32, stat: &str) -> Option<ProcessEntry> {
    let mut fields = stat_fields(stat)?;
    let state = fields.next()?;
    if state == "Z" || state == "X" {
        return None;
    }
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    Some(ProcessEntry { pid, ppid, pgid })
}

/// The fields of `/proc/PID/stat` after `comm`, from the state letter on.
fn stat_fields(stat: &str) -> Option<std::str::SplitWhitespace<'_>> {
    Some(stat.rsplit_once(')')?.1.split_whitespace())
}

/// Whether `pid` is stopped by a signal (state `T`): a job stopped, as the shell would say.
pub fn is_stopped(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| stat_fields(&stat)?.next().map(|state| state == "T"))
        .unwrap_or(false)
}

/// The members of process group `group` and every descendant of them, wherever they moved.
pub fn tree_of_group(group: i32, all: &[ProcessEntry]) -> Vec<ProcessEntry> {
    let mut members: BTreeSet<i32> = all
        .iter()
        .filter(|p| p.pgid == group || p.pid == group)
        .map(|p| p.pid)
        .collect();
    loop {
        let before = members.len();
        for p in all {
            if members.contains(&p.ppid) {
                members.insert(p.pid);
            }
        }
        if members.len() == before {
            break;
        }
    }
    all.iter()
        .filter(|p| members.contains(&p.pid))
        .copied()
        .collect()
}

/// Whether `pid` is still running (a zombie is not).
pub fn is_running(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => parse_stat(pid, &stat).is_some(),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(pid: i32, ppid: i32, pgid: i32) -> ProcessEntry {
        ProcessEntry { pid, ppid, pgid }
    }

    #[test]
    fn stat_fields_come_after_the_last_parenthesis() {
        let entry = parse_stat(7, "7 (a) b (c)) S 3 9 9 0").unwrap();
        assert_eq!(entry, p(7, 3, 9));
        assert!(parse_stat(7, "7 (z) Z 3 9 9").is_none());
        assert!(parse_stat(7, "garbage").is_none());
    }

    #[test]
    fn a_process_stopped_by_a_signal_is_stopped_until_it_is_continued() {
        use nix::sys::signal::{Signal, kill};
        use nix::unistd::Pid;
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let pid = child.id() as i32;
        let becomes = |stopped: bool| {
            (0..500).any(|_| {
                std::thread::sleep(std::time::Duration::from_millis(10));
                is_stopped(pid) == stopped
            })
        };
        assert!(!is_stopped(pid));
        kill(Pid::from_raw(pid), Signal::SIGSTOP).unwrap();
        assert!(becomes(true), "never seen stopped");
        kill(Pid::from_raw(pid), Signal::SIGCONT).unwrap();
        assert!(becomes(false), "never seen going on");
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(!is_stopped(pid));
    }

    #[test]
    fn the_tree_follows_children_that_left_the_group() {
        let all = [
            p(10, 1, 10),  // leader
            p(11, 10, 10), // member
            p(12, 10, 12), // detached child, own group
            p(13, 12, 12), // its child
            p(14, 13, 14), // and further down
            p(20, 1, 20),  // unrelated
        ];
        let mut pids: Vec<i32> = tree_of_group(10, &all).iter().map(|e| e.pid).collect();
        pids.sort();
        assert_eq!(pids, [10, 11, 12, 13, 14]);
    }

    #[test]
    fn this_process_is_listed_on_linux() {
        if let Some(all) = running_processes() {
            let me = std::process::id() as i32;
            assert!(all.iter().any(|e| e.pid == me));
            assert!(is_running(me));
        }
    }
}
