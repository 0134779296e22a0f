-- What a failed run's failure means for what the run still takes, kept apart from the error
-- text users read: 'stale' when the stale-run rule failed it (its reporter stopped sending
-- heartbeats; a paused reporter may still deliver what it read, revive it with a heartbeat or
-- record its real end), NULL for every real end. Before, the rule's text "reporter stopped"
-- said so, and a run `local-run sync` finished with the same text after a crash was taken for
-- one the rule failed; failures recorded with that text keep the meaning they had then.
ALTER TABLE runs ADD COLUMN failure_kind TEXT
    CHECK (failure_kind IS NULL OR (failure_kind = 'stale' AND status = 'failed'));
UPDATE runs SET failure_kind = 'stale' WHERE status = 'failed' AND error = 'reporter stopped';
