//! Provider registry, supervisor, event reader, reporter with durable outbox, discussions.
