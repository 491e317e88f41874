-- 0014: the console's chart (GET /admin/dlq/timeseries) reads the capture
-- events dlq_activity already counts per hour (migration 0012), which the
-- dlq_tally job now keeps for 8 days instead of 2. The table of 0013 and its
-- triggers go: they wrote one more row per captured message (issue 15's
-- capture budget is 8). The chart's older hours start again from
-- dlq_activity's (the last 2 days at the time of this migration).
DROP TRIGGER IF EXISTS dlq_messages_hourly_captured;
DROP TRIGGER IF EXISTS dlq_messages_hourly_failed_again;
DROP TRIGGER IF EXISTS dlq_failures_hourly_pruned;
DROP TABLE IF EXISTS dlq_failures_hourly;
