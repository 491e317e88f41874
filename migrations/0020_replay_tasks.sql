-- 0020: replay tasks (issue 19): a durable, paced replay advanced by the cron.

-- replay_tasks: durable replay tasks (dlq/replay_task.go, docs/admin-api.md
-- "Replay tasks"): a filter replayed at a rate by the 5-minute cron, each step
-- sending what the rate allows until the next one, with staggered delays.
CREATE TABLE IF NOT EXISTS replay_tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    state TEXT NOT NULL,                    -- running | paused | done | cancelled
    filter TEXT NOT NULL,                   -- the normalized dlq.Filter, JSON
    rate_per_minute INTEGER NOT NULL,
    delay_seconds INTEGER NOT NULL DEFAULT 0,
    destination TEXT,                       -- NULL: each row's source_queue
    matched INTEGER NOT NULL,               -- replayable pending rows matching at creation
    sent INTEGER NOT NULL DEFAULT 0,        -- rows sent
    send_failed INTEGER NOT NULL DEFAULT 0, -- rows whose send failed (back to pending, not retried by the task)
    slot_origin INTEGER NOT NULL,           -- delivery time (ms) of slot slot_base; slot k: origin + ceil((k - base) * 60 / rate) s
    slot_base INTEGER NOT NULL DEFAULT 0,
    pos_failed_at INTEGER NOT NULL,         -- scan position, newest failure first: rows before it are done
    pos_id INTEGER NOT NULL,
    steps INTEGER NOT NULL DEFAULT 0,       -- steps taken; a step holds the task by this number
    step_at INTEGER,                        -- when the step holding the task started (NULL: none)
    last_step_at INTEGER,
    finished_at INTEGER,
    created_by TEXT NOT NULL,               -- key fingerprint
    request_id TEXT NOT NULL
);
-- The cron reads only the tasks it may advance.
CREATE INDEX IF NOT EXISTS idx_replay_tasks_running ON replay_tasks(id) WHERE state = 'running';

-- replay_task_rows: every row a task sent and when it asked the queue to
-- deliver it: a row is sent at most once per task (the step's claim skips
-- the rows here), written in the replay's settle batch.
CREATE TABLE IF NOT EXISTS replay_task_rows (
    task_id INTEGER NOT NULL,
    dlq_id INTEGER NOT NULL,
    deliver_at INTEGER NOT NULL,            -- send time + the delay asked for (ms)
    PRIMARY KEY (task_id, dlq_id)
) WITHOUT ROWID;
