//! `wujie adapter NAME [ARGS…]` (hidden): the adapter of a built-in provider, started by
//! `wujie run` like any plugin's adapter.

use anyhow::Result;

use crate::cli::AdapterArgs;

pub async fn run(args: AdapterArgs) -> Result<i32> {
    let mut name_and_args = args.name_and_args.into_iter();
    let name = name_and_args.next().unwrap_or_default();
    let args: Vec<String> = name_and_args.collect();
    Ok(wujie_builtins::run_adapter(&name, args).await?)
}
