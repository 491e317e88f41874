import { useState } from "preact/hooks";
import { get } from "./api.js";
import { ActionDialog, ResultBox } from "./action.jsx";
import { TaskDialog } from "./task.jsx";
import { INCIDENT_STATUSES, IncidentDialog, IncidentStatus } from "./incident.jsx";
import { ErrorBox, Needs, Pager, Table, Time, useCursors, useLoad } from "./components.jsx";
import { href, navigate, pipeline } from "./router.js";
import { can, useSignal } from "./state.js";

const SIZES = [10, 25, 50, 100];

// Groups lists failures grouped by signature (the reason without its
// numbers, ids and quoted values, plus its class), most pending rows first.
// Each group links to its rows and acts on all of them in one call.
export function Groups({ params }) {
  const chosen = useSignal(pipeline);
  const limit = SIZES.includes(Number(params.limit)) ? Number(params.limit) : 25;
  const filter = {};
  if (params.class) filter.class = params.class;
  if (params.version) filter.version = params.version;
  if (INCIDENT_STATUSES.includes(params.incident)) filter.incident = params.incident;
  if (chosen) filter.pipeline = chosen;
  const key = JSON.stringify([filter, limit]);
  const pages = useCursors(key);
  const [action, setAction] = useState(null);
  const [result, setResult] = useState(null);
  // Incidents changed on this page, by signature, over the list they were
  // changed on: the row shows its new status (also when the status filter
  // would now leave it out) until the list is read again.
  const [changed, setChanged] = useState({ data: null, by: {} });
  const [changeNote, setChangeNote] = useState(null);
  const [list, reload] = useLoad(() => get("/admin/dlq/groups", { ...filter, limit, cursor: pages.cursor }), pages.deps);
  // The live version, from the stats (of the selected pipeline: a key
  // limited to several pipelines must name one).
  const [stats] = useLoad(() => get("/admin/dlq/stats", chosen ? { pipeline: chosen } : undefined), [chosen]);
  const live = stats.data?.current_version;
  // A group is one cause in one pipeline (its key names the pipeline's
  // queue): its signature alone selects its rows.
  const groupFilter = (g) => (chosen ? { signature: g.signature, pipeline: chosen } : { signature: g.signature });
  const set = (patch) => {
    const next = { ...params, ...patch };
    for (const k of Object.keys(next)) if (next[k] === "" || next[k] === undefined) delete next[k];
    navigate("/groups", next);
  };
  const overrides = changed.data === list.data ? changed.by : {};
  const groups = (list.data?.groups ?? []).map((g) => (overrides[g.signature] ? { ...g, incident: overrides[g.signature] } : g));
  const why = (p) => (can(p) ? undefined : "groups-needs");
  // The page appears with the live version (one fast call) in its first
  // lines, rather than pushing everything down when it comes.
  if (!stats.data && !stats.error) return <p aria-busy="true">Loading…</p>;
  return (
    <div>
      <p class="small muted">
        Failures whose reasons differ only by numbers, ids, quoted values or query values are one group. Counts are kept as rows change.
        {live ? (
          <>
            {" "}
            Live version: <code class="version">{live.stamp}</code>
            {live.tag ? ` (${live.tag})` : ""}.{" "}
            <a href={href("/failures", { version_not: live.stamp })}>Failures of older versions</a>
          </>
        ) : null}
      </p>
      <form class="filters" role="search" aria-label="Filter groups" onSubmit={(e) => e.preventDefault()}>
        <label>
          Class
          <input type="text" name="class" value={params.class || ""} maxLength={200} placeholder="any" onChange={(e) => set({ class: e.currentTarget.value.trim() })} />
        </label>
        <label>
          Version seen
          <input type="text" name="version" value={params.version || ""} maxLength={200} placeholder="any" onChange={(e) => set({ version: e.currentTarget.value.trim() })} />
        </label>
        <label>
          Incident
          <select name="incident" value={filter.incident ?? ""} onChange={(e) => set({ incident: e.currentTarget.value })}>
            <option value="">all</option>
            {INCIDENT_STATUSES.map((st) => (
              <option key={st} value={st}>
                {st}
              </option>
            ))}
          </select>
        </label>
        <button type="button" onClick={() => navigate("/groups", {})}>
          Clear filters
        </button>
      </form>
      <Needs
        id="groups-needs"
        items={[
          ["Replay", "replay"],
          ["Acknowledge", "acknowledge"],
          ["Incident status", "acknowledge"],
          ["Replay task…", "tasks"],
          ["Sample rows' detail pages", "read_body"],
        ]}
      />
      <ResultBox result={result} onDismiss={() => setResult(null)} />
      {changeNote && (
        <div class="result" role="status">
          <p>
            Group <span class="group-text">{changeNote.text}</span> is now {changeNote.incident.status}
            {changeNote.incident.owner ? `, owned by ${changeNote.incident.owner}` : ""}.
          </p>
          <button type="button" class="link" onClick={() => setChangeNote(null)}>
            Dismiss
          </button>
        </div>
      )}
      <ErrorBox error={list.error} />
      <Table
        label="Failure groups"
        class="rows groups"
        srCaption="Failure groups, most pending rows first"
        busy={list.loading}
        empty="No failure groups."
        rows={groups}
        rowKey={(g) => g.signature}
        columns={[
          {
            head: "Failure",
            cellClass: "reason",
            cell: (g) => (
              <>
                <a href={href("/failures", { signature: g.signature, status: "all" })}>{g.text || "(empty reason)"}</a>
                <br />
                <span class="muted small">
                  <span class="group-pipeline">{g.pipeline ?? g.source_queue}</span> · <span class="group-signature">{g.signature}</span>
                  {g.sample_ids.length ? " · e.g. " : ""}
                  {g.sample_ids.slice(0, 3).map((id, i) => (
                    <span key={id}>
                      {i ? ", " : ""}
                      {can("read_body") ? <a href={href("/failures/" + id)}>#{id}</a> : `#${id}`}
                    </span>
                  ))}
                </span>
                {g.replay_will_fail && (
                  <p class="warn small" role="note">
                    {g.advice}
                  </p>
                )}
              </>
            ),
          },
          {
            head: "Incident",
            cellClass: "incident-cell",
            cell: (g) => (
              <>
                <IncidentStatus incident={g.incident} />
                <br />
                <button type="button" disabled={!can("acknowledge")} aria-describedby={why("acknowledge")} onClick={() => setAction({ kind: "incident", group: g })}>
                  Change status…
                </button>
              </>
            ),
          },
          { head: "Class", cell: (g) => g.class },
          { head: "Pending", class: "num", cell: (g) => g.counts.pending },
          { head: "Replayed", class: "num", cell: (g) => g.counts.replayed },
          { head: "Acknowledged", class: "num", cell: (g) => g.counts.acknowledged },
          {
            head: "First and last seen",
            cellClass: "small",
            cell: (g) => (
              <>
                <Time ms={g.first_seen} />
                <br />
                <Time ms={g.last_seen} />
              </>
            ),
          },
          {
            head: "Versions",
            cellClass: "small",
            cell: (g) =>
              g.versions.map((v) => (
                <code key={v} class={"version" + (live && v === live.stamp ? " live" : "")} title={live && v === live.stamp ? "live now" : "older"}>
                  {v.slice(0, 8)}
                </code>
              )),
          },
          {
            head: "Act on the group",
            cell: (g) => (
              <span class="actions">
                <button type="button" disabled={!can("replay") || !g.counts.pending} aria-describedby={why("replay")} onClick={() => setAction({ kind: "replay", selection: { filter: groupFilter(g) } })}>
                  Replay
                </button>
                <button type="button" disabled={!can("acknowledge") || !g.counts.pending} aria-describedby={why("acknowledge")} onClick={() => setAction({ kind: "acknowledge", selection: { filter: groupFilter(g) } })}>
                  Acknowledge
                </button>
                <button type="button" disabled={!can("tasks") || !g.counts.pending} aria-describedby={why("tasks")} onClick={() => setAction({ kind: "task", filter: groupFilter(g), what: g.text })}>
                  Replay task…
                </button>
              </span>
            ),
          },
        ]}
      />
      <Pager pages={pages} data={list.data} />
      {action?.kind === "task" && <TaskDialog filter={action.filter} what={`group "${action.what || action.filter.signature}"`} onClose={() => setAction(null)} />}
      {action?.kind === "incident" && (
        <IncidentDialog
          group={action.group}
          onClose={(res) => {
            setAction(null);
            if (res) {
              setChanged({ data: list.data, by: { ...overrides, [action.group.signature]: res.incident } });
              setChangeNote({ text: action.group.text || action.group.signature, incident: res.incident });
            }
          }}
        />
      )}
      {action && action.kind !== "task" && action.kind !== "incident" && (
        <ActionDialog
          kind={action.kind}
          selection={action.selection}
          onClose={(res) => {
            setAction(null);
            if (res) {
              setResult(res);
              pages.first();
              reload();
            }
          }}
        />
      )}
    </div>
  );
}
