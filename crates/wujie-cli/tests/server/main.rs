//! `wujie server`, `wujie ui`, tokens, replicas on PostgreSQL and the web UI in Chromium.

mod auth;
mod database;
mod lifetime;
mod replicas;
mod team_tokens;
mod tokens;
mod ui_command;
mod urls;
mod web_ui_board;
mod web_ui_browser;
mod web_ui_diff;
mod web_ui_notices;
mod web_ui_sessions;
mod web_ui_tabs;
mod web_ui_timeline;
