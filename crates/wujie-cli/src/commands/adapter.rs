//! `wujie adapter NAME [ARGS…]` (hidden): the adapter of a built-in provider, started by
//! `wujie run` like any plugin's adapter.

use anyhow::{Result, bail};
use wujie_localrun::builtin::acp::run_acp_adapter;
use wujie_localrun::builtin::claude::run_claude_adapter;
use wujie_localrun::builtin::codex::run_codex_adapter;
use wujie_localrun::builtin::opencode::run_opencode_adapter;
use wujie_localrun::builtin::pi::run_pi_adapter;

use crate::cli::AdapterArgs;
use crate::context::BUILTINS;

pub async fn run(args: AdapterArgs) -> Result<i32> {
    let mut name_and_args = args.name_and_args.into_iter();
    let name = name_and_args.next().unwrap_or_default();
    let args: Vec<String> = name_and_args.collect();
    match name.as_str() {
        "pi" => Ok(run_pi_adapter(args).await),
        "acp" => Ok(run_acp_adapter(args).await),
        "claude" => Ok(run_claude_adapter(args).await),
        "codex" => Ok(run_codex_adapter(args).await),
        "opencode" => Ok(run_opencode_adapter(args).await),
        other => {
            let names: Vec<&str> = BUILTINS.iter().map(|b| b.name).collect();
            bail!(
                "no built-in provider named {other:?}; the built-in providers are: {}",
                names.join(", ")
            )
        }
    }
}
