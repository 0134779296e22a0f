//! `wujie-mockllm --listen 127.0.0.1:0 [--script FILE]`: serves until killed and prints its base
//! URL as the first line of standard output.

use anyhow::Context;
use clap::Parser;
use wujie_mockllm::program::{Args, serve};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    serve(&args, std::io::stdout().lock(), async {
        tokio::signal::ctrl_c()
            .await
            .context("cannot wait for Ctrl-C")
    })
    .await
}
