//! One line, once per agent version, when a built-in provider's agent is installed in a version
//! it was not tested with (`wujie_builtins::versions`): said before the run or discussion
//! starts, above everything the agent draws, and remembered in the profile's state so that
//! every later run of the same version goes quietly.

use std::collections::BTreeMap;
use std::path::PathBuf;

use wujie_process::atomic_file::write_atomic;

use crate::profile::Profile;
use crate::registry::{Origin, Provider};
use crate::small_file::read_small_file;

/// What was said so far: agent name → the untested version it was said of.
type Said = BTreeMap<String, String>;

fn said_file(profile: &Profile) -> PathBuf {
    profile.state_dir.join("untested-agent-versions.json")
}

/// Says so (on stderr) when `provider`'s agent, started with `args`, is an untested version
/// this profile was not told of yet.
pub fn say_if_untested(profile: &Profile, provider: &Provider, args: &[String]) {
    if provider.origin != Origin::Builtin {
        return;
    }
    let Some(untested) = wujie_builtins::untested_version(&provider.name, args) else {
        return;
    };
    let file = said_file(profile);
    let mut said: Said = read_small_file(&file, 64 * 1024)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default();
    if said.get(untested.agent) == Some(&untested.installed) {
        return;
    }
    wujie_process::stderr_line!("wujie: note: {untested}.");
    said.insert(untested.agent.to_owned(), untested.installed.clone());
    let written = serde_json::to_vec_pretty(&said)
        .map_err(std::io::Error::other)
        .and_then(|json| {
            std::fs::create_dir_all(&profile.state_dir)?;
            write_atomic(&file, &json, 0o644)
        });
    if let Err(e) = written {
        // Saying it again next time is the worst that comes of it.
        tracing::debug!(error = %e, file = %file.display(), "cannot remember the note");
    }
}
