//! Snapshot timings on existing repositories: `cargo bench -p wujie-git --bench snapshot --
//! DIR…` (scripts/bench/git-snapshot generates the repositories and runs it).
//!
//! Per repository: the first snapshot (a new temporary index seeded from the real one, as at
//! the start of a run), then `TURNS` turns that each change ten files and add one, each
//! followed by a snapshot (as after every `final`), and the diff from the first snapshot to
//! the last. The files it changes are put back at the end, so the repository can be measured
//! again.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use wujie_git::{Discovered, PatchLimits, Repository};

const TURNS: usize = 5;

fn main() {
    // `cargo bench` passes `--bench`; everything else names a repository.
    let dirs: Vec<PathBuf> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(PathBuf::from)
        .collect();
    assert!(
        !dirs.is_empty(),
        "usage: snapshot DIR… (repositories to measure)"
    );
    for dir in dirs {
        measure(&dir);
    }
}

fn measure(dir: &Path) {
    let Ok(Discovered::Repository(repository)) = Repository::discover(dir) else {
        panic!("{} is not a git work tree", dir.display());
    };
    let files = tracked_files(dir);
    let started = Instant::now();
    let first = repository.snapshot().expect("first snapshot");
    let first_time = started.elapsed();

    let mut turn_times = Vec::new();
    let mut last = first.clone();
    let changed: Vec<&PathBuf> = files.iter().step_by(files.len().div_ceil(10)).collect();
    let originals: Vec<Vec<u8>> = changed
        .iter()
        .map(|f| std::fs::read(f).expect("read"))
        .collect();
    for turn in 0..TURNS {
        for (file, original) in changed.iter().zip(&originals) {
            let mut text = original.clone();
            text.extend_from_slice(format!("turn {turn}\n").as_bytes());
            std::fs::write(file, text).expect("write");
        }
        std::fs::write(dir.join(format!("bench-turn-{turn}.txt")), "new\n").expect("write");
        let started = Instant::now();
        last = repository.snapshot().expect("snapshot");
        turn_times.push(started.elapsed());
    }
    let started = Instant::now();
    let diff = repository
        .diff(&first, &last, PatchLimits::default())
        .expect("diff");
    let diff_time = started.elapsed();

    for (file, original) in changed.iter().zip(&originals) {
        std::fs::write(file, original).expect("restore");
    }
    for turn in 0..TURNS {
        std::fs::remove_file(dir.join(format!("bench-turn-{turn}.txt"))).expect("remove");
    }

    let mut sorted = turn_times.clone();
    sorted.sort();
    println!(
        "{}: {} files; first snapshot {}; per turn (10 changed, 1 added) {} (median {}); diff first→last ({} files) {}",
        dir.display(),
        files.len(),
        ms(first_time),
        turn_times
            .iter()
            .map(|t| ms(*t))
            .collect::<Vec<_>>()
            .join(", "),
        ms(sorted[sorted.len() / 2]),
        diff.files.len(),
        ms(diff_time),
    );
}

fn ms(duration: Duration) -> String {
    format!("{} ms", duration.as_millis())
}

fn tracked_files(dir: &Path) -> Vec<PathBuf> {
    let output = std::process::Command::new("git")
        .current_dir(dir)
        .args(["ls-files", "-z"])
        .output()
        .expect("git ls-files");
    output
        .stdout
        .split(|b| *b == 0)
        .filter(|name| !name.is_empty())
        .map(|name| dir.join(String::from_utf8_lossy(name).as_ref()))
        .collect()
}
