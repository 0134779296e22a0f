//! The store on SQLite and, with WUJIE_TEST_DATABASE=postgres, on PostgreSQL: issues, runs, ingest, browser sessions, jobs, the outbox, its owners and its spools' marks, database files.

mod browser_sessions;
mod common;
mod database_files;
mod git_snapshots;
mod jobs;
mod lifecycle_migration;
mod other_writers;
mod outbox;
mod outbox_owners;
mod outbox_space;
mod outbox_spools;
mod postgres;
mod reused_keys;
mod stopped_writer;
mod store;
mod texts;
mod writers;
mod written_limits;
