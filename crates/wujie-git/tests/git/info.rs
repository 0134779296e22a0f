//! Where a run happens, and what happens where there is no repository or no git.

use super::sandbox::Sandbox;
use std::path::PathBuf;
use wujie_git::{Discovered, GitError, Remote, Repository, strip_credentials};

#[test]
fn info_names_the_repository_branch_head_and_remotes_without_credentials() {
    let Some(sandbox) = Sandbox::require_committed(&[("a.txt", "a\n")]) else {
        return;
    };
    sandbox.git(&[
        "remote",
        "add",
        "origin",
        "https://ada:s3cret@example.test/team/project.git",
    ]);
    sandbox.git(&[
        "remote",
        "add",
        "mirror",
        "git@example.test:team/project.git",
    ]);
    let head = sandbox.git_text(&["rev-parse", "HEAD"]);
    let info = sandbox.repository().info().expect("info");
    assert_eq!(info.repo, "project");
    assert_eq!(info.branch.as_deref(), Some("main"));
    assert_eq!(info.head_commit.as_deref(), Some(head.as_str()));
    let mut remotes = info.remotes;
    remotes.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(
        remotes,
        vec![
            Remote {
                name: "mirror".into(),
                url: "git@example.test:team/project.git".into()
            },
            Remote {
                name: "origin".into(),
                url: "https://example.test/team/project.git".into()
            },
        ]
    );

    sandbox.git(&["checkout", "-q", "--detach"]);
    let info = sandbox.repository().info().expect("info");
    assert_eq!(info.branch, None);
    assert_eq!(info.head_commit.as_deref(), Some(head.as_str()));
}

#[test]
fn a_subdirectory_finds_its_work_tree() {
    let Some(sandbox) = Sandbox::require_committed(&[("deep/er/a.txt", "a\n")]) else {
        return;
    };
    let Discovered::Repository(repository) =
        Repository::discover(&sandbox.root.join("deep/er")).expect("discover")
    else {
        panic!("a subdirectory of a work tree is in it");
    };
    assert_eq!(
        repository.top_level().canonicalize().expect("canonical"),
        sandbox.root.canonicalize().expect("canonical")
    );
}

#[test]
fn a_directory_outside_any_repository_is_not_a_repository() {
    let Some(_) = wujie_require::require("git") else {
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let found = Repository::discover(dir.path()).expect("discover");
    assert!(matches!(found, Discovered::NotARepository), "{found:?}");
}

#[test]
fn no_git_is_a_typed_error_naming_what_was_looked_for() {
    let dir = tempfile::tempdir().expect("temp dir");
    let error = Repository::discover_with(PathBuf::from("wujie-no-such-git"), dir.path())
        .expect_err("there is no such program");
    assert!(matches!(error, GitError::NotInstalled { .. }), "{error:?}");
    assert_eq!(
        error.to_string(),
        "git is not installed (no `wujie-no-such-git` on PATH)"
    );
}

#[test]
fn credentials_are_taken_out_of_remote_urls() {
    let cases = [
        (
            "https://user:token@host.test/a/b.git",
            "https://host.test/a/b.git",
        ),
        ("https://token@host.test/a", "https://host.test/a"),
        ("http://host.test:8080/a", "http://host.test:8080/a"),
        ("ssh://git@host.test/a.git", "ssh://git@host.test/a.git"),
        ("ssh://git:pw@host.test/a.git", "ssh://git@host.test/a.git"),
        ("git@host.test:a/b.git", "git@host.test:a/b.git"),
        ("/srv/repos/a.git", "/srv/repos/a.git"),
        ("https://host.test/a@b", "https://host.test/a@b"),
    ];
    for (url, shown) in cases {
        assert_eq!(strip_credentials(url), shown, "{url}");
    }
}
