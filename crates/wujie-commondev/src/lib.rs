//! Data-chosen agent backends behind JSON-RPC sidecars, one session per branch, MCP tools.
//!
//! - [`registry`]: the driver lookup chain (`runtime/<cli>/driver.json` + sidecar script).
//! - [`sidecar`]: a running sidecar (process group, JSON-RPC, timeouts, tree kill).
//! - [`tree`]: a sidecar's process tree (local and remote) and how it is stopped.
//! - [`runtime`]: local or ssh command lines for a sidecar.
//! - [`llm`]: Wujie's model settings and the `llmConfig` writers.
//! - [`store`]: persisted branch records.
//! - [`sessions`]: [`BranchSessions`], the service both the MCP server and the CLI use.
//! - [`mcp`]: the MCP server exposing `commondev_branch_*` tools.

pub mod error;
pub mod llm;
pub mod mcp;
pub mod paths;
pub mod registry;
pub mod runtime;
pub mod sessions;
pub mod sidecar;
pub mod store;
pub mod tree;
pub mod worktree;

pub use error::CommondevError;
pub use sessions::{
    BranchInfo, BranchObserver, BranchSessions, CloseOutcome, IssueCheck, Lifetime, OpenOutcome,
    OpenRequest, PromptOutcome, SessionConfig, StateOutcome,
};

// The suite under tests/ runs in this crate's one test binary rather than in a binary of its
// own (each test binary costs a link on every build); it names the crate as its users do.
#[cfg(test)]
extern crate self as wujie_commondev;
#[cfg(test)]
#[path = "../tests/commondev/main.rs"]
mod suite;
