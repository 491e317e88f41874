-- 0012: D1 bills rows read and rows written (every index entry a write
-- touches is a row written), so what redrive reads no longer grows with the
-- backlog, and what it writes per message shrinks (docs/costs.md "What it costs").
--
-- Counts are kept instead of counted:
--   dlq_tally     rows per status and source queue (pending rows also per
--                 brewer): by_status, by_source_queue, top_failing_brewers,
--                 the list's total_count, the metrics gauges;
--   dlq_activity  rows per hour of their failure / replay / acknowledgement:
--                 last_24h; its `events` of kind failed are dlq_captured_total.
-- Triggers keep both right for every change of a row (capture, rescue, a
-- repeat failure, SQL typed by hand), one row written per change. The
-- statements that move many rows at once (acknowledge, replay claim and
-- settle) keep them themselves, one row written per group instead of per row,
-- in the same D1 batch; they mark the rows they move by incrementing
-- tally_seq, and the triggers leave such rows alone. Deleting acknowledged or
-- replayed rows (retention) is not tracked by a trigger (it would double
-- what retention writes): the daily dlq_tally job recounts them after it.
--
-- Indexes no statement needs any more, or that only some rows need:
--   idx_dlq_failed_at: the list of every status merges the per-status ranges
--     of idx_dlq_status_failed instead (dlq/list.go);
--   idx_dlq_status_source_failed, idx_dlq_pending_brewer, idx_dlq_pending_reason:
--     the stats read dlq_tally (top_failure_reasons: the newest pending rows);
--   idx_dlq_pending_replay_count, idx_dlq_status_replayed_at,
--   idx_dlq_status_acknowledged_at: only the rows their queries ask for
--     (a capture writes none of them, an acknowledge one, a replay one).
-- Existing rows are not rewritten. One-time cost of this migration: one row
-- written per acknowledged or replayed row (their partial indexes are
-- rebuilt) and per pending row replayed before, plus one per dlq_tally and
-- dlq_activity row; it reads every dlq_messages row about three times.

