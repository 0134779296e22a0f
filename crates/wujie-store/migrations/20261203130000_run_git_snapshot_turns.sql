-- The run's turns (counted by `final`, from 1) whose changes a snapshot holds, both counted:
-- `wujie issue diff --turn N` reads the snapshot that holds turn N. NULL for the start
-- snapshot and an end with no turn since. Snapshots stored before were numbered one per turn
-- with changes, which is the best reading of them left.
ALTER TABLE run_git_snapshots ADD COLUMN first_turn BIGINT;
ALTER TABLE run_git_snapshots ADD COLUMN last_turn BIGINT;
UPDATE run_git_snapshots SET first_turn = snapshot, last_turn = snapshot WHERE snapshot > 0;
