//! commondev end to end: drivers found along the lookup chain, sidecars started locally and over ssh, branch sessions, process trees, the MCP server.

mod backends;
mod common;
mod driver_notes;
mod mcp;
mod pi;
mod process_trees;
mod session_guard;
mod ssh;
mod ssh_errors;
mod ssh_trees;
mod zcode;
