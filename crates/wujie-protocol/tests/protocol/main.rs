//! The protocol types: manifests, events, messages, control frames, limits, and parsing under any chunking.

mod chunking;
mod control;
mod event_size;
mod events;
mod limits;
mod manifest;
mod messages;
