-- Issue lifecycle: a `closed` status next to `done`, and the activity log of every change to an
-- issue (who made it, and in which run) that the live feeds replay from.
--
-- SQLite cannot change a CHECK constraint in place, so `issues` is rebuilt. That needs foreign
-- keys off (runs, comments and discussions point at it): `Store::open` runs the migrations on a
-- connection with them off and checks every reference afterwards.
CREATE TABLE issues_rebuilt (
    id            TEXT PRIMARY KEY,
    workspace_id  TEXT NOT NULL REFERENCES workspaces(id),
    seq           INTEGER NOT NULL,
    title         TEXT NOT NULL,
    description   TEXT NOT NULL,
    status        TEXT NOT NULL CHECK (status IN ('open', 'in_progress', 'done', 'closed')),
    discussion_id TEXT REFERENCES discussions(id),
    created_at    TEXT NOT NULL,
    UNIQUE (workspace_id, seq)
);
INSERT INTO issues_rebuilt (id, workspace_id, seq, title, description, status, discussion_id, created_at)
    SELECT id, workspace_id, seq, title, description, status, discussion_id, created_at FROM issues;
DROP TABLE issues;
ALTER TABLE issues_rebuilt RENAME TO issues;

-- seq is the order of the changes; the feeds' event ids are derived from it, so a reconnecting
-- client replays from here what it missed.
CREATE TABLE IF NOT EXISTS issue_activity (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    issue_id      TEXT NOT NULL REFERENCES issues(id),
    author_kind   TEXT NOT NULL CHECK (author_kind IN ('user', 'agent')),
    author_run_id TEXT REFERENCES runs(id),
    change        TEXT NOT NULL,
    created_at    TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS issue_activity_by_issue ON issue_activity (issue_id, seq);
CREATE INDEX IF NOT EXISTS run_messages_by_run ON run_messages (run_id, seq);
