//! The built-in providers and the sample plugins with the real agent CLIs against the mock model server.

mod acp;
mod acp_agent_discuss;
mod acp_agents;
mod acp_resume;
mod acp_terminal;
mod claude;
mod codex;
mod codex_tui;
mod gemini;
mod grok_tui;
mod hermes_tui;
mod menu_place;
mod opencode;
mod pi;
