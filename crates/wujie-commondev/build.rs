//! Embeds the bundled drivers (`runtime/<cli>/*` at the repository root) into the library, so
//! that a bare `wujie` binary works without the repository: the files are materialised under the
//! data dir when first used. The list is generated from the directory, so the core's sources
//! never name a backend.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let runtime = manifest.join("../../runtime");
    println!("cargo::rerun-if-changed={}", runtime.display());
    let mut code = String::from(
        "/// Bundled drivers: (cli, [(file name, contents)]).\npub static BUNDLED: &[(&str, &[(&str, &str)])] = &[\n",
    );
    for cli_dir in sorted_entries(&runtime) {
        if !cli_dir.is_dir() {
            continue;
        }
        println!("cargo::rerun-if-changed={}", cli_dir.display());
        let cli = cli_dir
            .file_name()
            .and_then(|n| n.to_str())
            .expect("utf-8 driver dir name");
        writeln!(code, "    ({cli:?}, &[").expect("write to string");
        for file in sorted_entries(&cli_dir) {
            if !file.is_file() {
                continue;
            }
            println!("cargo::rerun-if-changed={}", file.display());
            let name = file
                .file_name()
                .and_then(|n| n.to_str())
                .expect("utf-8 file name");
            let abs = file.canonicalize().expect("bundled file is readable");
            writeln!(
                code,
                "        ({name:?}, include_str!({:?})),",
                abs.display().to_string()
            )
            .expect("write to string");
        }
        code.push_str("    ]),\n");
    }
    code.push_str("];\n");
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets it")).join("bundled.rs");
    std::fs::write(out, code).expect("write generated bundled.rs");
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    entries
}
