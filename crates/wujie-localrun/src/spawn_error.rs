//! What to tell the user when an adapter cannot be started. The kernel reports a script whose
//! `#!` interpreter is missing as "No such file or directory", which reads as if the script
//! itself were missing: name the interpreter instead.

use std::io::{self, Read};
use std::path::Path;

use crate::error::LocalRunError;

/// The first line of a script is read at most this far.
const SHEBANG_MAX: usize = 256;

/// "could not start adapter PROGRAM" with the system's error as its cause, or naming a
/// missing interpreter when that is the cause (the system's "not found" would mislead).
pub(crate) fn spawn_failed(program: &Path, e: io::Error) -> LocalRunError {
    let program_shown = program.display();
    if e.kind() == io::ErrorKind::NotFound
        && program.is_file()
        && let Some(interpreter) = shebang_interpreter(program)
        && !Path::new(&interpreter).is_file()
    {
        return LocalRunError::Spawn {
            message: format!(
                "could not start adapter {program_shown}: its interpreter {interpreter:?} (the \
                 script's #! line) does not exist; install it or correct the first line"
            ),
            source: None,
        };
    }
    LocalRunError::Spawn {
        message: format!("could not start adapter {program_shown}"),
        source: Some(e),
    }
}

/// The interpreter named by the script's `#!` line, as written (a trailing `\r` kept, since it
/// is a common cause of the error).
fn shebang_interpreter(script: &Path) -> Option<String> {
    let mut head = Vec::with_capacity(SHEBANG_MAX);
    std::fs::File::open(script)
        .ok()?
        .take(SHEBANG_MAX as u64)
        .read_to_end(&mut head)
        .ok()?;
    let line = head.strip_prefix(b"#!")?;
    let line = &line[..line.iter().position(|&b| b == b'\n').unwrap_or(line.len())];
    let text = String::from_utf8_lossy(line);
    let interpreter = text
        .trim_start_matches([' ', '\t'])
        .split([' ', '\t'])
        .next()?;
    (!interpreter.is_empty()).then(|| interpreter.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_interpreter_of_a_script_that_exists() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("adapter");
        std::fs::write(&script, "#! /no/such/python3 -u\nprint()\n").unwrap();
        let e = io::Error::from(io::ErrorKind::NotFound);
        let describe =
            |program: &Path| spawn_failed(program, io::Error::from(e.kind())).to_string();
        let message = describe(&script);
        assert!(message.contains("\"/no/such/python3\""), "{message}");
        std::fs::write(&script, "#!/bin/sh\r\necho\r\n").unwrap();
        let message = describe(&script);
        assert!(message.contains("\"/bin/sh\\r\""), "{message}");
        let missing = describe(&dir.path().join("gone"));
        assert!(!missing.contains("interpreter"), "{missing}");
    }
}
