-- 0034: dlq_messages and dlq_tally name what they hold for every pipeline,
-- not for the beer one. A row's key (its pipeline's key pointer) was kept in
-- beer_id and its two labels in beer_name and brewer, the original worker's
-- columns; the API still answers with those names (beer_id, beer_name,
-- brewer beside key and labels), the storage no longer does:
--   beer_id    -> row_key  (key is json_each's column name, so row_key)
--   beer_name  -> label_1
--   brewer     -> label_2
--   dlq_tally.brewer_key -> label_key  ('=' || label_2 for pending rows)
-- RENAME COLUMN rewrites only the schema: the indexes and the triggers that
-- name these columns follow them, and no row is read or written. The index
-- idx_dlq_beer_id keeps its name: a new name would rebuild it, a write per
-- row at any backlog.
ALTER TABLE dlq_messages RENAME COLUMN beer_id TO row_key;
ALTER TABLE dlq_messages RENAME COLUMN beer_name TO label_1;
ALTER TABLE dlq_messages RENAME COLUMN brewer TO label_2;
ALTER TABLE dlq_tally RENAME COLUMN brewer_key TO label_key;
