-- 0008: fewer index entries per dlq_messages row. Every insert and delete
-- maintains each index the row is in, so capture and retention paid for
-- indexes no query needed:
--   idx_dlq_status and idx_dlq_status_failed_id are prefixes of (or equal to,
--   the rowid being implicit) idx_dlq_status_failed (status, failed_at);
--   idx_dlq_acknowledged_at and idx_dlq_replayed_at: every query on those
--   columns also filters on status and uses the (status, ...) indexes of 0005.
-- The three indexes only the stats and alerts read (pending rows by brewer,
-- failure reason, replay count) become partial: acknowledged and replayed
-- rows, which retention deletes, are not in them.
DROP INDEX IF EXISTS idx_dlq_status;
DROP INDEX IF EXISTS idx_dlq_status_failed_id;
DROP INDEX IF EXISTS idx_dlq_acknowledged_at;
DROP INDEX IF EXISTS idx_dlq_replayed_at;
DROP INDEX IF EXISTS idx_dlq_status_brewer;
DROP INDEX IF EXISTS idx_dlq_status_reason;
DROP INDEX IF EXISTS idx_dlq_status_replay_count;
CREATE INDEX IF NOT EXISTS idx_dlq_pending_brewer ON dlq_messages(status, brewer) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS idx_dlq_pending_reason ON dlq_messages(status, failure_reason) WHERE status = 'pending';
CREATE INDEX IF NOT EXISTS idx_dlq_pending_replay_count ON dlq_messages(status, replay_count) WHERE status = 'pending';
