//! `wujie-mockllm --listen 127.0.0.1:0 [--script FILE]`: serves until killed and prints its base
//! URL as the first line of standard output.

use anyhow::Context;
use clap::Parser;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use wujie_mockllm::{MockLlm, Script};

/// A scripted mock model server (OpenAI Chat/Responses, Anthropic Messages).
#[derive(Debug, Parser)]
#[command(version)]
struct Args {
    /// Address to listen on; port 0 picks a free port.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// JSON script of turns; without it every request is answered with `pong`.
    #[arg(long)]
    script: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
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
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "{}", mock.url())?;
    stdout.flush()?;
    drop(stdout);
    tokio::signal::ctrl_c()
        .await
        .context("cannot wait for Ctrl-C")?;
    mock.shutdown().await;
    Ok(())
}
