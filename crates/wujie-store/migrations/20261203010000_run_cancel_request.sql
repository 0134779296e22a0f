-- A run someone asked to cancel (from another terminal, the web UI): when, and the name of the
-- user token that asked, kept as it was then. The run's reporter polls for it and stops the
-- agent; the run's end is recorded by the reporter as for any other end.
ALTER TABLE runs ADD COLUMN cancel_requested_at TEXT;
ALTER TABLE runs ADD COLUMN cancel_requested_by TEXT;
