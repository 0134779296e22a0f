-- What `wujie` takes out of an adapter's stdout goes to a spool file first
-- (state/spool/<id>.ndjson). Its row says where its lines go and how far into the file every
-- line is committed, written in the same transaction as those lines: what a killed `wujie` had
-- taken out of the pipe but not committed is read again from the file, from that offset.

CREATE TABLE spools (
    id          TEXT PRIMARY KEY,                        -- the spool file's name
    target_id   TEXT NOT NULL REFERENCES targets(id),    -- where its lines go (a promotion moves them)
    committed   INTEGER NOT NULL DEFAULT 0,              -- bytes of the file whose lines are committed
    lines       INTEGER NOT NULL DEFAULT 0,              -- lines in those bytes; numbering goes on from there
    created_at  INTEGER NOT NULL
);

CREATE INDEX spools_by_target ON spools(target_id);
