import { useEffect, useState } from "preact/hooks";
import { post } from "./api.js";
import { PermanentWarning } from "./action.jsx";
import { Dialog, ErrorBox, Time } from "./components.jsx";
import { href } from "./router.js";

// The limits of POST /admin/dlq/replay-tasks (docs/admin-api.md "Replay tasks", docs/admin-api.md "Canary").
const MAX_RATE = 600;
const MAX_DELAY = 43200;
const MAX_CANARY = 100;
const MAX_OBSERVE = 1440;

// int is v as an integer in lo..hi, or null.
function int(v, lo, hi) {
  const n = Number(v);
  return v !== "" && Number.isInteger(n) && n >= lo && n <= hi ? n : null;
}

// TaskDialog starts a replay task (a paced bulk replay run by the cron)
// over filter: first the dry run's count of the rows it would replay now,
// then the rate, a delay, a destination and an optional canary, then the
// task as created. onClose(task) gets the task, or nothing when cancelled.
export function TaskDialog({ filter, what, onClose }) {
  const [preview, setPreview] = useState(null);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const [task, setTask] = useState(null);
  const [f, setF] = useState({ rate: "60", delay: "0", destination: "", canary: false, size: "5", ratio: "80", observe: "15" });
  const set = (k) => (e) => setF({ ...f, [k]: e.currentTarget.type === "checkbox" ? e.currentTarget.checked : e.currentTarget.value });

  useEffect(() => {
    post("/admin/dlq/replay", { filter, dry_run: true }).then(setPreview, setError);
  }, []);

  const rate = int(f.rate, 1, MAX_RATE);
  const delay = int(f.delay, 0, MAX_DELAY);
  const size = int(f.size, 1, MAX_CANARY);
  const ratio = int(f.ratio, 0, 100);
  const observe = int(f.observe, 1, MAX_OBSERVE);
  const valid = rate !== null && delay !== null && (!f.canary || (size !== null && ratio !== null && observe !== null));
  const n = preview ? preview.matched_count - preview.not_replayable_count : 0;

  const start = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const body = { filter, rate_per_minute: rate };
    if (delay) body.delay_seconds = delay;
    if (f.destination.trim()) body.destination = f.destination.trim();
    if (f.canary) body.canary = { size, min_success_ratio: ratio / 100, observe_minutes: observe };
    try {
      setTask(await post("/admin/dlq/replay-tasks", body));
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <Dialog title={`Replay task: ${what}`} onClose={() => onClose(task)}>
      <p class="small">
        Filter: <code>{JSON.stringify(filter)}</code>
      </p>
      <ErrorBox error={error} />
      {!preview && !error && <p aria-busy="true">Dry run…</p>}
      {preview && !task && (
        <div aria-live="polite">
          <p class="preview-count">
            Dry run: <strong>{n}</strong> pending row{n === 1 ? "" : "s"} would be replayed now
            {preview.not_replayable_count > 0 && `, ${preview.not_replayable_count} more not replayable (skipped)`}. The task replays the
            matching rows that failed before it starts, at its rate, newest failure first
            {rate && n ? `: about ${Math.max(1, Math.ceil(n / rate))} min at ${rate} a minute` : ""}.
          </p>
          <PermanentWarning preview={preview} />
        </div>
      )}
      {preview && !task && (
        <form id="task-form" onSubmit={start}>
          <div class="form-grid">
            <label>
              Rate (rows a minute, 1–{MAX_RATE})
              <input type="number" name="rate" required min={1} max={MAX_RATE} value={f.rate} onInput={set("rate")} />
            </label>
            <label>
              Delay before the first, seconds (0–{MAX_DELAY})
              <input type="number" name="delay" min={0} max={MAX_DELAY} value={f.delay} onInput={set("delay")} />
            </label>
            <label>
              Destination queue <span class="muted small">(empty: each row's source queue)</span>
              <input type="text" name="destination" maxLength={200} value={f.destination} onInput={set("destination")} />
            </label>
          </div>
          <fieldset>
            <legend>Canary</legend>
            <label>
              <input type="checkbox" name="canary" checked={f.canary} onChange={set("canary")} /> Try the first rows and wait for their outcome
            </label>
            {f.canary && (
              <div class="form-grid">
                <label>
                  Canary rows (1–{MAX_CANARY})
                  <input type="number" name="canary_size" required min={1} max={MAX_CANARY} value={f.size} onInput={set("size")} />
                </label>
                <label>
                  Go on when at least this % succeed
                  <input type="number" name="canary_ratio" required min={0} max={100} value={f.ratio} onInput={set("ratio")} />
                </label>
                <label>
                  Observe for, minutes (1–{MAX_OBSERVE})
                  <input type="number" name="canary_observe" required min={1} max={MAX_OBSERVE} value={f.observe} onInput={set("observe")} />
                </label>
              </div>
            )}
          </fieldset>
        </form>
      )}
      {task && (
        <div role="status" class="result">
          <p>
            <strong>Replay task #{task.id} started</strong> ({task.state}): {task.matched} row{task.matched === 1 ? "" : "s"} at {task.rate_per_minute} a
            minute
            {task.estimated_finish_at ? (
              <>
                , done by about <Time ms={task.estimated_finish_at} />
              </>
            ) : null}
            . The 5-minute cron advances it.
          </p>
          <p>
            <a href={href("/tasks")}>Replay tasks</a>
          </p>
        </div>
      )}
      <div class="dialog-buttons">
        {preview && !task && (
          <button type="submit" form="task-form" class="primary" disabled={busy || !valid || n <= 0}>
            {busy ? "Starting…" : `Start task over ${n} row${n === 1 ? "" : "s"}`}
          </button>
        )}
        <button type="button" onClick={() => onClose(task)}>
          {task ? "Close" : "Cancel"}
        </button>
      </div>
    </Dialog>
  );
}
