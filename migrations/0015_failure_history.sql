-- 0015: why a message failed (issue 18). Every failed attempt is kept, the
-- failure's signature (its reason without numbers, ids, quoted values, URL
-- query values, plus its class) and the worker version it failed on are
-- stored with the row, and dlq_signatures keeps each signature's counts.
--
-- message_attempts: the record of a message's attempts grows a history (a
-- JSON array, one object per failed attempt: at, attempt, class, status,
-- error, duration_ms, version, message_id), the signature of its latest
-- attempt and that attempt's worker version. None of them is indexed: a
-- later attempt still rewrites the record alone (1 row written).
ALTER TABLE message_attempts ADD COLUMN history TEXT;
ALTER TABLE message_attempts ADD COLUMN signature TEXT;
ALTER TABLE message_attempts ADD COLUMN signature_text TEXT;
ALTER TABLE message_attempts ADD COLUMN version TEXT;

-- dlq_messages: the history follows the message into its row and across
-- replays (a repeat failure appends its attempts). At most 50 entries are
-- kept: the first 5 and the newest 45; history_dropped counts the others.
-- NULL in rows captured before this migration. Not indexed: a capture
-- writes no more index entries than before.
ALTER TABLE dlq_messages ADD COLUMN history TEXT;
ALTER TABLE dlq_messages ADD COLUMN history_dropped INTEGER NOT NULL DEFAULT 0;
ALTER TABLE dlq_messages ADD COLUMN signature TEXT;   -- dlq_signatures.signature of the latest failure
ALTER TABLE dlq_messages ADD COLUMN version TEXT;     -- worker version the latest failure happened on

-- dlq_signatures: one row per failure signature ever seen, with the rows of
-- each status kept as rows change (capture counts its new rows in its own
-- batch, one row written per signature and batch; acknowledge and replay in
-- theirs; the triggers below everything else), never counted per call.
CREATE TABLE IF NOT EXISTS dlq_signatures (
    signature TEXT PRIMARY KEY,             -- hex(SHA-256(class || "\n" || text)[:8])
    class TEXT NOT NULL,
    text TEXT NOT NULL,                     -- the normalised reason
    pending INTEGER NOT NULL DEFAULT 0,
    replaying INTEGER NOT NULL DEFAULT 0,
    replayed INTEGER NOT NULL DEFAULT 0,
    acknowledged INTEGER NOT NULL DEFAULT 0,
    first_seen INTEGER NOT NULL,
    last_seen INTEGER NOT NULL,
    versions TEXT NOT NULL DEFAULT '[]',    -- JSON array, newest first, at most 10
    sample_ids TEXT NOT NULL DEFAULT '[]',  -- JSON array of the first 5 row ids
    announced_at INTEGER                    -- when dlq_new_failure_signature was sent (NULL: not yet)
) WITHOUT ROWID;
-- GET /admin/dlq/groups pages by pending rows.
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_pending ON dlq_signatures(pending DESC, signature);
-- The alert's work: signatures not announced yet (a handful at any time).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_unannounced ON dlq_signatures(first_seen) WHERE announced_at IS NULL;

-- A row that changed status or signature outside the statements that keep
-- the counts themselves (tally_seq unchanged): a repeat failure of a
-- replayed message, a rescue, SQL typed by hand. One row written when the
-- signature stays.
CREATE TRIGGER IF NOT EXISTS dlq_messages_signature_moved AFTER UPDATE OF status, signature ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status OR NEW.signature IS NOT OLD.signature)
BEGIN
    UPDATE dlq_signatures SET
        pending = pending + (signature IS NEW.signature AND NEW.status = 'pending') - (signature IS OLD.signature AND OLD.status = 'pending'),
        replaying = replaying + (signature IS NEW.signature AND NEW.status = 'replaying') - (signature IS OLD.signature AND OLD.status = 'replaying'),
        replayed = replayed + (signature IS NEW.signature AND NEW.status = 'replayed') - (signature IS OLD.signature AND OLD.status = 'replayed'),
        acknowledged = acknowledged + (signature IS NEW.signature AND NEW.status = 'acknowledged') - (signature IS OLD.signature AND OLD.status = 'acknowledged'),
        last_seen = CASE WHEN signature IS NEW.signature THEN max(last_seen, NEW.failed_at) ELSE last_seen END,
        versions = CASE WHEN signature IS NOT NEW.signature OR NEW.version IS NULL
                OR EXISTS (SELECT 1 FROM json_each(versions) WHERE value = NEW.version) THEN versions
            ELSE (SELECT json_group_array(v) FROM (SELECT v FROM (SELECT NEW.version AS v, -1 AS k
                UNION ALL SELECT value, key FROM json_each(versions)) ORDER BY k LIMIT 10)) END,
        sample_ids = CASE WHEN signature IS NEW.signature AND json_array_length(sample_ids) < 5
                AND NOT EXISTS (SELECT 1 FROM json_each(sample_ids) WHERE value = NEW.id)
            THEN json_insert(sample_ids, '$[#]', NEW.id) ELSE sample_ids END
    WHERE signature IN (OLD.signature, NEW.signature);
END;

-- A deleted pending or replaying row (retention deletes only acknowledged
-- and replayed rows; the daily dlq_tally job counts those again).
CREATE TRIGGER IF NOT EXISTS dlq_messages_signature_deleted AFTER DELETE ON dlq_messages
WHEN OLD.status IN ('pending', 'replaying') AND OLD.signature IS NOT NULL
BEGIN
    UPDATE dlq_signatures SET pending = pending - (OLD.status = 'pending'), replaying = replaying - (OLD.status = 'replaying')
    WHERE signature = OLD.signature;
END;
