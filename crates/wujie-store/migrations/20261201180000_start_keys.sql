-- The key a client chose for starting a run or a discussion (`Idempotency-Key`): a start it
-- sends again, because the answer to the first was lost, finds the run or discussion the
-- first made instead of making a second one. UNIQUE, so that no key starts two, whatever
-- the order of the transactions; NULL (no key given) is never equal to another NULL.
ALTER TABLE runs ADD COLUMN start_key TEXT;
CREATE UNIQUE INDEX runs_by_start_key ON runs (start_key);
ALTER TABLE discussions ADD COLUMN start_key TEXT;
CREATE UNIQUE INDEX discussions_by_start_key ON discussions (start_key);
