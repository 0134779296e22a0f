-- Jobs: runs asked for from the tracker, claimed by workers under a lease (see
-- wujie_protocol::jobs). A job is waiting while `queued`, or while `running` with a lease that
-- ran out (its worker died): a claim takes either, oldest first, and counts an attempt.
CREATE TABLE jobs (
    id               TEXT PRIMARY KEY,
    issue_id         TEXT NOT NULL REFERENCES issues(id),
    provider         TEXT NOT NULL,
    args             TEXT NOT NULL,
    prompt           TEXT,
    worker_label     TEXT,
    status           TEXT NOT NULL
        CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    attempts         INTEGER NOT NULL DEFAULT 0,
    worker           TEXT,
    lease_expires_at TEXT,
    run_id           TEXT,
    error            TEXT,
    requested_by     TEXT,
    rerun_of         TEXT,
    created_at       TEXT NOT NULL,
    updated_at       TEXT NOT NULL
);
CREATE INDEX jobs_waiting ON jobs (created_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_by_issue ON jobs (issue_id, created_at);

-- The job attempt a run was started for.
ALTER TABLE runs ADD COLUMN job_id TEXT;
ALTER TABLE runs ADD COLUMN job_attempt INTEGER;
