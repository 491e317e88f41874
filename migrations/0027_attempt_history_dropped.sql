-- 0027: a message's attempt record counts the attempts it leaves out of its
-- history (issue 29). Beyond 50 entries the record drops the oldest after
-- the first 5 (it dropped the second oldest, so the "first 5" a row kept
-- were attempts 1, 12, 13, ...), and capture adds history_dropped to the
-- row's. Not indexed: a later attempt still writes the record alone.
ALTER TABLE message_attempts ADD COLUMN history_dropped INTEGER NOT NULL DEFAULT 0;
