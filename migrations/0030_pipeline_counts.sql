-- 0030: the hourly counts and the failure groups per source queue (issue 30),
-- so that timeseries, the stats' last_24h and groups take a pipeline filter.
--
-- dlq_activity gains source_queue in its key: one row per kind, hour and
-- queue. Its rows are counted again from dlq_messages for the hours it kept
-- (the failed, replayed and acknowledged rows of each queue; this reads the
-- rows of those hours once). Capture events (events, whose sum is
-- dlq_captured_total) were not kept per queue: each queue's hour gets its
-- rows counted there, and the rest of the hour's events (repeat failures;
-- the archive row, hour -1) stays under source_queue '', so the sum over
-- every queue is exactly what it was.
CREATE TABLE dlq_activity_0030 (
    kind TEXT NOT NULL,
    hour INTEGER NOT NULL,
    n INTEGER NOT NULL,
    events INTEGER NOT NULL DEFAULT 0,
    source_queue TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (kind, hour, source_queue)
) WITHOUT ROWID;

INSERT INTO dlq_activity_0030(kind, hour, source_queue, n, events)
    SELECT 'failed', CAST(failed_at AS INTEGER) / 3600000, source_queue, COUNT(*), COUNT(*) FROM dlq_messages
    WHERE status IN ('pending', 'replaying', 'replayed', 'acknowledged')
        AND failed_at >= (SELECT MIN(hour) FROM dlq_activity WHERE hour >= 0) * 3600000 GROUP BY 2, 3;
INSERT INTO dlq_activity_0030(kind, hour, source_queue, n, events)
    SELECT 'replayed', CAST(replayed_at AS INTEGER) / 3600000, source_queue, COUNT(*), 0 FROM dlq_messages
    WHERE status = 'replayed' AND replayed_at >= (SELECT MIN(hour) FROM dlq_activity WHERE hour >= 0) * 3600000 GROUP BY 2, 3;
INSERT INTO dlq_activity_0030(kind, hour, source_queue, n, events)
    SELECT 'acknowledged', CAST(acknowledged_at AS INTEGER) / 3600000, source_queue, COUNT(*), 0 FROM dlq_messages
    WHERE status = 'acknowledged' AND acknowledged_at >= (SELECT MIN(hour) FROM dlq_activity WHERE hour >= 0) * 3600000 GROUP BY 2, 3;
-- The events not attributed above, per hour (the archive row included).
INSERT INTO dlq_activity_0030(kind, hour, source_queue, n, events)
    SELECT 'failed', o.hour, '', 0, o.events - COALESCE((SELECT SUM(c.events) FROM dlq_activity_0030 c
            WHERE c.kind = 'failed' AND c.hour = o.hour), 0)
    FROM dlq_activity o WHERE o.kind = 'failed'
        AND o.events <> COALESCE((SELECT SUM(c.events) FROM dlq_activity_0030 c WHERE c.kind = 'failed' AND c.hour = o.hour), 0)
    ON CONFLICT(kind, hour, source_queue) DO UPDATE SET events = events + excluded.events;

-- (The triggers that name dlq_activity go first: a rename checks them.)
DROP TRIGGER IF EXISTS dlq_messages_inserted;
DROP TRIGGER IF EXISTS dlq_messages_deleted;
DROP TRIGGER IF EXISTS dlq_messages_failed_again;
DROP TRIGGER IF EXISTS dlq_messages_acted;
DROP TABLE dlq_activity;
ALTER TABLE dlq_activity_0030 RENAME TO dlq_activity;

