-- 0007: capture bookkeeping inside the store statement (one D1 round trip per
-- DLQ batch): count captured and poison rows and remove the attempt record
-- each stored message used.
CREATE TRIGGER IF NOT EXISTS dlq_messages_captured AFTER INSERT ON dlq_messages
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_captured_total', 1)
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    INSERT INTO counters(name, value) SELECT 'dlq_poison_total', 1 WHERE NEW.failure_class = 'poison'
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    DELETE FROM message_attempts WHERE message_id = NEW.last_message_id;
END;

-- A replayed message that failed again updates its original row.
CREATE TRIGGER IF NOT EXISTS dlq_messages_failed_again AFTER UPDATE OF last_message_id ON dlq_messages
WHEN OLD.last_message_id <> NEW.last_message_id
BEGIN
    INSERT INTO counters(name, value) VALUES ('dlq_captured_total', 1)
        ON CONFLICT(name) DO UPDATE SET value = value + 1;
    DELETE FROM message_attempts WHERE message_id = NEW.last_message_id;
END;
