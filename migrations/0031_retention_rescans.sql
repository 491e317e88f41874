-- 0031: imported rows are looked at by retention (issue 44).
--
-- dlq_retention's age windows and per-key cap continue from the action time
-- their previous run reached (age_scanned_to, cap_scanned_to in its
-- job_runs summary): a row that becomes terminal now is always ahead of
-- them. An import (POST /admin/dlq/import) writes rows as they were, with
-- action times long past, behind those positions: they escaped a shorter
-- retention and the cap. Each import batch now adds one row here, the
-- earliest action time among its lines; the database's next dlq_retention
-- run reads the rows added since the one its summary names (rescan_seq),
-- moves its positions back to that time, and forgets the rows before.
CREATE TABLE IF NOT EXISTS retention_rescans (
    seq INTEGER PRIMARY KEY,
    since INTEGER NOT NULL
);