-- The triggers that count rows in dlq_activity, by source queue. (Every CASE
-- has whitespace before it and every END after it: wrangler's splitter counts
-- them to find where a trigger ends, internal/sqlitetest/split_test.go.)
CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted AFTER INSERT ON dlq_messages
WHEN NEW.tally_seq = 0
BEGIN
    INSERT INTO dlq_tally(status, source_queue, brewer_key, n)
        VALUES (NEW.status, NEW.source_queue, CASE WHEN NEW.status = 'pending' AND NEW.brewer IS NOT NULL THEN '=' || NEW.brewer ELSE '' END , 1)
        ON CONFLICT(status, source_queue, brewer_key) DO UPDATE SET n = n + 1;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events) VALUES ('failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.source_queue, 1, 1)
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1, events = events + 1;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT NEW.status, CAST( CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at ELSE NEW.acknowledged_at END AS INTEGER) / 3600000, NEW.source_queue, 1, 0
        WHERE CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_deleted AFTER DELETE ON dlq_messages
WHEN OLD.status IN ('pending', 'replaying')
BEGIN
    UPDATE dlq_tally SET n = n - 1 WHERE status = OLD.status AND source_queue = OLD.source_queue
        AND brewer_key = CASE WHEN OLD.status = 'pending' AND OLD.brewer IS NOT NULL THEN '=' || OLD.brewer ELSE '' END;
    UPDATE dlq_activity SET n = n - 1 WHERE kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000
        AND source_queue = OLD.source_queue;
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
    DELETE FROM message_attempts WHERE NEW.last_message_id IS NOT OLD.last_message_id AND message_id = NEW.last_message_id;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_acted AFTER UPDATE OF status, replayed_at, acknowledged_at ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status
    OR CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END
        IS NOT CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at WHEN 'acknowledged' THEN OLD.acknowledged_at END )
BEGIN
    UPDATE dlq_activity SET n = n - 1 WHERE kind = OLD.status AND OLD.status IN ('replayed', 'acknowledged')
        AND hour = CAST( CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000
        AND source_queue = OLD.source_queue;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT NEW.status, CAST( CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at ELSE NEW.acknowledged_at END AS INTEGER) / 3600000, NEW.source_queue, 1, 0
        WHERE CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
END;

-- A row moved to another source queue by hand (the statements of redrive
-- never change it): its hours move with it, unless the triggers above
-- moved them already (a new failure time, a new status or action time).
CREATE TRIGGER IF NOT EXISTS dlq_messages_requeued AFTER UPDATE OF source_queue ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND NEW.source_queue IS NOT OLD.source_queue
BEGIN
    UPDATE dlq_activity SET n = n - 1 WHERE NEW.failed_at IS OLD.failed_at
        AND kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000 AND source_queue = OLD.source_queue;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT 'failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.source_queue, 1, 0 WHERE NEW.failed_at IS OLD.failed_at
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
    UPDATE dlq_activity SET n = n - 1 WHERE NEW.status IS OLD.status AND OLD.status IN ('replayed', 'acknowledged')
        AND CASE OLD.status WHEN 'replayed' THEN NEW.replayed_at IS OLD.replayed_at ELSE NEW.acknowledged_at IS OLD.acknowledged_at END
        AND kind = OLD.status AND source_queue = OLD.source_queue
        AND hour = CAST( CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000;
    INSERT INTO dlq_activity(kind, hour, source_queue, n, events)
        SELECT OLD.status, CAST( CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000, NEW.source_queue, 1, 0
        WHERE NEW.status IS OLD.status AND OLD.status IN ('replayed', 'acknowledged')
            AND CASE OLD.status WHEN 'replayed' THEN NEW.replayed_at IS OLD.replayed_at ELSE NEW.acknowledged_at IS OLD.acknowledged_at END
            AND CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour, source_queue) DO UPDATE SET n = n + 1;
END;

-- A failure group is one cause in one pipeline: signatures of every queue
-- but the beer pipeline's also hash the queue (dlq/signature.go), and each
-- group names its queue. A group seen before this migration gets the queue
-- of its first sample row still kept (else the beer queue's).
ALTER TABLE dlq_signatures ADD COLUMN source_queue TEXT NOT NULL DEFAULT '';
UPDATE dlq_signatures SET source_queue = COALESCE((SELECT d.source_queue FROM dlq_messages d
    WHERE d.id IN (SELECT value FROM json_each(dlq_signatures.sample_ids)) ORDER BY d.id LIMIT 1), 'beer-enrichment');
-- GET /admin/dlq/groups?pipeline= pages one queue's groups by pending rows
-- (one more index entry written when a group's pending count changes) or
-- newest first (one entry written per new group).
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_queue_pending ON dlq_signatures(source_queue, pending DESC, signature);
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_queue_first_seen ON dlq_signatures(source_queue, first_seen DESC, signature);
