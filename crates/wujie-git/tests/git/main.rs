//! wujie-git against real repositories in temporary directories, driven with the `git` on
//! PATH.

mod base;
mod changes;
mod info;
mod limits;
mod sandbox;
mod untouched;
mod worktrees;
