//! The stdin reader stops without reading once its owner is gone, so what the user types after
//! a session reaches the next reader (the shell, a later prompt) instead of a thread that no one
//! listens to. This file holds one test because it replaces the process's stdin.

use std::io::Write;
use std::time::Duration;

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use wujie_host::user_input::UserInput;

#[tokio::test]
async fn input_typed_after_the_reader_is_dropped_stays_unread() {
    let (stdin_rx, mut typed) = std::io::pipe().unwrap();
    nix::unistd::dup2_stdin(&stdin_rx).unwrap();
    drop(stdin_rx);

    let mut input = UserInput::spawn();
    typed.write_all(b"first").unwrap();
    let chunk = tokio::time::timeout(Duration::from_secs(10), input.recv())
        .await
        .expect("the reader passes on what was typed");
    assert_eq!(chunk.as_deref(), Some(&b"first"[..]));

    drop(input);
    typed.write_all(b"second").unwrap();

    // Whatever the reader thread is doing now, it must not take "second". (The pause only gives
    // a reader that would take it the time to do so; the test does not depend on its length.)
    std::thread::sleep(Duration::from_millis(100));
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let timeout = Timespec {
        tv_sec: 10,
        tv_nsec: 0,
    };
    let ready = poll(&mut fds, Some(&timeout)).unwrap();
    assert_eq!(ready, 1, "the dropped reader took what was typed after it");
    let mut buf = [0u8; 64];
    let n = rustix::io::read(&stdin, &mut buf).unwrap();
    assert_eq!(&buf[..n], b"second");

    // A new reader sees the end of input once the writer is gone.
    let mut input = UserInput::spawn();
    drop(typed);
    let end = tokio::time::timeout(Duration::from_secs(10), input.recv())
        .await
        .expect("the end of input is reported");
    assert_eq!(end, None);
}
