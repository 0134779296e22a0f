//! A snapshot caught up with what a base branch gained: the base's new files merged in, the
//! snapshot's own changes kept; a conflict is `None`; a base that names nothing has no
//! merge-base.

use super::sandbox::Sandbox;
use wujie_git::PatchLimits;

#[test]
fn a_snapshot_caught_up_with_its_base_has_the_bases_new_work_and_keeps_its_own() {
    let Some(sandbox) = Sandbox::require_committed(&[("shared.txt", "one\ntwo\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    sandbox.git(&["switch", "-q", "-c", "topic"]);
    let then = repository
        .merge_base_with("HEAD", "main")
        .expect("merge-base")
        .expect("shared history");
    // The branch's own work, uncommitted.
    sandbox.write("mine.txt", "mine\n");
    let snapshot = repository.snapshot().expect("snapshot");
    // Meanwhile main gains a file, and the branch merges it.
    sandbox.git(&["stash", "-u", "-q"]);
    sandbox.git(&["switch", "-q", "main"]);
    sandbox.write("landed.txt", "landed\n");
    sandbox.git(&["add", "landed.txt"]);
    sandbox.git(&["commit", "-q", "-m", "Landed"]);
    sandbox.git(&["switch", "-q", "topic"]);
    sandbox.git(&["merge", "-q", "--no-edit", "main"]);
    sandbox.git(&["stash", "pop", "-q"]);
    let now = repository
        .merge_base_with("HEAD", "main")
        .expect("merge-base")
        .expect("shared history");
    assert_ne!(now, then);

    let caught_up = repository
        .caught_up(&snapshot, &then, &now)
        .expect("merge")
        .expect("no conflict");
    // Caught up, the snapshot is the work tree as it is now: its own file and the base's.
    let current = repository.snapshot().expect("snapshot");
    assert_eq!(caught_up, current);
    // Not caught up, the base's file would be counted.
    let from_start = repository
        .diff(&snapshot, &current, PatchLimits::default())
        .expect("diff");
    let paths: Vec<&str> = from_start.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(paths, ["landed.txt"]);
}

#[test]
fn a_base_change_that_conflicts_with_the_snapshot_is_none() {
    let Some(sandbox) = Sandbox::require_committed(&[("shared.txt", "one\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    sandbox.git(&["switch", "-q", "-c", "topic"]);
    let then = sandbox.git_text(&["rev-parse", "HEAD"]);
    sandbox.write("shared.txt", "topic's line\n");
    let snapshot = repository.snapshot().expect("snapshot");
    sandbox.git(&["checkout", "-q", "--", "shared.txt"]);
    sandbox.git(&["switch", "-q", "main"]);
    sandbox.write("shared.txt", "main's line\n");
    sandbox.git(&["commit", "-q", "-am", "Main's line"]);
    let now = sandbox.git_text(&["rev-parse", "HEAD"]);

    assert_eq!(
        repository.caught_up(&snapshot, &then, &now).expect("merge"),
        None
    );
}

#[test]
fn a_base_that_names_nothing_has_no_merge_base() {
    let Some(sandbox) = Sandbox::require_committed(&[("a.txt", "a\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    assert_eq!(
        repository.merge_base_with("HEAD", "gone").expect("asked"),
        None
    );
    let head = sandbox.git_text(&["rev-parse", "HEAD"]);
    assert_eq!(
        repository.merge_base_with("HEAD", "main").expect("asked"),
        Some(head)
    );
}
