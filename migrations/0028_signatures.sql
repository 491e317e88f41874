-- 0028: failure signatures (issue 29).
--
-- A new failure signature is marked announced only after it was sent. A run
-- claims it first (announce_claimed_at, a lease of 15 minutes); a run that
-- dies before sending leaves the claim to lapse and a later run sends it.
-- Not indexed: a claim writes the row alone.
ALTER TABLE dlq_signatures ADD COLUMN announce_claimed_at INTEGER;
-- GET /admin/dlq/groups?sort=first_seen pages newest group first by a key
-- that never changes (first_seen is set once), so paging is stable. One
-- index entry written per new signature, none when its counts change.
CREATE INDEX IF NOT EXISTS idx_dlq_signatures_first_seen ON dlq_signatures(first_seen DESC, signature);
