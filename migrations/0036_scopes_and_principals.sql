-- 0036: pipeline scopes and principals (access/, issue 47).
-- api_keys.pipelines: the JSON array of pipeline names a key is limited to
-- (NULL: every pipeline). admin_audit.principal and replay_tasks.principal
-- name who acted ("key:<name>", "access:<email>", "admin" for the pair);
-- admin_audit.source_queue is the one queue an entry concerns (NULL:
-- several or unknown), which a scoped credential's audit list reads.
-- Adding columns writes no row; the two indexes start empty and take one
-- entry per audit row written from now on.
ALTER TABLE api_keys ADD COLUMN pipelines TEXT;
ALTER TABLE admin_audit ADD COLUMN principal TEXT;
ALTER TABLE admin_audit ADD COLUMN source_queue TEXT;
ALTER TABLE replay_tasks ADD COLUMN principal TEXT;
CREATE INDEX IF NOT EXISTS idx_admin_audit_principal ON admin_audit(principal, id) WHERE principal IS NOT NULL;
CREATE INDEX IF NOT EXISTS idx_admin_audit_queue ON admin_audit(source_queue, id) WHERE source_queue IS NOT NULL;
