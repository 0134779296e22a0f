//! Running `git`: one place that starts it, reads what it prints and turns a failure into a
//! [`GitError`] carrying git's own words.

use std::ffi::OsStr;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Why git could not answer.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// There is no `git` to run: the caller says so once and carries on without code changes.
    #[error("git is not installed (no `{program}` on PATH)")]
    NotInstalled { program: String },
    #[error("could not start git")]
    Start(#[source] io::Error),
    #[error("`git {command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("`git {command}` printed what it never prints: {what}")]
    Unexpected { command: String, what: String },
    #[error("could not read what `git {command}` printed")]
    Read {
        command: String,
        #[source]
        source: io::Error,
    },
    #[error("could not prepare a temporary index in {dir}")]
    TemporaryIndex {
        dir: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The `git` program and the directory it runs in.
#[derive(Debug, Clone)]
pub(crate) struct Git {
    program: PathBuf,
    dir: PathBuf,
}

/// Extra environment for one command.
pub(crate) type Env<'a> = &'a [(&'a str, &'a OsStr)];

impl Git {
    pub(crate) fn new(program: PathBuf, dir: PathBuf) -> Self {
        Self { program, dir }
    }

    /// The same git, run in `dir`.
    pub(crate) fn at(&self, dir: PathBuf) -> Self {
        Self {
            program: self.program.clone(),
            dir,
        }
    }

    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    fn command(&self, args: &[&str], env: Env<'_>) -> Command {
        let mut command = Command::new(&self.program);
        command
            .current_dir(&self.dir)
            // Git's messages in English, whatever the user's locale: they are shown inside
            // Wujie's own English messages, and `top_level` recognises one of them.
            .env("LC_ALL", "C")
            // Never take `index.lock` of the user's index to refresh it in passing (what
            // `git status` does): the user's own git must never find it held by us. What this
            // crate writes, it writes to a temporary index and the object store only.
            .arg("--no-optional-locks")
            .args(args)
            .stdin(Stdio::null());
        for (name, value) in env {
            command.env(name, value);
        }
        command
    }

    fn start_error(&self, error: io::Error) -> GitError {
        if error.kind() == io::ErrorKind::NotFound {
            GitError::NotInstalled {
                program: self.program.display().to_string(),
            }
        } else {
            GitError::Start(error)
        }
    }

    /// Runs `git args…` to the end; its stdout, or its stderr as the error.
    pub(crate) fn run(&self, args: &[&str], env: Env<'_>) -> Result<Vec<u8>, GitError> {
        let output = self
            .command(args, env)
            .output()
            .map_err(|e| self.start_error(e))?;
        if output.status.success() {
            Ok(output.stdout)
        } else {
            Err(failed(args, &output.stderr))
        }
    }

    /// Like [`Git::run`], but an exit code of 1 with nothing on stderr (git's "no such thing":
    /// no symbolic ref, no config entry) is `None`.
    pub(crate) fn run_optional(&self, args: &[&str]) -> Result<Option<Vec<u8>>, GitError> {
        let output = self
            .command(args, &[])
            .output()
            .map_err(|e| self.start_error(e))?;
        if output.status.success() {
            Ok(Some(output.stdout))
        } else if output.status.code() == Some(1) && output.stderr.is_empty() {
            Ok(None)
        } else {
            Err(failed(args, &output.stderr))
        }
    }

    /// Runs `git args…`, handing each line of its stdout (with its `\n`) to `line` as it
    /// arrives, so that an output of any size is read in bounded memory.
    pub(crate) fn stream(
        &self,
        args: &[&str],
        mut line: impl FnMut(&[u8]),
    ) -> Result<(), GitError> {
        let mut child = self
            .command(args, &[])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| self.start_error(e))?;
        let read_error = |source| GitError::Read {
            command: args.join(" "),
            source,
        };
        // stderr is drained on a thread of its own: a git that fills that pipe while we read
        // stdout would otherwise wait for us forever.
        let stderr = child.stderr.take().map(|mut pipe| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                let _ = pipe.read_to_end(&mut text);
                text
            })
        });
        let mut reading = Ok(());
        if let Some(stdout) = child.stdout.take() {
            let mut reader = BufReader::new(stdout);
            let mut buffer = Vec::new();
            loop {
                buffer.clear();
                match reader.read_until(b'\n', &mut buffer) {
                    Ok(0) => break,
                    Ok(_) => line(&buffer),
                    Err(e) => {
                        reading = Err(read_error(e));
                        break;
                    }
                }
            }
        }
        let status = child.wait().map_err(read_error)?;
        let stderr = stderr
            .and_then(|thread| thread.join().ok())
            .unwrap_or_default();
        reading?;
        if status.success() {
            Ok(())
        } else {
            Err(failed(args, &stderr))
        }
    }

    /// The top level of the work tree this git runs in, or `None` outside of one.
    pub(crate) fn top_level(&self) -> Result<Option<PathBuf>, GitError> {
        let args = ["rev-parse", "--is-inside-work-tree", "--show-toplevel"];
        let output = self
            .command(&args, &[])
            .output()
            .map_err(|e| self.start_error(e))?;
        if !output.status.success() {
            // Only this message means "no repository here"; anything else (a repository git
            // refuses, such as one owned by another user) is an error the user must see.
            let stderr = String::from_utf8_lossy(&output.stderr);
            if stderr.contains("not a git repository") {
                return Ok(None);
            }
            return Err(failed(&args, &output.stderr));
        }
        let text = String::from_utf8_lossy(&output.stdout);
        let mut lines = text.lines();
        // Inside `.git` or a bare repository: "false" and no top level.
        if lines.next() != Some("true") {
            return Ok(None);
        }
        match lines.next() {
            Some(top) if !top.is_empty() => Ok(Some(PathBuf::from(top))),
            _ => Err(unexpected(&args, "no top-level directory")),
        }
    }
}

fn failed(args: &[&str], stderr: &[u8]) -> GitError {
    let stderr = String::from_utf8_lossy(stderr).trim().to_string();
    GitError::Failed {
        command: args.join(" "),
        stderr: if stderr.is_empty() {
            "it said nothing".to_string()
        } else {
            stderr
        },
    }
}

pub(crate) fn unexpected(args: &[&str], what: &str) -> GitError {
    GitError::Unexpected {
        command: args.join(" "),
        what: what.to_string(),
    }
}

/// One line of text that git printed (an object id, a ref name), without its line end.
pub(crate) fn one_line(output: &[u8]) -> String {
    String::from_utf8_lossy(output).trim_end().to_string()
}

/// The NUL-terminated fields of `-z` output (a trailing NUL does not make an empty field).
pub(crate) fn nul_fields(output: &[u8]) -> Vec<String> {
    let output = output.strip_suffix(b"\0").unwrap_or(output);
    if output.is_empty() {
        return Vec::new();
    }
    output
        .split(|b| *b == 0)
        .map(|field| String::from_utf8_lossy(field).into_owned())
        .collect()
}
