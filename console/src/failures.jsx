import { useEffect, useRef, useState } from "preact/hooks";
import { exportRows, get } from "./api.js";
import { ActionDialog, ResultBox } from "./action.jsx";
import { TaskDialog } from "./task.jsx";
import { ErrorBox, Needs, Pager, Table, Time, useCursors, useInSteps, useLoad } from "./components.jsx";
import { href, navigate } from "./router.js";
import { can, pipelines, useSignal } from "./state.js";
import { format, fromInput, toInput, utc } from "./time.js";

const STATUSES = ["pending", "replaying", "replayed", "acknowledged", "all"];
const SIZES = [10, 25, 50, 100];
const DEBOUNCE_MS = 400;
const NONE = [];

// filterOf turns the route's params into the API's filter (list parameters
// and the bulk actions' filter object share their names).
export function filterOf(p) {
  const f = {};
  if (p.pipeline) f.pipeline = p.pipeline;
  if (p.status) f.status = p.status;
  if (p.source_queue) f.source_queue = p.source_queue;
  if (p.beer_id) f.beer_id = p.beer_id;
  if (p.q) f.q = p.q;
  if (p.failed_after) f.failed_after = Number(p.failed_after);
  if (p.failed_before) f.failed_before = Number(p.failed_before);
  if (p.signature) f.signature = p.signature;
  if (p.version) f.version = p.version;
  if (p.version_not) f.version_not = p.version_not;
  return f;
}

