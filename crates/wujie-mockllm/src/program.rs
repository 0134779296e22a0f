//! The `wujie-mockllm` program: its arguments and what it does with them, in the library so the
//! program is tested in the crate's one test binary (an integration test binary of its own would
//! cost a link on every change).

use anyhow::Context;
use clap::Parser;
use std::future::Future;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::{MockLlm, Script};

/// A scripted mock model server (OpenAI Chat/Responses, Anthropic Messages).
#[derive(Debug, Parser)]
#[command(name = "wujie-mockllm", version)]
pub struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: SocketAddr,
    /// JSON script of turns; without it every request is answered with `pong`.
    #[arg(long)]
    pub script: Option<PathBuf>,
}

/// Serves `args` until `stop` completes, after writing the base URL as the first line of `out`.
pub async fn serve(
    args: &Args,
    mut out: impl Write,
    stop: impl Future<Output = anyhow::Result<()>>,
) -> anyhow::Result<()> {
    let script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the script {}", path.display()))?;
            Script::from_json(&text).with_context(|| {
                format!(
                    "the script {} is not a valid mock script (see the wujie-mockllm docs)",
                    path.display()
                )
            })?
        }
        None => Script::default(),
    };
    let mock = MockLlm::bind(args.listen, script).await?;
    writeln!(out, "{}", mock.url())?;
    out.flush()?;
    drop(out);
    let stopped = stop.await;
    mock.shutdown().await;
    stopped
}
