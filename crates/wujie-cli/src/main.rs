//! The `wujie` binary: parses arguments, calls the library crates, prints results.

mod cli;
mod commands;
mod context;
mod output;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("wujie: error: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    let code = match runtime.block_on(commands::dispatch(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("wujie: error: {e:#}");
            1
        }
    };
    // A blocked read of our stdin (forwarded to an adapter) must not keep the process alive.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    ExitCode::from(u8::try_from(code).unwrap_or(1))
}
