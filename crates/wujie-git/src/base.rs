//! What an issue branch's base brought in: a worktree run whose branch merges its base (`git
//! merge main`) gets the base's new work in its files, which is not the agent's. The run's
//! snapshots are then compared with where they began *caught up* with the base: the same
//! three-way merge git would make of the base's new commits into the earlier snapshot.

use crate::Repository;
use crate::command::{GitError, one_line};
use crate::snapshot::TreeId;

impl Repository {
    /// The best common ancestor of commit `head` (HEAD's, as the caller read it: a HEAD with no
    /// commit yet has none) and `base` (a branch name or a commit), `None` when they share no
    /// history or `base` names nothing any more.
    pub fn merge_base_with(&self, head: &str, base: &str) -> Result<Option<String>, GitError> {
        let Some(base) = self.git.run_optional(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{base}^{{commit}}"),
        ])?
        else {
            return Ok(None);
        };
        let base = one_line(&base);
        Ok(self
            .git
            .run_optional(&["merge-base", head, &base])?
            .map(|out| one_line(&out)))
    }

    /// Snapshot `tree`, taken when the merge-base with the base was `then`, with what the base
    /// gained from `then` to `now` merged in. `None` when the two conflict: there is then no
    /// one tree the snapshot "would have been".
    pub fn caught_up(
        &self,
        tree: &TreeId,
        then: &str,
        now: &str,
    ) -> Result<Option<TreeId>, GitError> {
        let base = format!("--merge-base={then}^{{tree}}");
        let theirs = format!("{now}^{{tree}}");
        // Exit 1 with the merged tree (conflict markers and all) on stdout is a conflict.
        let out = self.git.run_optional(&[
            "merge-tree",
            "--write-tree",
            "--no-messages",
            &base,
            tree.as_str(),
            &theirs,
        ])?;
        Ok(out.map(|out| TreeId::new(one_line(&out))))
    }
}
