-- A run whose adapter never got going: it ended with 127 (its agent could not be run, as a shell
-- reports a command not found) or 2 (its arguments were refused, a usage error) having
-- recorded nothing. Such a run is kept, marked, but left out of the issue's runs: nothing
-- happened on the issue.
ALTER TABLE runs ADD COLUMN did_not_start INTEGER NOT NULL DEFAULT 0;
