-- The web UI's browser sessions, kept here rather than in a server's memory so that a session
-- outlives a restart of the server and holds on every replica. Only the SHA-256 of the id the
-- browser's cookie holds is stored. A session speaks for the user token that logged it in and
-- ends with it (revoked or expired), or at `expires_at`.
CREATE TABLE browser_sessions (
    hash       TEXT PRIMARY KEY,
    token_id   TEXT NOT NULL REFERENCES tokens(id),
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);
CREATE INDEX browser_sessions_by_expiry ON browser_sessions (expires_at);
