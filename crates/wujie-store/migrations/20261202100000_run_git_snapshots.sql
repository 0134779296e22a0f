-- What a run changed in the code: one row per working-tree snapshot `wujie run` took (at the
-- start, after every turn, at the end), each the run's whole picture as of that snapshot (a
-- GitChanges as JSON). The latest snapshot is the run's changes. Keyed like every event, so a
-- snapshot delivered again is stored once.
CREATE TABLE run_git_snapshots (
    seq        INTEGER PRIMARY KEY,
    run_id     TEXT NOT NULL REFERENCES runs(id),
    source     TEXT NOT NULL,
    source_key TEXT NOT NULL,
    snapshot   INTEGER NOT NULL,
    tree       TEXT NOT NULL,
    changes    TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (run_id, source, source_key)
);
CREATE INDEX run_git_snapshots_by_run ON run_git_snapshots (run_id, snapshot);
