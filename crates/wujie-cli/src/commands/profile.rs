//! `wujie profile create | list`: profiles are made on purpose, so that a mistyped
//! `--profile` is refused instead of starting an empty one.

use anyhow::Result;
use wujie_localrun::profile::Roots;

use crate::cli::ProfileCommand;
use crate::context::Context;
use crate::output::{outln, print_json};

pub fn run(ctx: &Context, cmd: ProfileCommand) -> Result<()> {
    let roots = Roots::from_env()?;
    match cmd {
        ProfileCommand::Create { name } => {
            let existed = roots.profile(&name)?.exists();
            let profile = roots.create_profile(&name)?;
            if ctx.json() {
                print_json(&serde_json::json!({"name": profile.name, "created": !existed}))?;
            } else if existed {
                outln!("Profile {} exists already; nothing changed.", profile.name);
            } else {
                outln!(
                    "Created profile {}. Use it with `wujie --profile {} …` or WUJIE_PROFILE={}.",
                    profile.name,
                    profile.name,
                    profile.name
                );
            }
        }
        ProfileCommand::List => {
            let names = roots.profile_names();
            if ctx.json() {
                print_json(&names)?;
            } else {
                for name in names {
                    outln!("{name}");
                }
            }
        }
    }
    Ok(())
}
