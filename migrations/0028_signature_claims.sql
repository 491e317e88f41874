-- 0028: a new failure signature is marked announced only after it was sent
-- (issue 29). A run claims it first (announce_claimed_at, a lease of 15
-- minutes); a run that dies before sending leaves the claim to lapse and a
-- later run sends it. Not indexed: a claim writes the row alone.
ALTER TABLE dlq_signatures ADD COLUMN announce_claimed_at INTEGER;
