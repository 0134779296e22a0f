-- Whether a target's reporter is alive is now told by the lock it holds on the target's lock
-- file, which the kernel releases when the process dies; a heartbeat clock took a stopped
-- (but live) reporter for dead.

ALTER TABLE targets DROP COLUMN heartbeat_at;
