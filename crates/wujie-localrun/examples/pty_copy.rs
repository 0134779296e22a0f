//! The plainest terminal relay, the baseline `scripts/bench/terminal-relay` measures the
//! terminal host against: the command given runs on a PTY of its own, opened the way the host
//! opens an adapter's (`pty-process`, the window size of our terminal), our terminal is put in
//! raw mode as the host puts it, and one copy loop with a 64 KiB buffer (the most one read from
//! a PTY master returns on Linux) moves the command's output to our standard output until the
//! PTY closes. No shadow screen, no threads, no input relayed.
//!
//! ```text
//! cargo build --release -p wujie-localrun --example pty_copy
//! target/release/examples/pty_copy sh -c 'yes | head -c 64M'
//! ```

use std::io::Read;
use std::process::ExitCode;

use rustix::termios::{OptionalActions, tcgetattr, tcgetwinsize, tcsetattr};

const BUFFER: usize = 64 * 1024;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let Some((program, rest)) = args.split_first() else {
        eprintln!("usage: pty_copy COMMAND [ARGUMENT…]");
        return ExitCode::from(2);
    };
    let stdin = std::io::stdin();
    let saved = tcgetattr(&stdin).ok();
    if let Some(saved) = &saved {
        let mut raw = saved.clone();
        raw.make_raw();
        if let Err(e) = tcsetattr(&stdin, OptionalActions::Now, &raw) {
            eprintln!("pty_copy: could not switch the terminal to raw mode: {e}");
            return ExitCode::FAILURE;
        }
    }
    let status = relay(program, rest);
    if let Some(saved) = &saved {
        let _ = tcsetattr(&stdin, OptionalActions::Now, saved);
    }
    match status {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pty_copy: {e}");
            ExitCode::FAILURE
        }
    }
}

fn relay(program: &std::ffi::OsStr, args: &[std::ffi::OsString]) -> std::io::Result<ExitCode> {
    let (pty, pts) = pty_process::blocking::open().map_err(std::io::Error::other)?;
    if let Ok(size) = tcgetwinsize(std::io::stdin()) {
        pty.resize(pty_process::Size::new(size.ws_row, size.ws_col))
            .map_err(std::io::Error::other)?;
    }
    let mut child = pty_process::blocking::Command::new(program)
        .args(args)
        .spawn(pts)
        .map_err(std::io::Error::other)?;
    let stdout = std::io::stdout();
    let mut buf = vec![0u8; BUFFER];
    // EIO once every process that had the PTY closed it.
    while let Ok(n @ 1..) = (&pty).read(&mut buf) {
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            match rustix::io::write(&stdout, chunk) {
                Ok(written) => chunk = &chunk[written..],
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    let status = child.wait()?;
    Ok(ExitCode::from(
        status
            .code()
            .and_then(|c| u8::try_from(c).ok())
            .unwrap_or(1),
    ))
}
