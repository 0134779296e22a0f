//! Stopping a thread that waits in `poll` for a descriptor: its owner holds the write end of a
//! pipe (`std::io::pipe`) and drops it to stop the thread; the closed pipe wakes the `poll`.

use std::io::PipeReader;
use std::os::fd::AsFd;

use rustix::event::{PollFd, PollFlags, poll};
use rustix::io::Errno;

/// Why [`wait_readable`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Woken {
    /// The descriptor has something to read (or is at its end, or broken: a read tells).
    Readable,
    /// The owner dropped the pipe's write end. Checked first: once stopped, nothing more is read.
    Stopped,
}

/// Waits until `fd` is readable or `stop`'s write end is closed; `poll` interrupted by a
/// signal is retried.
pub(crate) fn wait_readable(fd: impl AsFd, stop: &PipeReader) -> Result<Woken, Errno> {
    loop {
        let mut fds = [
            PollFd::new(&fd, PollFlags::IN),
            PollFd::new(stop, PollFlags::IN),
        ];
        match poll(&mut fds, None) {
            Ok(_) if !fds[1].revents().is_empty() => return Ok(Woken::Stopped),
            Ok(_) => return Ok(Woken::Readable),
            Err(Errno::INTR) => {}
            Err(e) => return Err(e),
        }
    }
}
