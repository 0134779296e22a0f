//! Where a run happens: the repository's name and remotes, the branch, the HEAD commit.

use crate::Repository;
use crate::command::{nul_fields, one_line, unexpected};
use wujie_protocol::git::Remote;

/// The repository a directory is in, as a teammate would name it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepoInfo {
    /// The name of the work tree's top-level directory.
    pub repo: String,
    pub remotes: Vec<Remote>,
    /// The checked-out branch (`main`, `feat/a`), `None` when HEAD is detached.
    pub branch: Option<String>,
    /// The commit HEAD points at, `None` in a repository with no commit yet.
    pub head_commit: Option<String>,
}

impl Repository {
    pub fn info(&self) -> Result<RepoInfo, crate::GitError> {
        let repo = self
            .top_level()
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let branch = self
            .git
            .run_optional(&["symbolic-ref", "--quiet", "--short", "HEAD"])?
            .map(|out| one_line(&out));
        Ok(RepoInfo {
            repo,
            remotes: self.remotes()?,
            branch,
            head_commit: self.head_commit()?,
        })
    }

    /// The commit HEAD points at now, `None` before the first commit.
    pub fn head_commit(&self) -> Result<Option<String>, crate::GitError> {
        let out = self
            .git
            .run_optional(&["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])?;
        Ok(out.map(|out| one_line(&out)))
    }

    fn remotes(&self) -> Result<Vec<Remote>, crate::GitError> {
        let args = ["config", "-z", "--get-regexp", r"^remote\..*\.url$"];
        let Some(out) = self.git.run_optional(&args)? else {
            return Ok(Vec::new());
        };
        // Each entry is "remote.<name>.url\n<url>".
        nul_fields(&out)
            .iter()
            .map(|entry| {
                let (key, url) = entry
                    .split_once('\n')
                    .ok_or_else(|| unexpected(&args, "an entry without a value"))?;
                let name = key
                    .strip_prefix("remote.")
                    .and_then(|k| k.strip_suffix(".url"))
                    .ok_or_else(|| unexpected(&args, "a key that is not remote.<name>.url"))?;
                Ok(Remote {
                    name: name.to_string(),
                    url: strip_credentials(url),
                })
            })
            .collect()
    }
}

/// `url` without the user name and password it may carry (`https://user:token@host/x` →
/// `https://host/x`): remotes are shown to every reader of the issue. An `ssh://` URL keeps
/// its user name (`git@`), which names an account, not a secret; an scp-like `git@host:x`
/// has no place for a password and is kept as it is.
pub fn strip_credentials(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let Some((user_info, host)) = authority.rsplit_once('@') else {
        return url.to_string();
    };
    let kept_user = match scheme.to_ascii_lowercase().as_str() {
        "ssh" | "git+ssh" | "ssh+git" => user_info
            .split_once(':')
            .map_or(user_info, |(user, _)| user),
        _ => "",
    };
    if kept_user.is_empty() {
        format!("{scheme}://{host}{path}")
    } else {
        format!("{scheme}://{kept_user}@{host}{path}")
    }
}
