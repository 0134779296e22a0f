//! A terminal that stops taking output (a stalled ssh session, a tmux client that went away)
//! blocks whatever writes to it. That must be the host's relay alone: the rest of `wujie`
//! (signals, stopping the adapter, delivery) goes on.

use std::time::Duration;

use wujie_testkit::term::*;
use wujie_testkit::*;

/// The processes whose parent is `pid`, its process guard aside.
fn children_of(pid: u32) -> Vec<i32> {
    let parent = pid.to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_string_lossy().parse::<i32>().ok())
        .filter(|child| {
            let stat = std::fs::read_to_string(format!("/proc/{child}/stat")).unwrap_or_default();
            stat.rsplit(')')
                .next()
                .and_then(|rest| rest.split_whitespace().nth(1))
                == Some(parent.as_str())
                && !is_process_guard(*child)
        })
        .collect()
}

#[test]
fn sigterm_stops_the_adapter_while_the_terminal_takes_no_output() {
    let env = Env::new();
    env.install_example("fake-tui-v2");
    // One runtime worker, as on a one-core machine: a relay that blocked a worker while the
    // terminal is stalled would stop everything else.
    let mut term = Term::spawn_with_vars(
        &env,
        WUJIE,
        &["discuss", "--", "fake-tui-v2", "--plan-steps", "40000"],
        Terminal::STANDARD,
        &[("TOKIO_WORKER_THREADS", "1")],
    );
    term.wait_text("Ctrl+D quit");
    let adapter = children_of(term.child.id());
    assert_eq!(adapter.len(), 1, "one adapter: {adapter:?}");
    let adapter = adapter[0];

    term.say("storage?", "SQLite or PostgreSQL?");

    // The terminal stalls while the adapter streams a long plan: the PTY fills and the relay's
    // write to the terminal blocks. Then `/wujie`: the host looks at the screen.
    term.pause_output();
    term.send(b"SQLite\r");
    // The relay is stalled once the terminal's side of the PTY holds what its line discipline
    // can (4095 bytes on Linux) and that no longer changes while the adapter still streams its
    // plan: the relay's writes are blocked.
    wait_until(30, "the relay to stall on the full terminal", || {
        let before = term.pending_output();
        std::thread::sleep(Duration::from_millis(300));
        before >= 2048 && term.pending_output() == before
    });
    term.send(b"\x15/wujie");
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        pid_alive(adapter),
        "the adapter still streams while the relay is stalled"
    );

    assert!(signal_pid(
        i32::try_from(term.child.id()).unwrap(),
        nix::sys::signal::Signal::SIGTERM
    ));
    wait_until(
        30,
        "the adapter to be stopped while the terminal is stalled",
        || !pid_alive(adapter),
    );
    term.resume_output();
    let status = term.wait_exit();
    assert_eq!(status.code(), Some(130), "{}", term.contents());
}
