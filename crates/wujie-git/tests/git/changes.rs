//! A run's changes are exactly what happened between its snapshots.

use super::sandbox::Sandbox;
use wujie_git::{FileChange, FileStatus, Patch, PatchLimits, Repository};

fn by_path(mut files: Vec<FileChange>) -> Vec<FileChange> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

fn summary(files: &[FileChange]) -> Vec<(String, FileStatus, u64, u64)> {
    files
        .iter()
        .map(|f| (f.path.clone(), f.status, f.additions, f.deletions))
        .collect()
}

fn patch_text(file: &FileChange) -> &str {
    match &file.patch {
        Patch::Kept(text) => text,
        other => panic!("{}: patch not kept: {other:?}", file.path),
    }
}

#[test]
fn edits_additions_deletions_and_commits_are_the_runs_and_earlier_work_is_not() {
    let Some(sandbox) = Sandbox::require_committed(&[
        ("edit.txt", "one\ntwo\n"),
        ("gone.txt", "bye\n"),
        ("user.txt", "mine\n"),
    ]) else {
        return;
    };
    // The user's own unfinished work, there before the run began.
    sandbox.write("user.txt", "mine, changed before the run\n");
    sandbox.write("user-notes.txt", "untracked before the run\n");
    let repository = sandbox.repository();
    let base = repository.head_commit().expect("head").expect("a commit");
    let start = repository.snapshot().expect("start snapshot");

    sandbox.write("edit.txt", "one\n2\n");
    sandbox.write("dir/new.txt", "fresh\nfile\n");
    sandbox.remove("gone.txt");
    sandbox.write("committed.txt", "in a commit\n");
    sandbox.git(&["add", "committed.txt"]);
    sandbox.git(&["commit", "-q", "-m", "Add committed.txt"]);
    let end = repository.snapshot().expect("end snapshot");

    let diff = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff");
    let files = by_path(diff.files);
    assert_eq!(
        summary(&files),
        vec![
            ("committed.txt".to_string(), FileStatus::Added, 1, 0),
            ("dir/new.txt".to_string(), FileStatus::Added, 2, 0),
            ("edit.txt".to_string(), FileStatus::Modified, 1, 1),
            ("gone.txt".to_string(), FileStatus::Deleted, 0, 1),
        ]
    );
    assert!(
        patch_text(&files[2]).contains("-two\n+2\n"),
        "{}",
        patch_text(&files[2])
    );

    let commits = repository
        .commits_since(Some(&base), None)
        .expect("commits");
    assert_eq!(commits.len(), 1, "{commits:?}");
    assert_eq!(commits[0].subject, "Add committed.txt");
    assert_eq!(commits[0].author, "Ada Tester <ada@example.test>");
    assert_eq!(commits[0].sha, sandbox.git_text(&["rev-parse", "HEAD"]));
}

#[test]
fn git_apply_of_the_patch_on_the_start_reproduces_the_end() {
    let lines: String = (1..=60).map(|n| format!("line {n}\n")).collect();
    let Some(sandbox) = Sandbox::require_committed_bytes(&[
        ("src/lib.rs", b"fn main() {}\n".as_slice()),
        ("moved from.txt", lines.as_bytes()),
        ("image.bin", b"\x89PNG\0\x01\x02\x03"),
        ("run.sh", b"#!/bin/sh\necho hi\n"),
        ("old.txt", b"old\n"),
    ]) else {
        return;
    };
    let repository = sandbox.repository();
    let start = repository.snapshot().expect("start snapshot");

    sandbox.write("src/lib.rs", b"fn main() {\n    println!(\"hi\");\n}\n");
    sandbox.remove("moved from.txt");
    sandbox.write(
        "moved to \u{e9}.txt",
        format!("{lines}line 61\n").as_bytes(),
    );
    sandbox.write("image.bin", b"\x89PNG\0\x04\x05\x06\x07");
    sandbox.write("new.bin", [0, 159, 146, 150, 0, 1]);
    sandbox.remove("old.txt");
    sandbox.git(&["update-index", "--chmod=+x", "run.sh"]);
    set_executable(&sandbox.root.join("run.sh"));
    let end = repository.snapshot().expect("end snapshot");
    let diff = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff");
    assert!(
        diff.files
            .iter()
            .any(|f| f.status == FileStatus::Renamed
                && f.old_path.as_deref() == Some("moved from.txt")),
        "{:?}",
        summary(&diff.files)
    );

    let applied = sandbox.root.parent().expect("parent").join("applied");
    sandbox.check_out_tree(&start, &applied);
    let patch: String = diff.files.iter().map(patch_text).collect();
    let patch_file = applied.with_extension("patch");
    std::fs::write(&patch_file, patch).expect("write patch");
    super::sandbox::git_in(&applied, &["init", "-q"], &[]);
    super::sandbox::git_in(
        &applied,
        &["apply", patch_file.to_str().expect("utf-8")],
        &[],
    );

    let Ok(wujie_git::Discovered::Repository(reproduced)) = Repository::discover(&applied) else {
        panic!("{} is a repository", applied.display());
    };
    assert_eq!(reproduced.snapshot().expect("snapshot"), end);
}

fn set_executable(path: &std::path::Path) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn binary_files_are_listed_as_binary_with_a_patch_git_applies() {
    let Some(sandbox) = Sandbox::require_committed(&[("a.txt", "a\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    let start = repository.snapshot().expect("start snapshot");
    sandbox.write("blob.bin", [0, 1, 2, 3, 255, 0]);
    let end = repository.snapshot().expect("end snapshot");
    let diff = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff");
    assert_eq!(diff.files.len(), 1);
    let file = &diff.files[0];
    assert!(file.binary);
    assert_eq!((file.additions, file.deletions), (0, 0));
    assert!(
        patch_text(file).contains("GIT binary patch"),
        "{}",
        patch_text(file)
    );
}

#[test]
fn a_repository_with_no_commit_yet_is_snapshotted_and_has_no_base() {
    let Some(sandbox) = Sandbox::require_empty() else {
        return;
    };
    let repository = sandbox.repository();
    assert_eq!(repository.head_commit().expect("head"), None);
    let start = repository.snapshot().expect("start snapshot");
    sandbox.write("first.txt", "first\n");
    let end = repository.snapshot().expect("end snapshot");
    let diff = repository
        .diff(&start, &end, PatchLimits::default())
        .expect("diff");
    assert_eq!(
        summary(&diff.files),
        vec![("first.txt".to_string(), FileStatus::Added, 1, 0)]
    );
    assert!(
        repository
            .commits_since(None, None)
            .expect("commits")
            .is_empty()
    );
    sandbox.git(&["add", "first.txt"]);
    sandbox.git(&["commit", "-q", "-m", "First"]);
    let commits = repository.commits_since(None, None).expect("commits");
    assert_eq!(commits.len(), 1);
    assert_eq!(commits[0].subject, "First");
}

#[test]
fn the_same_files_give_the_same_snapshot() {
    let Some(sandbox) = Sandbox::require_committed(&[("a.txt", "a\n")]) else {
        return;
    };
    let repository = sandbox.repository();
    let first = repository.snapshot().expect("snapshot");
    assert_eq!(repository.snapshot().expect("snapshot"), first);
    sandbox.write("a.txt", "b\n");
    assert_ne!(repository.snapshot().expect("snapshot"), first);
    let diff = repository
        .diff(&first, &first, PatchLimits::default())
        .expect("diff");
    assert!(diff.files.is_empty());
}
