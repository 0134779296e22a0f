//! The master side of the adapter's PTY, split between the output thread (reads) and the
//! adapter's single stdin writer (writes and resizes).
//!
//! The descriptor leaves `pty-process`'s tokio registration: registered for reading, every
//! chunk the adapter prints would also wake the runtime's event loop, on top of the output
//! thread that reads it. The writer registers for writability only.

use std::io;
use std::os::fd::OwnedFd;

use rustix::termios::{Winsize, tcsetwinsize};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use wujie_term::TermSize;

/// Splits the master: a descriptor for the output thread, and the writer. Both share the
/// master's non-blocking mode.
#[allow(unsafe_code)]
pub fn split(pty: pty_process::Pty) -> io::Result<(OwnedFd, PtyWriter)> {
    let master = OwnedFd::from(pty);
    let reader = master.try_clone()?;
    // SAFETY: the `AsyncFd` owns the `OwnedFd`, which keeps its descriptor open and unchanged
    // until the `AsyncFd` drops it; nothing else closes or replaces it.
    let writer = unsafe { AsyncFd::register_with_interest(master, Interest::WRITABLE) }
        .map_err(|e| e.into_parts().1)?;
    Ok((reader, PtyWriter(writer)))
}

/// Writes the user's input (and control frames) to the adapter's terminal.
pub struct PtyWriter(AsyncFd<OwnedFd>);

impl PtyWriter {
    /// Writes all of `bytes`, waiting while the adapter's input queue is full.
    pub async fn write_all(&self, mut bytes: &[u8]) -> io::Result<()> {
        while !bytes.is_empty() {
            let mut ready = self.0.writable().await?;
            match ready.try_io(|fd| Ok(rustix::io::write(fd.get_ref(), bytes)?)) {
                Ok(Ok(0)) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(Ok(n)) => bytes = &bytes[n..],
                Ok(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                Ok(Err(e)) => return Err(e),
                // Not writable after all: wait for the next readiness.
                Err(_would_block) => {}
            }
        }
        Ok(())
    }

    /// Sets the adapter's window size; its foreground process group gets SIGWINCH.
    pub fn resize(&self, size: TermSize) -> io::Result<()> {
        set_size(self.0.get_ref(), size)
    }
}

/// Sets the window size of the adapter's terminal (`master` is its PTY's master side); when it
/// changed, the kernel sends SIGWINCH to its foreground process group.
pub fn set_size(master: &OwnedFd, size: TermSize) -> io::Result<()> {
    let winsize = Winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    Ok(tcsetwinsize(master, winsize)?)
}

/// Sends `signal` to the foreground process group of the adapter's terminal (`master` is its
/// PTY's master side), as the kernel names it at this moment: a group that is gone is not
/// there to be signalled. SIGSTOP works where the adapter's own SIGTSTP does not: it leads its
/// own session, so its group is orphaned and the kernel discards the keyboard's stop signals
/// for it. (The PTY's TIOCSIG only sends SIGINT, SIGQUIT and SIGTSTP.)
pub fn signal_foreground(master: &OwnedFd, signal: nix::sys::signal::Signal) -> io::Result<()> {
    let group = rustix::termios::tcgetpgrp(master)?;
    let group = nix::unistd::Pid::from_raw(group.as_raw_nonzero().get());
    nix::sys::signal::killpg(group, signal).map_err(io::Error::from)
}

/// Whether the foreground process group of the adapter's terminal (`master` is its PTY's
/// master side) is stopped: its leader stopped by a signal, as an agent that stops itself on
/// Ctrl+Z is once its stop was delivered.
pub fn foreground_stopped(master: &OwnedFd) -> bool {
    rustix::termios::tcgetpgrp(master)
        .is_ok_and(|group| wujie_process::tree::is_stopped(group.as_raw_nonzero().get()))
}

/// Whether the adapter wrote output that is not read from `master` yet (FIONREAD counts it).
pub fn has_unread_output(master: &OwnedFd) -> bool {
    rustix::io::ioctl_fionread(master).is_ok_and(|n| n > 0)
}
