//! `wujie run` and delivery: the seed's acceptance points, exit codes, the outbox, liveness, limits, process trees, providers and their commands, jobs and workers.

mod cancel;
mod closed_stderr;
mod cost;
mod delivery;
mod descendants;
mod disk;
mod exit_codes;
mod failed_start;
mod git_changes;
mod jobs;
mod limits;
mod liveness;
mod protocol_gaps;
mod provider_check;
mod provider_commands;
mod providers;
mod reused_keys;
mod run;
mod sample_adapters;
mod start_retry;
mod transcript_pages;
mod worktrees;
