//! Data-chosen agent backends behind JSON-RPC sidecars, one session per branch, MCP tools.
