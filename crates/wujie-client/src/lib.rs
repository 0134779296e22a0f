//! Typed HTTP client of the Wujie API.
