import { useState } from "preact/hooks";
import { get, post } from "./api.js";
import { ErrorBox, Needs, Table, Time, useLoad } from "./components.jsx";
import { href, pipeline } from "./router.js";
import { can, useSignal } from "./state.js";

const ACTIONS = {
  canary: ["pause", "cancel"],
  running: ["pause", "cancel"],
  paused: ["resume", "cancel"],
};

// Tasks lists the replay tasks (GET /admin/dlq/replay-tasks), newest first,
// with a progress bar each (sent and failed sends of the rows matched) and
// pause, resume and cancel.
export function Tasks() {
  // With a pipeline selected: the tasks that can replay its rows.
  const chosen = useSignal(pipeline);
  const [list, reload] = useLoad(() => get("/admin/dlq/replay-tasks", chosen ? { limit: 50, pipeline: chosen } : { limit: 50 }), [chosen]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(null);
  const act = async (id, action) => {
    setBusy(id);
    setError(null);
    try {
      await post(`/admin/dlq/replay-tasks/${id}/${action}`);
      reload();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(null);
    }
  };
  if (list.error) return <ErrorBox error={list.error} />;
  const tasks = list.data?.tasks;
  if (!tasks) return <p aria-busy="true">Loading…</p>;
  return (
    <div>
      <p class="small muted">
        Replay tasks are advanced by the 5-minute cron at their rate. Start one from the <a href={href("/failures")}>failures</a> (every
        row matching a filter) or from a <a href={href("/groups")}>failure group</a>: "Replay task…".
      </p>
      <Needs id="tasks-needs" items={[["Start, pause, resume and cancel", "tasks"]]} />
      <ErrorBox error={error} />
      {tasks.length === 0 ? (
        <p class="muted">No replay tasks.</p>
      ) : (
        <Table
          label="Replay tasks"
          rows={tasks}
          rowKey={(t) => t.id}
          columns={[
            { head: "Id", class: "num", cell: (t) => t.id },
            {
              head: "State",
              cell: (t) => (
                <>
                  {t.state}
                  {t.canary_result && !t.canary_result.passed && <span class="badge">canary failed</span>}
                </>
              ),
            },
            { head: "Filter", cell: (t) => <code>{JSON.stringify(t.filter)}</code> },
            { head: "Started by", cell: (t) => t.principal ?? "—" },
            { head: "Rate / min", class: "num", cell: (t) => t.rate_per_minute },
            {
              head: "Progress",
              cell: (t) => (
                <span class="progress">
                  <progress max={Math.max(t.matched, 1)} value={t.sent + t.send_failed} aria-label={`Task ${t.id} progress`} />
                  <span class="small progress-text">
                    {t.sent} sent{t.send_failed ? `, ${t.send_failed} failed` : ""} of {t.matched}
                  </span>
                </span>
              ),
            },
            { head: "Finish (estimate)", cell: (t) => (t.estimated_finish_at ? <Time ms={t.estimated_finish_at} /> : "—") },
            {
              head: "Actions",
              cell: (t) => (
                <span class="actions">
                  {(ACTIONS[t.state] || []).map((a) => (
                    <button key={a} type="button" disabled={!can("tasks") || busy === t.id} aria-describedby={can("tasks") ? undefined : "tasks-needs"} onClick={() => act(t.id, a)}>
                      {a[0].toUpperCase() + a.slice(1)}
                    </button>
                  ))}
                </span>
              ),
            },
          ]}
        />
      )}
    </div>
  );
}
