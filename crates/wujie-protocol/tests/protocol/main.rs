//! The protocol types: manifests, events, messages, control frames, limits, server-sent events, and parsing
//! under any chunking.

mod chunking;
mod control;
mod event_size;
mod events;
mod limits;
mod manifest;
mod messages;
mod sse;
