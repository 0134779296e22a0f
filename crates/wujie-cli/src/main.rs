//! The `wujie` binary: parses arguments, calls the library crates, prints results.

// Stdout is written through `output::outln!`, which turns a closed stdout into a quiet exit.
#![deny(clippy::print_stdout)]

mod cli;
mod cli_docs;
mod commands;
mod context;
mod logging;
mod memory;
mod output;
mod pager;
mod user_error;

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    memory::return_big_buffers();
    let cli = cli::parse();
    logging::init(match cli.command {
        cli::Command::Server(_) => "info",
        _ => "error",
    });
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            report(&format!("cannot start the async runtime: {e}"));
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(commands::dispatch(cli)) {
        Ok(code) => code,
        // Like other Unix tools: the reader has what it wanted.
        Err(e) if e.chain().any(|c| c.is::<output::StdoutClosed>()) => 0,
        Err(e) => {
            report(&chain_text(&e));
            exit_code_of_error(&e)
        }
    };
    // A blocked read of our stdin (forwarded to an adapter) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}

/// The error and its causes, each once, in the user's words (`user_error`).
fn chain_text(error: &anyhow::Error) -> String {
    user_error::text(error.as_ref())
}

/// What a failed command exits with (see "Exit codes" in the README): the code of the first
/// local-run error in the chain that has one of its own, else 1.
fn exit_code_of_error(error: &anyhow::Error) -> i32 {
    error
        .chain()
        .find_map(|cause| cause.downcast_ref::<wujie_localrun::LocalRunError>())
        .map_or(wujie_localrun::error::EXIT_FAILURE, |e| e.exit_code())
}

/// Prints the error on stderr (it may quote stored text, so made terminal-safe); a closed
/// stderr leaves only the exit status to tell.
fn report(message: &str) {
    let _ = writeln!(
        std::io::stderr(),
        "wujie: error: {}",
        output::block(message)
    );
}
