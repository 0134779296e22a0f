-- The reporter's durable outbox: every event read from an adapter is committed here before it
-- is sent, and deleted once the server has acknowledged it.

CREATE TABLE targets (
    id             TEXT PRIMARY KEY,          -- run id or discussion id
    kind           TEXT NOT NULL CHECK (kind IN ('run', 'discussion')),
    server_url     TEXT NOT NULL,             -- where its events go
    label          TEXT NOT NULL,             -- e.g. the issue key, for humans
    reporter_pid   INTEGER,                   -- the wujie process writing it, while alive
    heartbeat_at   INTEGER NOT NULL,          -- unix ms, refreshed by a live reporter
    finish_json    TEXT,                      -- FinishRun to send after the events, once known
    finish_sent    INTEGER NOT NULL DEFAULT 0,
    created_at     INTEGER NOT NULL
);

CREATE TABLE items (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    target_id  TEXT NOT NULL REFERENCES targets(id) ON DELETE CASCADE,
    item_json  TEXT NOT NULL,                 -- an IngestItem
    failed     TEXT,                          -- the server's reason when refused for good
    read_at    INTEGER NOT NULL               -- unix ms when the line was read
);

CREATE INDEX items_by_target ON items(target_id, failed, seq);
