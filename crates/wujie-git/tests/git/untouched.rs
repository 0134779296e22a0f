//! A snapshot never changes the user's index, HEAD or files.

use super::sandbox::Sandbox;

struct UserState {
    status: Vec<u8>,
    index: Vec<u8>,
    head: String,
    tracked: Vec<u8>,
}

fn user_state(sandbox: &Sandbox) -> UserState {
    UserState {
        status: sandbox.git(&["status", "--porcelain=v1", "-z", "--untracked-files=all"]),
        index: std::fs::read(sandbox.root.join(".git/index")).expect("read index"),
        head: sandbox.git_text(&["rev-parse", "HEAD"]),
        tracked: std::fs::read(sandbox.root.join("staged.txt")).expect("read file"),
    }
}

#[test]
fn snapshots_leave_the_users_index_head_and_files_as_they_were() {
    let Some(sandbox) = Sandbox::require_committed(&[
        (".gitignore", "*.log\n"),
        ("staged.txt", "v1\n"),
        ("kept.txt", "kept\n"),
    ]) else {
        return;
    };
    // Staged at v2, then changed again to v3 in the working tree; an untracked and an
    // ignored file beside.
    sandbox.write("staged.txt", "v2\n");
    sandbox.git(&["add", "staged.txt"]);
    sandbox.write("staged.txt", "v3\n");
    sandbox.write("untracked/new.txt", "new\n");
    sandbox.write("debug.log", "ignored\n");
    let before = user_state(&sandbox);

    let repository = sandbox.repository();
    let tree = repository.snapshot().expect("snapshot");
    repository.snapshot().expect("second snapshot");

    let after = user_state(&sandbox);
    assert_eq!(after.status, before.status, "git status changed");
    assert_eq!(after.index, before.index, "the index file changed");
    assert_eq!(after.head, before.head);
    assert_eq!(after.tracked, before.tracked);

    // The snapshot is the working tree as it is: v3, the untracked file, no ignored file.
    let listed = sandbox.git_text(&["ls-tree", "-r", "--name-only", tree.as_str()]);
    assert_eq!(
        listed.lines().collect::<Vec<_>>(),
        vec![".gitignore", "kept.txt", "staged.txt", "untracked/new.txt"]
    );
    let content = sandbox.git_text(&["show", &format!("{tree}:staged.txt")]);
    assert_eq!(content, "v3");
}