CREATE TABLE IF NOT EXISTS dlq_tally (
    status TEXT NOT NULL,
    source_queue TEXT NOT NULL,
    brewer_key TEXT NOT NULL,   -- pending rows: '=' || brewer ('' when brewer is NULL); other statuses: ''
    n INTEGER NOT NULL,
    PRIMARY KEY (status, source_queue, brewer_key)
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS dlq_activity (
    kind TEXT NOT NULL,         -- failed | replayed | acknowledged
    hour INTEGER NOT NULL,      -- the time (failed_at, replayed_at, acknowledged_at) / 3600000; -1: archive
    n INTEGER NOT NULL,         -- rows whose time falls in the hour (replayed, acknowledged: rows in that status)
    events INTEGER NOT NULL DEFAULT 0, -- failed: messages captured in the hour (dlq_captured_total is their sum)
    PRIMARY KEY (kind, hour)
) WITHOUT ROWID;

-- D1 rows read and written per operation, added by each isolate (at most
-- once a minute) as one JSON object {op: [statements, rows_read, rows_written]}.
CREATE TABLE IF NOT EXISTS d1_usage (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ops TEXT NOT NULL
);

ALTER TABLE dlq_messages ADD COLUMN tally_seq INTEGER NOT NULL DEFAULT 0;

-- Counts of the rows there are now (reads every row once; writes one row per count).
INSERT INTO dlq_tally(status, source_queue, brewer_key, n)
    SELECT status, source_queue, CASE WHEN status = 'pending' AND brewer IS NOT NULL THEN '=' || brewer ELSE '' END, COUNT(*)
    FROM dlq_messages WHERE true GROUP BY 1, 2, 3
    ON CONFLICT(status, source_queue, brewer_key) DO UPDATE SET n = excluded.n;
INSERT INTO dlq_activity(kind, hour, n, events)
    SELECT 'failed', CAST(failed_at AS INTEGER) / 3600000, COUNT(*), 0 FROM dlq_messages
    WHERE status IN ('pending', 'replaying', 'replayed', 'acknowledged') AND failed_at >= (unixepoch() - 172800) * 1000 GROUP BY 2
    ON CONFLICT(kind, hour) DO UPDATE SET n = excluded.n;
INSERT INTO dlq_activity(kind, hour, n, events)
    SELECT 'replayed', CAST(replayed_at AS INTEGER) / 3600000, COUNT(*), 0 FROM dlq_messages
    WHERE status = 'replayed' AND replayed_at >= (unixepoch() - 172800) * 1000 GROUP BY 2
    ON CONFLICT(kind, hour) DO UPDATE SET n = excluded.n;
INSERT INTO dlq_activity(kind, hour, n, events)
    SELECT 'acknowledged', CAST(acknowledged_at AS INTEGER) / 3600000, COUNT(*), 0 FROM dlq_messages
    WHERE status = 'acknowledged' AND acknowledged_at >= (unixepoch() - 172800) * 1000 GROUP BY 2
    ON CONFLICT(kind, hour) DO UPDATE SET n = excluded.n;
-- dlq_captured_total moves to dlq_activity (the archive row, hour -1).
INSERT INTO dlq_activity(kind, hour, n, events)
    SELECT 'failed', -1, 0, value FROM counters WHERE name = 'dlq_captured_total'
    ON CONFLICT(kind, hour) DO UPDATE SET events = events + excluded.events;
DELETE FROM counters WHERE name = 'dlq_captured_total';

DROP INDEX IF EXISTS idx_dlq_failed_at;
DROP INDEX IF EXISTS idx_dlq_status_source_failed;
DROP INDEX IF EXISTS idx_dlq_pending_brewer;
DROP INDEX IF EXISTS idx_dlq_pending_reason;
DROP INDEX IF EXISTS idx_dlq_pending_replay_count;
DROP INDEX IF EXISTS idx_dlq_status_replayed_at;
DROP INDEX IF EXISTS idx_dlq_status_acknowledged_at;
CREATE INDEX IF NOT EXISTS idx_dlq_pending_replay_count ON dlq_messages(replay_count)
    WHERE status = 'pending' AND replay_count > 0;
CREATE INDEX IF NOT EXISTS idx_dlq_status_replayed_at ON dlq_messages(status, replayed_at) WHERE status = 'replayed';
CREATE INDEX IF NOT EXISTS idx_dlq_status_acknowledged_at ON dlq_messages(status, acknowledged_at) WHERE status = 'acknowledged';

DROP TRIGGER IF EXISTS dlq_messages_captured;
DROP TRIGGER IF EXISTS dlq_messages_failed_again;
DROP TRIGGER IF EXISTS dlq_messages_acknowledged;
DROP TRIGGER IF EXISTS dlq_messages_replayed;

-- A new row: its counts, its hour of failure (and of its action, for rows
-- inserted already acknowledged or replayed), the poison counter, and the
-- removal of the attempt record it used.
CREATE TRIGGER IF NOT EXISTS dlq_messages_inserted AFTER INSERT ON dlq_messages
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
    INSERT INTO counters(name, value) SELECT 'dlq_poison_total', 1 WHERE NEW.failure_class = 'poison'
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    DELETE FROM message_attempts WHERE message_id = NEW.last_message_id;
END;

-- A deleted pending or replaying row (retention deletes only acknowledged and
-- replayed rows, which the dlq_tally job recounts).
CREATE TRIGGER IF NOT EXISTS dlq_messages_deleted AFTER DELETE ON dlq_messages
WHEN OLD.status IN ('pending', 'replaying')
BEGIN
    UPDATE dlq_tally SET n = n - 1 WHERE status = OLD.status AND source_queue = OLD.source_queue
        AND brewer_key = CASE WHEN OLD.status = 'pending' AND OLD.brewer IS NOT NULL THEN '=' || OLD.brewer ELSE '' END;
    UPDATE dlq_activity SET n = n - 1 WHERE kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000;
END;

-- A row that changed status, source queue or brewer (unless its statement
-- keeps the counts itself: tally_seq changed).
CREATE TRIGGER IF NOT EXISTS dlq_messages_moved AFTER UPDATE OF status, source_queue, brewer ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status OR NEW.source_queue IS NOT OLD.source_queue
    OR CASE WHEN NEW.status = 'pending' AND NEW.brewer IS NOT NULL THEN '=' || NEW.brewer ELSE '' END
        IS NOT CASE WHEN OLD.status = 'pending' AND OLD.brewer IS NOT NULL THEN '=' || OLD.brewer ELSE '' END)
