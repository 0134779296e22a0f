//! How `wujie` prints, the issue lifecycle, and commondev branches through the CLI.

mod branch;
mod branch_issue_trail;
mod branch_messages;
mod branch_model_settings;
mod branch_owner;
mod cli_output;
mod help;
mod issue_lifecycle;
mod notify;
mod readme;
mod shell_docs;
mod user_output;
