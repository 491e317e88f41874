import { useState } from "preact/hooks";
import { get } from "./api.js";
import { ActionDialog, ResultBox } from "./action.jsx";
import { TaskDialog } from "./task.jsx";
import { ErrorBox, Scroll, Time, useLoad } from "./components.jsx";
import { href, navigate } from "./router.js";

const SIZES = [10, 25, 50, 100];

// Groups lists failures grouped by signature (the reason without its
// numbers, ids and quoted values, plus its class), most pending rows first.
// Each group links to its rows and acts on all of them in one call.
export function Groups({ params }) {
  const limit = SIZES.includes(Number(params.limit)) ? Number(params.limit) : 25;
  const filter = {};
  if (params.class) filter.class = params.class;
  if (params.version) filter.version = params.version;
  const key = JSON.stringify([filter, limit]);
  const [nav, setNav] = useState({ key, cursors: [null] });
  const cursors = nav.key === key ? nav.cursors : [null];
  const setCursors = (c) => setNav({ key, cursors: c });
  const page = cursors.length - 1;
  const [action, setAction] = useState(null);
  const [result, setResult] = useState(null);
  const [list, reload] = useLoad(() => get("/admin/dlq/groups", { ...filter, limit, cursor: cursors[page] ?? undefined }), [key, page, cursors[page], nav]);
  const [stats] = useLoad(() => get("/admin/dlq/stats"), []);
  const live = stats.data?.current_version;
  const set = (patch) => {
    const next = { ...params, ...patch };
    for (const k of Object.keys(next)) if (next[k] === "" || next[k] === undefined) delete next[k];
    navigate("/groups", next);
  };
  const groups = list.data?.groups ?? [];
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
        <button type="button" onClick={() => navigate("/groups", {})}>
          Clear filters
        </button>
      </form>
      <ResultBox result={result} onDismiss={() => setResult(null)} />
      <ErrorBox error={list.error} />
      <Scroll label="Failure groups">
        <table class="rows groups" aria-busy={list.loading ? "true" : "false"}>
          <caption class="sr-only">Failure groups, most pending rows first</caption>
          <thead>
            <tr>
              <th scope="col">Failure</th>
              <th scope="col">Class</th>
              <th scope="col" class="num">Pending</th>
              <th scope="col" class="num">Replayed</th>
              <th scope="col" class="num">Acknowledged</th>
              <th scope="col">First and last seen</th>
              <th scope="col">Versions</th>
              <th scope="col">Act on the group</th>
            </tr>
          </thead>
          <tbody>
            {!list.loading && groups.length === 0 && (
              <tr>
                <td colSpan={8} class="muted">
                  No failure groups.
                </td>
              </tr>
            )}
            {groups.map((g) => (
              <tr key={g.signature}>
                <td class="reason">
                  <a href={href("/failures", { signature: g.signature, status: "all" })}>{g.text || "(empty reason)"}</a>
                  <br />
                  <span class="muted small">
                    {g.signature}
                    {g.sample_ids.length ? " · e.g. " : ""}
                    {g.sample_ids.slice(0, 3).map((id, i) => (
                      <span key={id}>
                        {i ? ", " : ""}
                        <a href={href("/failures/" + id)}>#{id}</a>
                      </span>
                    ))}
                  </span>
                  {g.replay_will_fail && (
                    <p class="warn small" role="note">
                      {g.advice}
                    </p>
                  )}
                </td>
                <td>{g.class}</td>
                <td class="num">{g.counts.pending}</td>
                <td class="num">{g.counts.replayed}</td>
                <td class="num">{g.counts.acknowledged}</td>
                <td class="small">
                  <Time ms={g.first_seen} />
                  <br />
                  <Time ms={g.last_seen} />
                </td>
                <td class="small">
                  {g.versions.map((v) => (
                    <code key={v} class={"version" + (live && v === live.stamp ? " live" : "")} title={live && v === live.stamp ? "live now" : "older"}>
                      {v.slice(0, 8)}
                    </code>
                  ))}
                </td>
                <td>
                  <span class="actions">
                    <button type="button" disabled={!g.counts.pending} onClick={() => setAction({ kind: "replay", selection: { filter: { signature: g.signature } } })}>
                      Replay
                    </button>
                    <button type="button" disabled={!g.counts.pending} onClick={() => setAction({ kind: "acknowledge", selection: { filter: { signature: g.signature } } })}>
                      Acknowledge
                    </button>
                    <button type="button" disabled={!g.counts.pending} onClick={() => setAction({ kind: "task", filter: { signature: g.signature }, what: g.text })}>
                      Replay task…
                    </button>
                  </span>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </Scroll>
      {list.data && (
        <nav class="pager" aria-label="Pages">
          <button type="button" disabled={page === 0} onClick={() => setCursors([null])}>
            First page
          </button>
          <span>Page {page + 1}</span>
          <button type="button" disabled={!list.data?.has_more} onClick={() => setCursors([...cursors, list.data.next_cursor])}>
            Next page
          </button>
        </nav>
      )}
      {action?.kind === "task" && <TaskDialog filter={action.filter} what={`group "${action.what || action.filter.signature}"`} onClose={() => setAction(null)} />}
      {action && action.kind !== "task" && (
        <ActionDialog
          kind={action.kind}
          selection={action.selection}
          onClose={(res) => {
            setAction(null);
            if (res) {
              setResult(res);
              setCursors([null]);
              reload();
            }
          }}
        />
      )}
    </div>
  );
}
