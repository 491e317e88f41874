-- 0021: canary replay tasks (issue 19): the first rows of a task go alone,
-- and the task continues only if enough of them succeed.

-- canary: the task's canary, JSON {size, min_success_ratio, observe_minutes}
-- (NULL: none); canary_result: how it ended, JSON {succeeded, failed_again,
-- ratio, passed, reasons} (NULL while undecided).
ALTER TABLE replay_tasks ADD COLUMN canary TEXT;
ALTER TABLE replay_tasks ADD COLUMN canary_result TEXT;
-- body_edited: 1 when body_hash is the hash of an edited body (POST
-- /admin/dlq/{id}/replay) rather than of raw_message; the next plain replay
-- sets body_hash back to raw_message's hash and clears it.
ALTER TABLE dlq_messages ADD COLUMN body_edited INTEGER;
-- The cron advances tasks in state running or canary.
DROP INDEX IF EXISTS idx_replay_tasks_running;
CREATE INDEX IF NOT EXISTS idx_replay_tasks_active ON replay_tasks(id) WHERE state IN ('running', 'canary');
