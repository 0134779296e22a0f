//! `wujie discuss` and discussions: entry filtering, native handoff, resume, promotion.

mod discuss;
mod discuss_session;
mod worktrees;
