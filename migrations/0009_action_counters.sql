-- 0009: count acknowledged and replayed rows inside the statements that move
-- them (as 0007 does for captured rows) instead of one more D1 round trip
-- per admin action. A replay counts when replay_count grows: the replay's
-- final update, or a repeat failure that overtook it (dlq/store.go).
CREATE TRIGGER IF NOT EXISTS dlq_messages_acknowledged AFTER UPDATE OF status ON dlq_messages
WHEN NEW.status = 'acknowledged' AND OLD.status <> 'acknowledged'
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_acknowledged_total', 1)
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
END;

CREATE TRIGGER IF NOT EXISTS dlq_messages_replayed AFTER UPDATE OF replay_count ON dlq_messages
WHEN COALESCE(NEW.replay_count, 0) > COALESCE(OLD.replay_count, 0)
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_replayed_total', NEW.replay_count - COALESCE(OLD.replay_count, 0))
        ON CONFLICT(name) DO UPDATE SET value = value + excluded.value;
END;
