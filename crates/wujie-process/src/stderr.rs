//! Diagnostics on stderr that never stop the work. `eprintln!` panics when stderr cannot be
//! written, which is what happens when whoever reads it went away (`wujie run … 2>&1 | head
//! -1`, a closed terminal): a panic there would leave a run `running` with events unsent. A
//! closed stderr is treated like a closed stdout: the line is dropped and the work goes on.

use std::io::Write;

/// Writes one line to stderr; a failure to write is ignored (see the module's docs).
pub fn write_line(args: std::fmt::Arguments<'_>) {
    let mut stderr = std::io::stderr().lock();
    let _ = stderr.write_fmt(args);
    let _ = stderr.write_all(b"\n");
}

/// `eprintln!` that drops the line when stderr cannot be written, rather than panicking.
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {
        $crate::stderr::write_line(::std::format_args!($($arg)*))
    };
}
