//! A scripted mock model server for offline tests of real coding-agent CLIs.
//!
//! It speaks OpenAI Chat Completions (`POST /v1/chat/completions`), OpenAI Responses
//! (`POST /v1/responses`), Anthropic Messages (`POST /v1/messages`) and Gemini
//! (`POST /v1beta/models/{model}:streamGenerateContent`), streaming (SSE) and not, and lists
//! models at `GET /v1/models`. What it answers comes from a [`Script`]; every request is
//! recorded ([`MockLlm::requests`], or `GET /_mock/requests` over HTTP).
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use wujie_mockllm::{MockLlm, Script};
//! let mock = MockLlm::start(Script::default()).await?; // answers "pong" to everything
//! println!("{}", mock.url());
//! let seen = mock.model_requests();
//! mock.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! [`agents`] prepares real agent CLIs (pi, Codex, Grok, Claude Code, opencode, Hermes) to run
//! against a mock, each in its own temporary home.

pub mod agents;
pub mod program;
pub mod script;
mod server;
mod wire;

pub use script::{LatestInput, Reply, Script, ToolCallSpec, ToolNames, Turn, Usage, When};
pub use server::{MockError, MockLlm, RecordedRequest};
pub use wire::Api;

// The HTTP and real-CLI tests live in the library's test binary: one link per change.
#[cfg(test)]
#[path = "../tests/mockllm/main.rs"]
mod suite;
