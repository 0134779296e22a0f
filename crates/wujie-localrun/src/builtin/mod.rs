//! Built-in providers: adapters compiled into `wujie` and started as `wujie adapter <name>`.
//!
//! A built-in adapter runs an agent CLI in its machine-readable output mode, maps that output
//! to our NDJSON events and prints them, exactly like an external plugin would. What every such
//! adapter needs lives here: finding the agent's executable and splitting its stdout into lines.

pub mod pi;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

/// Why a built-in adapter could not start its agent.
#[derive(Debug, thiserror::Error)]
pub enum BuiltinError {
    #[error(
        "{program} was not found: {env_var} is not set and no executable {program:?} is on PATH ({path}); install it ({install}) or set {env_var} to its path"
    )]
    NotFound {
        program: &'static str,
        env_var: &'static str,
        path: String,
        install: &'static str,
    },
    #[error(
        "{env_var} is {value:?}, which is not an executable file; point it at the {program} executable or unset it to search PATH"
    )]
    BadOverride {
        program: &'static str,
        env_var: &'static str,
        value: String,
    },
    #[error(
        "argument {arg:?} is not allowed: the built-in {program} provider runs {program} with {fixed} to read its events; drop {arg:?}"
    )]
    RejectedArg {
        program: &'static str,
        arg: String,
        fixed: &'static str,
    },
    #[error("could not start {program} ({path}): {source}")]
    Spawn {
        program: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("reading {program}'s output: {source}")]
    Read {
        program: &'static str,
        source: std::io::Error,
    },
}

/// How to find an agent's executable: an environment variable naming it, else `PATH`.
#[derive(Debug, Clone, Copy)]
pub struct AgentProgram {
    /// The executable's name on `PATH`.
    pub name: &'static str,
    /// The variable that overrides the `PATH` lookup.
    pub env_var: &'static str,
    /// How a user installs it, quoted in the not-found error.
    pub install: &'static str,
}

impl AgentProgram {
    /// The executable to run, given the override variable's value and `PATH`.
    pub fn locate(
        &self,
        override_value: Option<&str>,
        path_var: Option<&str>,
    ) -> Result<PathBuf, BuiltinError> {
        if let Some(value) = override_value.filter(|v| !v.is_empty()) {
            let path = PathBuf::from(value);
            return if is_executable(&path) {
                Ok(path)
            } else {
                Err(BuiltinError::BadOverride {
                    program: self.name,
                    env_var: self.env_var,
                    value: value.to_owned(),
                })
            };
        }
        let path_var = path_var.unwrap_or("");
        path_var
            .split(':')
            .filter(|d| !d.is_empty())
            .map(|d| Path::new(d).join(self.name))
            .find(|p| is_executable(p))
            .ok_or_else(|| BuiltinError::NotFound {
                program: self.name,
                env_var: self.env_var,
                path: path_var.to_owned(),
                install: self.install,
            })
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

/// One line of an agent's stdout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// A whole line, without its `'\n'` (and without a trailing `'\r'`).
    Complete(Vec<u8>),
    /// A line longer than the limit; its bytes were dropped as they came.
    TooLong,
}

/// Splits a byte stream into lines for any chunking, buffering at most `max_line_bytes` of an
/// unfinished line so a runaway agent cannot exhaust memory.
#[derive(Debug)]
pub struct LineSplitter {
    max_line_bytes: usize,
    pending: Vec<u8>,
    /// The current line passed the limit and was reported; skip to its end.
    skipping: bool,
}

impl LineSplitter {
    pub fn new(max_line_bytes: usize) -> LineSplitter {
        LineSplitter {
            max_line_bytes,
            pending: Vec::new(),
            skipping: false,
        }
    }

