//! `wujie --version` names the commit it was built from and that commit's date, when it is
//! built from a git checkout (a source archive has only the package version). The commit's date,
//! not the time of the build, so that the same commit always builds the same binary.

use std::path::Path;
use std::process::Command;

fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let long = match commit() {
        Some((sha, date)) => format!("{version} ({sha} {date})"),
        None => version.to_owned(),
    };
    println!("cargo:rustc-env=WUJIE_VERSION={long}");
    // Built again when HEAD moves: a commit, a checkout, a reset all write HEAD's log.
    if let Some(git_dir) = git(&["rev-parse", "--absolute-git-dir"]) {
        let git_dir = Path::new(&git_dir);
        for file in ["HEAD", "logs/HEAD"] {
            println!("cargo:rerun-if-changed={}", git_dir.join(file).display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

/// The short sha of HEAD and its date.
fn commit() -> Option<(String, String)> {
    let sha = git(&["rev-parse", "--short=10", "HEAD"])?;
    let date = git(&["log", "-1", "--format=%cs", "HEAD"])?;
    Some((sha, date))
}

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_owned())
}
