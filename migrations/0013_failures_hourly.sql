-- 0013: failures per hour, for the console's chart (GET /admin/dlq/timeseries).
-- One row per (UTC hour, source queue) with the number of failures captured in
-- that hour: a new DLQ row (dlq_messages_captured) or a replayed message that
-- failed again (dlq_messages_failed_again), counted by failed_at, the same
-- events as dlq_captured_total. The chart reads at most 192 rows per source
-- queue instead of scanning a week of dlq_messages. Kept by triggers of their
-- own (the capture statement is unchanged): one upsert per captured row.
CREATE TABLE IF NOT EXISTS dlq_failures_hourly (
    hour INTEGER NOT NULL,                  -- start of the UTC hour, epoch ms
    source_queue TEXT NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, source_queue)
) WITHOUT ROWID;

CREATE TRIGGER IF NOT EXISTS dlq_messages_hourly_captured AFTER INSERT ON dlq_messages
BEGIN
    INSERT INTO dlq_failures_hourly(hour, source_queue, failures)
        VALUES (NEW.failed_at - NEW.failed_at % 3600000, NEW.source_queue, 1)
        ON CONFLICT(hour, source_queue) DO UPDATE SET failures = failures + 1;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_hourly_failed_again AFTER UPDATE OF last_message_id ON dlq_messages
WHEN OLD.last_message_id <> NEW.last_message_id
BEGIN
    INSERT INTO dlq_failures_hourly(hour, source_queue, failures)
        VALUES (NEW.failed_at - NEW.failed_at % 3600000, NEW.source_queue, 1)
        ON CONFLICT(hour, source_queue) DO UPDATE SET failures = failures + 1;
END;

-- Buckets older than 14 days are deleted when a new bucket starts (about
-- once an hour per queue, not on every capture): the table stays at most
-- 14 * 24 rows per source queue.
CREATE TRIGGER IF NOT EXISTS dlq_failures_hourly_pruned AFTER INSERT ON dlq_failures_hourly
BEGIN
    DELETE FROM dlq_failures_hourly WHERE hour < NEW.hour - 14 * 86400000;
END;

-- Rows captured before this migration: their last failure of the past 8 days
-- (failed_at, read through idx_dlq_failed_at), once. Earlier failures of a
-- row that failed again are not known any more.
INSERT INTO dlq_failures_hourly(hour, source_queue, failures)
    SELECT failed_at - failed_at % 3600000, source_queue, COUNT(*) FROM dlq_messages
    WHERE failed_at >= CAST(strftime('%s', 'now') AS INTEGER) * 1000 - 8 * 86400000
    GROUP BY 1, 2
    ON CONFLICT(hour, source_queue) DO UPDATE SET failures = failures + excluded.failures;