export function Failures({ params }) {
  const inUtc = useSignal(utc);
  const names = useSignal(pipelines);
  const many = names?.length > 1;
  const filter = filterOf(params);
  const status = filter.status || "pending";
  const limit = SIZES.includes(Number(params.limit)) ? Number(params.limit) : 50;
  const key = JSON.stringify([filter, limit]);
  const pages = useCursors(key);
  const [selected, setSelected] = useState(new Set());
  const [action, setAction] = useState(null);
  const [result, setResult] = useState(null);
  const [list, reload] = useLoad(() => {
    setSelected(new Set());
    return get("/admin/dlq", { ...filter, limit, cursor: pages.cursor });
  }, pages.deps);

  const set = (patch, replace = false) => {
    const next = { ...params, ...patch };
    for (const k of Object.keys(next)) if (next[k] === "" || next[k] === undefined) delete next[k];
    navigate("/failures", next, replace);
  };

  // The search box: its own state, sent to the address (and so to the API)
  // once typing pauses.
  const [q, setQ] = useState(params.q || "");
  const timer = useRef(0);
  useEffect(() => setQ(params.q || ""), [params.q]);
  const onQ = (v) => {
    setQ(v);
    clearTimeout(timer.current);
    timer.current = setTimeout(() => set({ q: v }, true), DEBOUNCE_MS);
  };
  useEffect(() => () => clearTimeout(timer.current), []);

  // The rows wait for the pipelines' names too (asked at the same time):
  // a Pipeline column that came after them would shift every row.
  const data = names === null ? null : list.data;
  const rows = data?.messages ?? NONE;
  const shown = useInSteps(rows);
  const toggle = (id) => {
    const s = new Set(selected);
    s.has(id) ? s.delete(id) : s.add(id);
    setSelected(s);
  };
  const allOnPage = rows.length > 0 && rows.every((m) => selected.has(m.id));
  const toggleAll = () => setSelected(allOnPage ? new Set() : new Set(rows.map((m) => m.id)));
  const ids = [...selected];
  const bulkFilter = { ...filter };
  delete bulkFilter.status;
  const mayReplay = can("replay");
  const mayAck = can("acknowledge");
  const [raw, setRaw] = useState(false);
  // why points a button the principal may not use at the reason.
  const why = (p) => (can(p) ? undefined : "failures-needs");
  const done = (res) => {
    setAction(null);
    if (res) {
      setResult(res);
      pages.first();
      reload();
    }
  };

  return (
    <div>
      <form class="filters" role="search" aria-label="Filter failures" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select name="status" value={status} onChange={(e) => set({ status: e.currentTarget.value })}>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Source queue
          <input type="text" name="source_queue" value={params.source_queue || ""} maxLength={200} placeholder="any" onChange={(e) => set({ source_queue: e.currentTarget.value.trim() })} />
        </label>
        <label>
          Beer id
          <input type="text" name="beer_id" value={params.beer_id || ""} maxLength={200} placeholder="any" onChange={(e) => set({ beer_id: e.currentTarget.value.trim() })} />
        </label>
        <label>
          Failed from <span class="muted small">({inUtc ? "UTC" : "local"})</span>
          <input type="datetime-local" name="failed_after" value={toInput(params.failed_after, inUtc)} onChange={(e) => set({ failed_after: fromInput(e.currentTarget.value, inUtc) })} />
        </label>
        <label>
          Failed before <span class="muted small">({inUtc ? "UTC" : "local"})</span>
          <input type="datetime-local" name="failed_before" value={toInput(params.failed_before, inUtc)} onChange={(e) => set({ failed_before: fromInput(e.currentTarget.value, inUtc) })} />
        </label>
        <label class="grow">
          Search <span class="muted small">(beer name, brewer or reason)</span>
          <input type="search" name="q" value={q} maxLength={200} onInput={(e) => onQ(e.currentTarget.value)} />
        </label>
        <label>
          Per page
          <select name="limit" value={limit} onChange={(e) => set({ limit: e.currentTarget.value })}>
            {SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => navigate("/failures", {})}>
          Clear filters
        </button>
      </form>
      {(filter.signature || filter.version || filter.version_not) && (
        <p class="small" role="note">
          {filter.signature && (
            <>
              Failure group <code>{filter.signature}</code> (<a href={href("/groups")}>groups</a>).{" "}
            </>
          )}
          {filter.version && (
            <>
              Failed on version <code class="version">{filter.version}</code>.{" "}
            </>
          )}
          {filter.version_not && (
            <>
              Failed on a version other than <code class="version">{filter.version_not}</code>.{" "}
            </>
          )}
          <button type="button" class="link" onClick={() => set({ signature: "", version: "", version_not: "" })}>
            Remove
          </button>
        </p>
      )}

      <div class="toolbar" role="group" aria-label="Actions">
        <span aria-live="polite" class="count">
          {data ? `${data.total_count} matching` : list.loading || names === null ? "Loading…" : ""}
          {ids.length ? ` · ${ids.length} selected` : ""}
        </span>
        <button type="button" disabled={!mayReplay || !ids.length || ids.length > 50} aria-describedby={why("replay")} onClick={() => setAction({ kind: "replay", selection: { ids }, classes: rows.filter((m) => selected.has(m.id)).map((m) => m.failure_class) })}>
          Replay selected
        </button>
        <button type="button" disabled={!mayAck || !ids.length} aria-describedby={why("acknowledge")} onClick={() => setAction({ kind: "acknowledge", selection: { ids } })}>
          Acknowledge selected
        </button>
        <button type="button" disabled={!mayReplay || status !== "pending" || !data?.total_count} aria-describedby={why("replay")} onClick={() => setAction({ kind: "replay", selection: { filter: bulkFilter } })}>
          Replay all matching
        </button>
        <button
          type="button"
          disabled={!mayAck || status !== "pending" || !data?.total_count}
          aria-describedby={why("acknowledge")}
          onClick={() => setAction({ kind: "acknowledge", selection: { filter: bulkFilter } })}
        >
          Acknowledge all matching
        </button>
        <button type="button" disabled={!can("tasks") || status !== "pending" || !data?.total_count} aria-describedby={why("tasks")} onClick={() => setAction({ kind: "task", filter: bulkFilter })}>
          Replay task…
        </button>
        <ExportButton filter={filter} format="csv" raw={raw} />
        <ExportButton filter={filter} format="ndjson" raw={raw} />
        <label>
          <input type="checkbox" name="include_raw" checked={raw} disabled={!can("read_body")} aria-describedby={why("read_body")} onChange={(e) => setRaw(e.currentTarget.checked)} /> with bodies
        </label>
        {status !== "pending" && <span class="muted small">Actions on everything matching need status pending.</span>}
        {ids.length > 50 && <span class="muted small">Replay takes at most 50 selected rows.</span>}
      </div>
      <Needs
        id="failures-needs"
        items={[
          ["Replay", "replay"],
          ["Acknowledge", "acknowledge"],
          ["Replay task…", "tasks"],
          ["Export with bodies", "read_body"],
          ["A row's detail page", "read_body"],
        ]}
      />

      <ResultBox result={result} onDismiss={() => setResult(null)} />
      <ErrorBox error={list.error} />

      <Table
        label="Failures"
        class="rows"
        srCaption="Failures, newest first"
        busy={list.loading || names === null}
        empty="No failures match."
        rows={shown.rows}
        rowKey={(m) => m.id}
        rowClass={(m) => (selected.has(m.id) ? "selected" : "")}
        columns={[
          {
            head: <input type="checkbox" aria-label="Select every row on this page" checked={allOnPage} onChange={toggleAll} />,
            cell: (m) => <input type="checkbox" aria-label={`Select row ${m.id}`} checked={selected.has(m.id)} onChange={() => toggle(m.id)} />,
          },
          // A role without read_body cannot open the detail (it shows the body).
          { head: "Id", cell: (m) => (can("read_body") ? <a href={href("/failures/" + m.id)}>{m.id}</a> : m.id) },
          { head: "Failed", cellClass: "nowrap", cell: (m) => <Time ms={m.failed_at} /> },
          {
            head: "Beer",
            cell: (m) => (
              <>
                <span class="beer-name">{m.beer_name ?? "—"}</span>
                <br />
                <span class="muted small">{m.beer_id}</span>
              </>
            ),
          },
          { head: "Brewer", cell: (m) => m.brewer ?? "—" },
          { head: "Reason", cellClass: "reason", cell: (m) => m.failure_reason ?? "—" },
          many && { head: "Pipeline", cell: (m) => m.pipeline ?? "—" },
          { head: "Queue", cell: (m) => m.source_queue },
          { head: "Status", cell: (m) => <span class={"status " + m.status}>{m.status}</span> },
          { head: "Replays", class: "num", cell: (m) => m.replay_count },
        ].filter(Boolean)}
      />
      {/* The pager appears once the whole first page shows (its rows come in steps), and never moves down as it loads. */}
      <Pager pages={pages} data={shown.done ? data : null} previous />
      {action?.kind === "task" && <TaskDialog filter={action.filter} what="every pending row matching the filter" onClose={() => setAction(null)} />}
      {action && action.kind !== "task" && <ActionDialog kind={action.kind} selection={action.selection} classes={action.classes} onClose={done} />}
    </div>
  );
}

// ExportButton downloads every row matching the current filter.
// raw adds the bodies (include_raw, the read_body permission).
function ExportButton({ filter, format, raw }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      const { blob } = await exportRows(filter, format, raw);
      const url = URL.createObjectURL(blob);
      const a = document.createElement("a");
      a.href = url;
      a.download = "dlq-export." + format;
      document.body.appendChild(a);
      a.click();
      a.remove();
      setTimeout(() => URL.revokeObjectURL(url), 10_000);
    } catch (e) {
      setError(e.message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <>
      <button type="button" disabled={busy} onClick={run}>
        {busy ? "Exporting…" : "Export " + format.toUpperCase()}
      </button>
      {error && (
        <span class="error small" role="alert">
          {error}
        </span>
      )}
    </>
  );
}