    /// The lines the chunk completes (a too-long line is reported as soon as it passes the
    /// limit, once).
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<Line> {
        let mut out = Vec::new();
        let mut rest = chunk;
        while !rest.is_empty() {
            let (segment, after) = match rest.iter().position(|&b| b == b'\n') {
                Some(i) => (&rest[..i], Some(&rest[i + 1..])),
                None => (rest, None),
            };
            if !self.skipping {
                // One '\r' beyond the limit is allowed: it is stripped with the line end.
                if self.pending.len() + segment.len() > self.max_line_bytes.saturating_add(1) {
                    self.skipping = true;
                    self.pending.clear();
                    out.push(Line::TooLong);
                } else {
                    self.pending.extend_from_slice(segment);
                    if after.is_some() {
                        out.push(self.take_line());
                    }
                }
            }
            match after {
                Some(after) => {
                    self.skipping = false;
                    rest = after;
                }
                None => break,
            }
        }
        out
    }

    /// Ends the stream: a last line without `'\n'`.
    pub fn finish(&mut self) -> Option<Line> {
        if self.skipping {
            self.skipping = false;
            return None;
        }
        if self.pending.is_empty() {
            return None;
        }
        Some(self.take_line())
    }

    fn take_line(&mut self) -> Line {
        let mut line = std::mem::take(&mut self.pending);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        if line.len() > self.max_line_bytes {
            Line::TooLong
        } else {
            Line::Complete(line)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split_all(chunks: &[&[u8]], max: usize) -> Vec<Line> {
        let mut splitter = LineSplitter::new(max);
        let mut out: Vec<Line> = chunks.iter().flat_map(|c| splitter.feed(c)).collect();
        out.extend(splitter.finish());
        out
    }

    #[test]
    fn lines_for_any_chunking() {
        let text = b"one\r\ntwo\n\nthree";
        let whole = split_all(&[text], 100);
        assert_eq!(
            whole,
            vec![
                Line::Complete(b"one".to_vec()),
                Line::Complete(b"two".to_vec()),
                Line::Complete(Vec::new()),
                Line::Complete(b"three".to_vec()),
            ]
        );
        for cut in 0..text.len() {
            let (a, b) = text.split_at(cut);
            assert_eq!(split_all(&[a, b], 100), whole, "cut at {cut}");
        }
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(split_all(&bytes, 100), whole);
    }

    #[test]
    fn too_long_lines_are_reported_once_and_skipped() {
        let text = b"short\nwaytoolongline\nok\n";
        let whole = split_all(&[text], 5);
        assert_eq!(
            whole,
            vec![
                Line::Complete(b"short".to_vec()),
                Line::TooLong,
                Line::Complete(b"ok".to_vec()),
            ]
        );
        let bytes: Vec<&[u8]> = text.chunks(1).collect();
        assert_eq!(split_all(&bytes, 5), whole);
        assert_eq!(split_all(&[b"abcdefgh"], 5), vec![Line::TooLong]);
    }

    #[test]
    fn locate_prefers_the_override_then_path() {
        let dir = tempfile::tempdir().unwrap();
        let program = AgentProgram {
            name: "agent",
            env_var: "AGENT_BIN",
            install: "get it",
        };
        let bin = dir.path().join("agent");
        std::fs::write(&bin, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("/nonexistent:{}", dir.path().display());
        assert_eq!(program.locate(None, Some(&path)).unwrap(), bin);
        assert_eq!(
            program
                .locate(Some(bin.to_str().unwrap()), Some("/nonexistent"))
                .unwrap(),
            bin
        );

        let missing = program
            .locate(None, Some("/nonexistent"))
            .unwrap_err()
            .to_string();
        assert!(
            missing.contains("AGENT_BIN") && missing.contains("PATH") && missing.contains("get it"),
            "{missing}"
        );
        let bad = program
            .locate(Some("/nonexistent/agent"), Some(&path))
            .unwrap_err()
            .to_string();
        assert!(
            bad.contains("AGENT_BIN") && bad.contains("/nonexistent/agent"),
            "{bad}"
        );
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert!(program.locate(None, Some(&path)).is_err());
    }
}
