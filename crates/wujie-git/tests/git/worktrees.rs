//! Worktrees made at once: agents on several issues start together, each making its worktree
//! of the same repository.

use std::sync::{Arc, Barrier};

use super::sandbox::Sandbox;

#[test]
fn worktrees_made_at_once_in_one_repository_are_all_made() {
    let Some(sandbox) = Sandbox::require_committed(&[("a.txt", "a\n")]) else {
        return;
    };
    let dir = sandbox.root.with_extension("wujie");
    // git alone fails some of these (`.git/config` locked, `.git/worktrees/<name>` half
    // written) when they overlap; a few rounds make an overlap all but certain.
    for round in 0..3 {
        let start = Arc::new(Barrier::new(8));
        let makers: Vec<_> = (0..8)
            .map(|n| {
                let (repository, start) = (sandbox.repository(), start.clone());
                let path = dir.join(format!("r{round}-{n}"));
                std::thread::spawn(move || {
                    start.wait();
                    repository.issue_worktree(&format!("wujie/r{round}-{n}"), &path, None)
                })
            })
            .collect();
        for (n, maker) in makers.into_iter().enumerate() {
            let made = maker.join().expect("no panic");
            let made = made.unwrap_or_else(|e| panic!("worktree {round}-{n}: {e:?}"));
            assert!(made.created && made.path.join("a.txt").exists(), "{made:?}");
        }
    }
    assert_eq!(
        sandbox.repository().worktrees().expect("list").len(),
        1 + 3 * 8
    );
}
