//! The commits made since a run began.

use crate::Repository;
use crate::command::{GitError, nul_fields, unexpected};
use wujie_protocol::git::Commit;

impl Repository {
    /// The commits reachable from HEAD and not from `base`, newest first; every commit of
    /// HEAD when there was no base (the run began before the first commit), none when HEAD
    /// has no commit. Commits reachable from `brought_in` (a base branch's, merged into HEAD
    /// during the run) are left out too: they were not made here.
    pub fn commits_since(
        &self,
        base: Option<&str>,
        brought_in: Option<&str>,
    ) -> Result<Vec<Commit>, GitError> {
        if self.head_commit()?.is_none() {
            return Ok(Vec::new());
        }
        let range = match base {
            Some(base) => format!("{base}..HEAD"),
            None => "HEAD".to_string(),
        };
        let not = brought_in.map(|commit| format!("^{commit}"));
        let mut args = vec![
            "log",
            "-z",
            "--no-color",
            "--format=tformat:%H%x00%s%x00%an <%ae>",
            range.as_str(),
        ];
        args.extend(not.as_deref());
        args.push("--");
        let fields = nul_fields(&self.git.run(&args, &[])?);
        if !fields.len().is_multiple_of(3) {
            return Err(unexpected(&args, "a commit with fields missing"));
        }
        Ok(fields
            .chunks_exact(3)
            .map(|c| Commit {
                sha: c[0].clone(),
                subject: c[1].clone(),
                author: c[2].clone(),
            })
            .collect())
    }
}
