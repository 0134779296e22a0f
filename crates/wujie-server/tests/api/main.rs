//! The API end to end: a real server on 127.0.0.1:0 over a real SQLite file in a temp dir,
//! driven through the real typed client.

mod auth;
mod busy_database;
mod cancel;
mod connection_limits;
mod discussions;
mod event_size;
mod fanout;
mod harness;
mod ingest;
mod issues;
mod lifecycle;
mod lifetime;
mod limits;
mod live_feed;
mod other_writers;
mod runs;
mod start_keys;
mod tokens;
mod transcript_pages;
mod web_ui;
