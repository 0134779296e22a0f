//! Diagnostics through `tracing`, on stderr, filtered by `WUJIE_LOG` (the usual filter
//! syntax: `debug`, `wujie_server=debug,info`, …).

use std::io::IsTerminal;

use tracing_subscriber::EnvFilter;

/// Installs the subscriber. `default` is the filter when `WUJIE_LOG` is unset: the standalone
/// server logs its requests (`info`); other commands only errors, their output being for people.
pub fn init(default: &str) {
    let filter = match std::env::var("WUJIE_LOG") {
        Ok(spec) if !spec.trim().is_empty() => EnvFilter::try_new(&spec).unwrap_or_else(|e| {
            wujie_process::stderr_line!(
                "wujie: warning: WUJIE_LOG={spec:?} is not a valid log filter ({e}); logging with {default:?} instead (examples: WUJIE_LOG=debug, WUJIE_LOG=wujie_server=debug,info)"
            );
            EnvFilter::new(default)
        }),
        _ => EnvFilter::new(default),
    };
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // A log line that cannot be written (stderr closed by its reader) is dropped; the
        // default would report it with `eprintln!`, which panics on that same stderr.
        .log_internal_errors(false)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}
