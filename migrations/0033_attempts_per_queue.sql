-- 0033: an attempt record is keyed by its queue and message id, not by the
-- message id alone. POST /admin/attempts (REPORT_TOKEN) could otherwise
-- overwrite the record of another queue's message of the same id; now a
-- report writes only its own queue's records, and the capture of a
-- message reads (and removes) the record of the queue it failed on.
--
-- The table is rebuilt with PRIMARY KEY (queue, message_id); its rows are
-- copied as they are (one per message id before, so no two collide). The
-- two triggers that remove a record when its row is stored name the queue
-- too; they go first (a rename checks the triggers that name the table).
DROP TRIGGER IF EXISTS dlq_messages_inserted_always;
DROP TRIGGER IF EXISTS dlq_messages_failed_again;

CREATE TABLE message_attempts_0033 (
    message_id TEXT NOT NULL,
    queue TEXT NOT NULL,
    attempt INTEGER NOT NULL,
    error_class TEXT NOT NULL,
    error TEXT NOT NULL,
    recorded_at INTEGER NOT NULL,
    history TEXT,
    signature TEXT,
    signature_text TEXT,
    version TEXT,
    history_dropped INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (queue, message_id)
);
INSERT INTO message_attempts_0033(message_id, queue, attempt, error_class, error, recorded_at, history, signature,
        signature_text, version, history_dropped)
    SELECT message_id, queue, attempt, error_class, error, recorded_at, history, signature,
        signature_text, version, history_dropped FROM message_attempts;
DROP TABLE message_attempts;
ALTER TABLE message_attempts_0033 RENAME TO message_attempts;
CREATE INDEX IF NOT EXISTS idx_attempts_recorded_at ON message_attempts(recorded_at);

CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted_always AFTER INSERT ON dlq_messages
BEGIN
    INSERT INTO counters(name, value) SELECT 'dlq_poison_total', 1 WHERE NEW.failure_class = 'poison'
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    DELETE FROM message_attempts WHERE queue = NEW.source_queue AND message_id = NEW.last_message_id;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_failed_again AFTER UPDATE OF failed_at, last_message_id ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.failed_at IS NOT OLD.failed_at OR NEW.last_message_id IS NOT OLD.last_message_id)
BEGIN
    UPDATE dlq_activity SET n = n - 1
        WHERE NEW.failed_at IS NOT OLD.failed_at AND kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000
            AND source_queue = OLD.source_queue;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        VALUES ('failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.source_queue, NEW.failed_at IS NOT OLD.failed_at, NEW.last_message_id IS NOT OLD.last_message_id)
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + excluded.n, events = events + excluded.events;
    DELETE FROM message_attempts WHERE NEW.last_message_id IS NOT OLD.last_message_id AND queue = NEW.source_queue
        AND message_id = NEW.last_message_id;
END;
