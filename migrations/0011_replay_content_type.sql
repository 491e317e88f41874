-- 0010: replay sends exactly what failed (dlq/replay.go, dlq/store.go).
-- content_type: how the message was sent (json | text | bytes | v8).
-- body_hash: hex of the first 16 bytes of SHA-256 over content type, "\n" and
-- the body's text form; a replayed message that fails again is matched to its
-- row by it (source_queue, body_hash) instead of a field added to the body.
-- Existing rows are NOT rewritten: a migration that touched every row could use
-- up D1 Free's 100,000 rows written per day. For them content_type stays NULL
-- and is derived when read (raw_encoding base64: bytes; valid JSON: json; else
-- text), and body_hash is set by the replay that claims them.
ALTER TABLE dlq_messages ADD COLUMN content_type TEXT;
ALTER TABLE dlq_messages ADD COLUMN body_hash TEXT;
-- Only rows a replay has claimed are in it (capture pays no index write for
-- body_hash): the rows a repeat failure can belong to.
CREATE INDEX IF NOT EXISTS idx_dlq_replay_lineage ON dlq_messages(source_queue, body_hash)
    WHERE status = 'replaying' OR replay_count > 0;
