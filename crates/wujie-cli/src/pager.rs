//! Long text output through the user's pager, as git and gh do: while a [`Pager`] is held,
//! stdout is the pager's input, so a transcript of thousands of lines can be read from its
//! start instead of scrolling past. Only when stdout is a terminal: piped or redirected
//! output, and `--output json`, are never paged.
//!
//! Which pager: `$WUJIE_PAGER`, else `$PAGER`, else `less` when it is on PATH; an empty value
//! or `cat` means none. `less` gets `LESS=FRX` unless the user set `LESS`: it quits at once when
//! everything fits on one screen, passes colours through and leaves the text on the screen
//! after it quits, as git sets it.

use std::io::{IsTerminal, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};

/// The pager running with our stdout as its input; dropping it ends the input and waits for
/// the user to quit the pager, with stdout the terminal again.
pub struct Pager {
    child: Child,
    /// Our stdout (the terminal) while the pager has its place.
    terminal: OwnedFd,
}

impl Pager {
    /// Starts the pager when stdout is a terminal and the user has one (see the module
    /// comment); `None` otherwise, and when it cannot start (said on stderr: the output is
    /// then written as it would be without one).
    pub fn start() -> Option<Pager> {
        if !std::io::stdout().is_terminal() {
            return None;
        }
        let command = chosen(
            std::env::var("WUJIE_PAGER").ok(),
            std::env::var("PAGER").ok(),
            || on_path("less"),
        )?;
        match Pager::spawn(&command) {
            Ok(pager) => Some(pager),
            Err(e) => {
                wujie_process::stderr_line!(
                    "wujie: could not start the pager `{command}` ({e}); printing without it. Set WUJIE_PAGER= to not use one."
                );
                None
            }
        }
    }

    fn spawn(command: &str) -> std::io::Result<Pager> {
        let mut shell = Command::new("sh");
        shell.arg("-c").arg(command).stdin(Stdio::piped());
        if std::env::var_os("LESS").is_none() {
            shell.env("LESS", "FRX");
        }
        let mut child = shell.spawn()?;
        let Some(input) = child.stdin.take().map(OwnedFd::from) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(std::io::Error::other("the pager has no input"));
        };
        let swapped = (|| {
            let terminal = nix::unistd::dup(std::io::stdout())?;
            nix::unistd::dup2_stdout(&input)?;
            Ok::<_, nix::Error>(terminal)
        })();
        match swapped {
            Ok(terminal) => Ok(Pager { child, terminal }),
            Err(e) => {
                drop(input);
                let _ = child.wait();
                Err(e.into())
            }
        }
    }
}

impl Drop for Pager {
    fn drop(&mut self) {
        let _ = std::io::stdout().flush();
        // Stdout was the last holder of the pager's input: putting the terminal back ends it.
        if let Err(e) = nix::unistd::dup2_stdout(&self.terminal) {
            wujie_process::stderr_line!("wujie: could not give stdout back from the pager: {e}");
        }
        let _ = self.child.wait();
    }
}

/// The pager command the user wants, from `WUJIE_PAGER`, `PAGER` and whether `less` is there.
fn chosen(
    wujie_pager: Option<String>,
    pager: Option<String>,
    less_found: impl FnOnce() -> bool,
) -> Option<String> {
    let wanted = match wujie_pager.or(pager) {
        Some(command) => command,
        None if less_found() => "less".to_owned(),
        None => return None,
    };
    let wanted = wanted.trim();
    (!wanted.is_empty() && wanted != "cat").then(|| wanted.to_owned())
}

/// Whether an executable `name` is in a directory of `PATH`.
fn on_path(name: &str) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(name))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &str) -> Option<String> {
        Some(v.to_owned())
    }

    #[test]
    fn wujies_own_setting_comes_first_then_the_users_pager_then_less() {
        assert_eq!(chosen(s("most"), s("more"), || true), s("most"));
        assert_eq!(chosen(None, s("more -s"), || true), s("more -s"));
        assert_eq!(chosen(None, None, || true), s("less"));
        assert_eq!(chosen(None, None, || false), None);
    }

    #[test]
    fn an_empty_pager_or_cat_means_none() {
        assert_eq!(chosen(s(""), s("less"), || true), None);
        assert_eq!(chosen(None, s("cat"), || true), None);
        assert_eq!(chosen(s(" "), None, || true), None);
    }
}
