//! Persistence behind one API (sqlx, SQLite); idempotency as UNIQUE keys.
