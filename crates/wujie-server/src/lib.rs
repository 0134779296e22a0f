//! The axum HTTP API under /api/v1, auth, OpenAPI document.
