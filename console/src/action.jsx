import { useEffect, useState } from "preact/hooks";
import { post } from "./api.js";
import { Dialog, ErrorBox, Table, Time } from "./components.jsx";

const LABEL = { replay: "Replay", acknowledge: "Acknowledge" };

// ActionDialog replays or acknowledges a selection ({ids} or {filter}):
// first a dry run shows how many rows and which reasons it would touch,
// then the operator confirms (with a note, for acknowledge), then the
// result is shown. Bulk calls move a page at a time; "Continue" runs the
// next one. onClose(result) gets the result, or nothing when cancelled.
// classes (optional, ids form) are the failure classes of the selected rows.
export function ActionDialog({ kind, selection, classes, onClose }) {
  const path = `/admin/dlq/${kind}`;
  const [phase, setPhase] = useState("preview"); // preview | confirm | running | done
  const [preview, setPreview] = useState(null);
  const [error, setError] = useState(null);
  const [note, setNote] = useState("");
  const [delay, setDelay] = useState("0");
  const [progress, setProgress] = useState(null); // accumulated result
  const bulk = !!selection.filter;

  useEffect(() => {
    post(path, { ...selection, dry_run: true }).then(
      (p) => {
        setPreview(p);
        setPhase("confirm");
      },
      (e) => setError(e),
    );
  }, []);

  const body = (cursor) => {
    const b = { ...selection };
    if (kind === "acknowledge" && note.trim()) b.note = note.trim();
    if (kind === "replay" && Number(delay) > 0) b.delay_seconds = Number(delay);
    if (cursor) b.cursor = cursor;
    return b;
  };

  const run = async (prev) => {
    setPhase("running");
    setError(null);
    try {
      const r = await post(path, body(prev?.cursor));
      const acc = prev?.acc ?? { kind, totals: { replayed: 0, failed: 0, acknowledged: 0 }, skipped: [], failedIds: [] };
      if (kind === "replay") {
        acc.totals.replayed += r.replayed_count;
        acc.totals.failed += r.failed_count;
        acc.failedIds.push(...(r.failed_ids || []));
        acc.skipped.push(...(r.skipped || []));
      } else {
        acc.totals.acknowledged += r.acknowledged_count;
      }
      acc.hasMore = !!r.has_more;
      setProgress({ acc, cursor: r.next_cursor, hasMore: !!r.has_more });
      setPhase("done");
    } catch (e) {
      setError(e);
      setPhase(prev ? "done" : "confirm");
    }
  };

  const what = bulk ? "every pending row matching the filter" : `${selection.ids.length} selected row${selection.ids.length === 1 ? "" : "s"}`;
  const n = preview?.matched_count ?? 0;
  const willReplay = kind === "replay" ? n - (preview?.not_replayable_count ?? 0) : n;
  return (
    <Dialog title={`${LABEL[kind]} ${what}`} onClose={() => onClose(progress?.acc)}>
      {bulk && (
        <p class="small">
          Filter: <code>{JSON.stringify(selection.filter)}</code>
        </p>
      )}
      <ErrorBox error={error} />
      {phase === "preview" && !error && <p aria-busy="true">Dry run…</p>}
      {preview && phase !== "done" && (
        <div aria-live="polite">
          <p class="preview-count">
            Dry run: <strong>{n}</strong> pending row{n === 1 ? "" : "s"} would be {kind === "replay" ? "replayed" : "acknowledged"}
            {kind === "replay" && preview.not_replayable_count > 0 && `, ${preview.not_replayable_count} of them not replayable (skipped)`}.
            {!bulk && preview.requested_count > n && ` ${preview.requested_count - n} of the selected are not pending and stay as they are.`}
          </p>
          {kind === "replay" && <PermanentWarning preview={preview} classes={classes} />}
          {preview.by_failure_reason.length > 0 && (
            <Table
              label="Rows by failure reason"
              caption="By failure reason"
              rows={preview.by_failure_reason}
              rowKey={(r, i) => i}
              columns={[
                { head: "Reason", cellClass: "reason", cell: (r) => r.failure_reason ?? "(none)" },
                { head: "Rows", class: "num", cell: (r) => r.count },
              ]}
            />
          )}
          {preview.sample.length > 0 && (
            <details>
              <summary>Sample ({preview.sample.length} newest)</summary>
              <ul class="small">
                {preview.sample.map((m) => (
                  <li key={m.id}>
                    #{m.id} <Time ms={m.failed_at} /> {m.beer_name ?? m.beer_id}: {m.failure_reason ?? "—"}
                  </li>
                ))}
              </ul>
            </details>
          )}
        </div>
      )}
      {phase === "confirm" && kind === "acknowledge" && (
        <label class="block">
          Note <span class="muted small">(why they are dismissed; kept with the rows and in the audit log)</span>
          <textarea rows={2} maxLength={1000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
        </label>
      )}
      {phase === "confirm" && kind === "replay" && (
        <label class="block">
          Delay before delivery, seconds (0–43200)
          <input type="number" min={0} max={43200} value={delay} onInput={(e) => setDelay(e.currentTarget.value)} />
        </label>
      )}
      {phase === "running" && <p aria-busy="true">Working…</p>}
      {phase === "done" && progress && (
        <div role="status" class="result">
          <ResultSummary result={{ ...progress.acc, hasMore: false }} />
          {progress.hasMore && <p>More matching rows remain.</p>}
        </div>
      )}
      <div class="dialog-buttons">
        {phase === "confirm" && (
          <button type="button" class="primary" disabled={willReplay <= 0} onClick={() => run(null)}>
            {LABEL[kind]} {willReplay} row{willReplay === 1 ? "" : "s"}
          </button>
        )}
        {phase === "done" && progress?.hasMore && (
          <button type="button" class="primary" onClick={() => run({ acc: progress.acc, cursor: progress.cursor })}>
            Continue with the next rows
          </button>
        )}
        <button type="button" onClick={() => onClose(progress?.acc)}>
          {phase === "done" ? "Close" : "Cancel"}
        </button>
      </div>
    </Dialog>
  );
}

// Classes whose failures fail again when replayed unchanged (as the API's
// replay_will_fail says of a group).
const PERMANENT = new Set(["permanent", "poison"]);

// PermanentWarning says when rows about to be replayed failed permanently:
// counted among classes when the caller knows the rows' classes, else in
// the dry run's sample (every row when the sample holds them all).
export function PermanentWarning({ preview, classes }) {
  const n = preview.matched_count;
  let text = "";
  if (classes) {
    const k = classes.filter((c) => PERMANENT.has(c)).length;
    if (k) text = `${k} of the selected row${classes.length === 1 ? "" : "s"} failed permanently`;
  } else {
    const k = preview.sample.filter((m) => PERMANENT.has(m.failure_class)).length;
    if (k && n <= preview.sample.length) text = k === n ? `${n === 1 ? "This row" : `All ${n} rows`} failed permanently` : `${k} of these ${n} rows failed permanently`;
    else if (k) text = `${k} of the ${preview.sample.length} newest of these rows failed permanently (and maybe more of the others)`;
  }
  if (!text) return null;
  return (
    <p class="warn" role="note">
      {text}: replaying them unchanged fails again. Fix the cause first, edit and replay a row, or acknowledge them.
    </p>
  );
}

// ResultSummary says what an action did.
// ResultBox shows an action's result with a way to dismiss it; nothing
// while there is no result.
export function ResultBox({ result, onDismiss }) {
  if (!result) return null;
  return (
    <div class="result" role="status">
      <ResultSummary result={result} />
      <button type="button" class="link" onClick={onDismiss}>
        Dismiss
      </button>
    </div>
  );
}

export function ResultSummary({ result }) {
  const { kind, totals, skipped, failedIds, hasMore } = result;
  return (
    <div>
      {kind === "replay" ? (
        <p>
          <strong>Replayed {totals.replayed}</strong>
          {totals.failed ? `, ${totals.failed} failed to send (back to pending: ids ${failedIds.join(", ")})` : ", none failed"}
          {skipped.length ? `, ${skipped.length} skipped` : ""}.
        </p>
      ) : (
        <p>
          <strong>Acknowledged {totals.acknowledged}</strong>.
        </p>
      )}
      {skipped.length > 0 && (
        <ul class="small">
          {skipped.map((s) => (
            <li key={s.id}>
              Row {s.id}: {s.reason === "not_pending" ? `not pending (${s.status})` : s.reason === "not_found" ? "not found" : "not replayable (acknowledge it instead)"}
            </li>
          ))}
        </ul>
      )}
      {hasMore && <p class="small">More rows match than one call moves; run it again for the rest.</p>}
    </div>
  );
}
