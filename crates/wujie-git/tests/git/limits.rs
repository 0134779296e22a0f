//! Patches are kept within their limits, and a file past them keeps its counts.

use super::sandbox::Sandbox;
use wujie_git::{Patch, PatchLimits};

/// `lines` lines of 99 characters and a line end.
fn text(lines: usize) -> Vec<u8> {
    let line = format!("{}\n", "x".repeat(99));
    line.repeat(lines).into_bytes()
}

#[test]
fn a_file_past_256_kib_of_patch_keeps_its_counts_but_not_its_patch() {
    let Some(sandbox) = Sandbox::require_committed(&[("small.txt", "a\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    let start = repository.snapshot().expect("snapshot");
    sandbox.write("big.txt", text(3_000));
    sandbox.write("small.txt", "b\n");
    let end = repository.snapshot().expect("snapshot");
    let mut files = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff")
        .files;
    files.sort_by(|a, b| a.path.cmp(&b.path));
    assert_eq!(files[0].path, "big.txt");
    assert_eq!(files[0].patch, Patch::TooLarge);
    assert_eq!((files[0].additions, files[0].deletions), (3_000, 0));
    assert!(
        matches!(files[1].patch, Patch::Kept(_)),
        "{:?}",
        files[1].patch
    );
}

#[test]
fn past_2_mib_of_patch_in_one_diff_the_remaining_files_are_listed_without_theirs() {
    let Some(sandbox) = Sandbox::require_committed(&[("a.txt", "a\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    let start = repository.snapshot().expect("snapshot");
    // Each file's patch is about 252 KiB: eight fit in 2 MiB, the ninth does not.
    for n in 0..10 {
        sandbox.write(&format!("f{n}.txt"), text(2_500));
    }
    let end = repository.snapshot().expect("snapshot");
    let files = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff")
        .files;
    let kept: Vec<bool> = files
        .iter()
        .map(|f| matches!(f.patch, Patch::Kept(_)))
        .collect();
    assert_eq!(
        kept,
        vec![true, true, true, true, true, true, true, true, false, false]
    );
    assert!(files.iter().all(|f| f.additions == 2_500));
}

#[test]
fn text_that_is_not_utf8_is_listed_with_its_counts_and_no_patch() {
    let Some(sandbox) = Sandbox::require_committed_bytes(&[("latin1.txt", b"caf\xe9\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    let start = repository.snapshot().expect("snapshot");
    sandbox.write("latin1.txt", b"caf\xe9 au lait\n");
    let end = repository.snapshot().expect("snapshot");
    let files = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff")
        .files;
    assert_eq!(files.len(), 1);
    assert!(!files[0].binary);
    assert_eq!((files[0].additions, files[0].deletions), (1, 1));
    assert_eq!(files[0].patch, Patch::NotText);
}