BEGIN
    UPDATE dlq_tally SET n = n - 1 WHERE status = OLD.status AND source_queue = OLD.source_queue
        AND brewer_key = CASE WHEN OLD.status = 'pending' AND OLD.brewer IS NOT NULL THEN '=' || OLD.brewer ELSE '' END;
    INSERT INTO dlq_tally(status, source_queue, brewer_key, n)
        VALUES (NEW.status, NEW.source_queue, CASE WHEN NEW.status = 'pending' AND NEW.brewer IS NOT NULL THEN '=' || NEW.brewer ELSE '' END, 1)
        ON CONFLICT(status, source_queue, brewer_key) DO UPDATE SET n = n + 1;
END;

-- A row that failed again (a replayed message's repeat failure updates its
-- row, dlq/store.go) or whose failure time changed: its hour of failure
-- moves, the capture is counted and its attempt record removed.
CREATE TRIGGER IF NOT EXISTS dlq_messages_failed_again AFTER UPDATE OF failed_at, last_message_id ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.failed_at IS NOT OLD.failed_at OR NEW.last_message_id IS NOT OLD.last_message_id)
BEGIN
    UPDATE dlq_activity SET n = n - 1
        WHERE NEW.failed_at IS NOT OLD.failed_at AND kind = 'failed' AND hour = CAST(OLD.failed_at AS INTEGER) / 3600000;
    INSERT INTO dlq_activity(kind, hour, n, events)
        VALUES ('failed', CAST(NEW.failed_at AS INTEGER) / 3600000, NEW.failed_at IS NOT OLD.failed_at, NEW.last_message_id IS NOT OLD.last_message_id)
        ON CONFLICT(kind, hour) DO UPDATE SET n = n + excluded.n, events = events + excluded.events;
    DELETE FROM message_attempts WHERE NEW.last_message_id IS NOT OLD.last_message_id AND message_id = NEW.last_message_id;
END;

-- A row that became (or stopped being) replayed or acknowledged, or whose
-- action time changed: its hour of action.
CREATE TRIGGER IF NOT EXISTS dlq_messages_acted AFTER UPDATE OF status, replayed_at, acknowledged_at ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND (NEW.status IS NOT OLD.status
    OR CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END
        IS NOT CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at WHEN 'acknowledged' THEN OLD.acknowledged_at END)
BEGIN
    UPDATE dlq_activity SET n = n - 1 WHERE kind = OLD.status AND OLD.status IN ('replayed', 'acknowledged')
        AND hour = CAST(CASE OLD.status WHEN 'replayed' THEN OLD.replayed_at ELSE OLD.acknowledged_at END AS INTEGER) / 3600000;
    INSERT INTO dlq_activity(kind, hour, n, events)
        SELECT NEW.status, CAST(CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at ELSE NEW.acknowledged_at END AS INTEGER) / 3600000, 1, 0
        WHERE CASE NEW.status WHEN 'replayed' THEN NEW.replayed_at WHEN 'acknowledged' THEN NEW.acknowledged_at END IS NOT NULL
        ON CONFLICT(kind, hour) DO UPDATE SET n = n + 1;
END;

-- Rows acknowledged or replayed outside redrive's own statements (which
-- count them in their batch) and repeat failures that overtook their
-- replay's final update (dlq/store.go).
CREATE TRIGGER IF NOT EXISTS dlq_messages_acknowledged AFTER UPDATE OF status ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND NEW.status = 'acknowledged' AND OLD.status <> 'acknowledged'
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_acknowledged_total', 1)
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_replayed AFTER UPDATE OF replay_count ON dlq_messages
WHEN NEW.tally_seq = OLD.tally_seq AND COALESCE(NEW.replay_count, 0) > COALESCE(OLD.replay_count, 0)
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_replayed_total', NEW.replay_count - COALESCE(OLD.replay_count, 0))
        ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;
END;
