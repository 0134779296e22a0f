//! What a shell and `man` need of the command line, generated from the clap definitions in
//! `cli.rs` so that they cannot drift from it: completion scripts and manual pages.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::CommandFactory;

use crate::cli::Cli;

/// The completion script for `shell`, for the `wujie` binary.
pub fn completion_script(shell: clap_complete::Shell) -> String {
    let mut command = Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut command, "wujie", &mut script);
    String::from_utf8_lossy(&script).into_owned()
}

/// The manual page of `wujie` itself (wujie.1), in roff.
pub fn man_page() -> Result<String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(Cli::command())
        .render(&mut page)
        .context("cannot render the manual page")?;
    Ok(String::from_utf8_lossy(&page).into_owned())
}

/// Writes wujie.1 and a page per command (wujie-issue.1, wujie-issue-list.1, …) into `dir`,
/// which must exist; the pages it then holds, in order.
pub fn write_man_pages(dir: &Path) -> Result<Vec<PathBuf>> {
    if !dir.is_dir() {
        anyhow::bail!(
            "{} is not a directory; create it first (e.g. mkdir -p {})",
            dir.display(),
            dir.display()
        );
    }
    clap_mangen::generate_to(Cli::command(), dir)
        .with_context(|| format!("cannot write the manual pages into {}", dir.display()))?;
    let mut written = pages_in(dir)?;
    written.sort();
    Ok(written)
}

/// The `wujie*.1` files in `dir`.
fn pages_in(dir: &Path) -> Result<Vec<PathBuf>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot read {}", dir.display()))?;
    let mut pages = Vec::new();
    for entry in entries {
        let path = entry
            .with_context(|| format!("cannot read {}", dir.display()))?
            .path();
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.starts_with("wujie") && name.ends_with(".1") {
            pages.push(path);
        }
    }
    Ok(pages)
}
