-- Initial schema. Times are UTC text of fixed width (YYYY-MM-DDTHH:MM:SS.ffffffZ), so text order
-- is time order. Idempotency lives in the UNIQUE keys below, not in application code.

CREATE TABLE workspaces (
    id             TEXT PRIMARY KEY,
    name           TEXT NOT NULL,
    key_prefix     TEXT NOT NULL UNIQUE,
    next_issue_seq INTEGER NOT NULL DEFAULT 1,
    created_at     TEXT NOT NULL
);

CREATE TABLE discussions (
    id           TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces(id),
    provider     TEXT NOT NULL,
    cwd          TEXT NOT NULL,
    status       TEXT NOT NULL CHECK (status IN ('open', 'promoted')),
    issue_id     TEXT REFERENCES issues(id),
    created_at   TEXT NOT NULL
);

CREATE TABLE issues (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
    seq           INTEGER NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'done')),
    discussion_id TEXT REFERENCES discussions(id),
    created_at    TEXT NOT NULL,
    UNIQUE (workspace_id, seq)
);

CREATE TABLE runs (
    id             TEXT PRIMARY KEY,
    issue_id       TEXT NOT NULL REFERENCES issues(id),
    provider       TEXT NOT NULL,
    cwd            TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'cancelled')),
    exit_code      INTEGER,
    error          TEXT,
    started_at     TEXT NOT NULL,
    ended_at       TEXT,
    last_heartbeat TEXT
);
CREATE INDEX runs_by_issue ON runs (issue_id);
CREATE INDEX runs_running ON runs (status) WHERE status = 'running';

CREATE TABLE comments (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    issue_id    TEXT NOT NULL REFERENCES issues(id),
    author_kind TEXT NOT NULL CHECK (author_kind IN ('user', 'agent')),
    body        TEXT NOT NULL,
    run_id      TEXT REFERENCES runs(id),
    created_at  TEXT NOT NULL
);
CREATE INDEX comments_by_issue ON comments (issue_id, seq);

-- seq (the rowid) is the arrival order: rows are never deleted, so it only grows. Plain
-- INTEGER PRIMARY KEY rather than AUTOINCREMENT saves a sqlite_sequence update per row.
CREATE TABLE run_messages (
    seq        INTEGER PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs(id),
    kind       TEXT NOT NULL,
    content    TEXT,
    tool       TEXT,
    input      TEXT,
    output     TEXT,
    source     TEXT NOT NULL,
    source_key TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (run_id, source, source_key)
);

CREATE TABLE run_usage (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id             TEXT NOT NULL REFERENCES runs(id),
    source             TEXT NOT NULL,
    source_key         TEXT NOT NULL,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    created_at         TEXT NOT NULL,
    UNIQUE (run_id, source, source_key)
);

-- Only the SHA-256 of a token is kept; the plaintext is shown once, when minted.
CREATE TABLE tokens (
    id         TEXT PRIMARY KEY,
    hash       TEXT NOT NULL UNIQUE,
    name       TEXT NOT NULL,
    kind       TEXT NOT NULL CHECK (kind IN ('user', 'run', 'discussion')),
    subject_id TEXT,
    created_at TEXT NOT NULL,
    revoked    INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE discussion_entries (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    discussion_id TEXT NOT NULL REFERENCES discussions(id),
    kind          TEXT NOT NULL,
    content       TEXT NOT NULL,
    source        TEXT NOT NULL,
    source_key    TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    UNIQUE (discussion_id, source, source_key)
);

CREATE TABLE discussion_sessions (
    seq               INTEGER PRIMARY KEY AUTOINCREMENT,
    discussion_id     TEXT NOT NULL REFERENCES discussions(id),
    native_session_id TEXT NOT NULL,
    source            TEXT NOT NULL,
    source_key        TEXT NOT NULL,
    created_at        TEXT NOT NULL,
    UNIQUE (discussion_id, source, source_key)
);
CREATE INDEX discussion_sessions_by_native ON discussion_sessions (native_session_id);
CREATE INDEX discussion_sessions_by_discussion ON discussion_sessions (discussion_id, seq);

CREATE TABLE discussion_usage (
    seq                INTEGER PRIMARY KEY AUTOINCREMENT,
    discussion_id      TEXT NOT NULL REFERENCES discussions(id),
    source             TEXT NOT NULL,
    source_key         TEXT NOT NULL,
    provider           TEXT NOT NULL,
    model              TEXT NOT NULL,
    input_tokens       INTEGER NOT NULL,
    output_tokens      INTEGER NOT NULL,
    cache_read_tokens  INTEGER NOT NULL,
    cache_write_tokens INTEGER NOT NULL,
    created_at         TEXT NOT NULL,
    UNIQUE (discussion_id, source, source_key)
);
