-- 0029: a capture batch keeps dlq_tally and dlq_activity itself (issue 33).
--
-- Until now every row a capture inserted fired dlq_messages_inserted, whose
-- two upserts (dlq_tally, dlq_activity) wrote one row each per message: 200
-- of the 601 rows a batch of 100 wrote. The capture's batch (dlq/store.go)
-- now marks the highest id before its INSERT (capture_mark), inserts its
-- rows with tally_seq = 1, and adds them to dlq_tally and dlq_activity by
-- group afterwards: one row written per group instead of one per message.
-- Rows inserted by anything else (tally_seq 0: seeds, SQL typed by hand)
-- are still counted by the trigger. The poison counter and the removal of
-- the attempt record stay per row, in a trigger of their own
-- (dlq_messages_inserted_always), so that a change to the counted part
-- leaves them alone.

-- The highest dlq_messages id before the running capture's INSERT: the rows
-- above it are the ones it inserted (ids are AUTOINCREMENT, and a D1 batch
-- runs alone). One row, rewritten once per capture batch.
CREATE TABLE IF NOT EXISTS capture_mark (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    last_id INTEGER NOT NULL
);

DROP TRIGGER IF EXISTS dlq_messages_inserted;

CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted AFTER INSERT ON dlq_messages
WHEN NEW.tally_seq = 0
BEGIN
    INSERT INTO dlq_tally(status, source_queue, brewer_key, n)
        VALUES (NEW.status, NEW.source_queue, CASE WHEN NEW.status = 'pending' AND NEW.brewer IS NOT NULL THEN '=' || NEW.brewer ELSE '' END, 1)
        ON CONFLICT(status, source_queue, brewer_key) DO UPDATE SET n = n + 1;
    INSERT INTO dlq_activity(kind, hour, n, events) VALUES ('failed', CAST(NEW.failed_at AS INTEGER) / 3600000, 1, 1)
        ON CONFLICT(kind, hour) DO UPDATE SET n = n + 1, events = events + 1;
    INSERT INTO dlq_activity(kind, hour, n, events)
        SELECT NEW.status, CAST(CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at ELSE NEW.acknowledged_at END AS INTEGER) / 3600000, 1, 0
        WHERE CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted_always AFTER INSERT ON dlq_messages
BEGIN
    INSERT INTO counters(name, value) SELECT 'dlq_poison_total', 1 WHERE NEW.failure_class = 'poison'
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    DELETE FROM message_attempts WHERE message_id = NEW.last_message_id;
END;
