import { useState } from "preact/hooks";
import { get } from "./api.js";
import { ErrorBox, Scroll, Time, useLoad } from "./components.jsx";
import { href, navigate } from "./router.js";

function counts(c) {
  if (!c || typeof c !== "object") return "—";
  return Object.entries(c)
    .filter(([, v]) => v !== "" && v !== null && !(Array.isArray(v) && !v.length))
    .map(([k, v]) => `${k.replace(/_count$/, "")} ${v !== null && typeof v === "object" ? JSON.stringify(v) : v}`)
    .join(", ");
}

function target(e) {
  if (e.ids) {
    const ids = e.ids;
    return (
      <span>
        ids{" "}
        {ids.slice(0, 10).map((id, i) => (
          <span key={id}>
            {i ? ", " : ""}
            <a href={href("/failures/" + id)}>{id}</a>
          </span>
        ))}
        {ids.length > 10 ? ` and ${ids.length - 10} more` : ""}
      </span>
    );
  }
  if (e.filter) return <code>{JSON.stringify(e.filter)}</code>;
  return "—";
}

export function AuditTable({ entries }) {
  return (
    <Scroll label="Audit entries">
      <table class="audit">
        <thead>
          <tr>
            <th scope="col">When</th>
            <th scope="col">Who (key)</th>
            <th scope="col">What</th>
            <th scope="col">Rows</th>
            <th scope="col">Note</th>
            <th scope="col">Outcome</th>
          </tr>
        </thead>
        <tbody>
          {entries.map((e) => (
            <tr key={e.id}>
              <td class="nowrap">
                <Time ms={e.at} />
              </td>
              <td>
                <code title="first 12 hex digits of the API key's SHA-256">{e.key_fingerprint}</code>
              </td>
              <td>
                {e.action}
                {e.dry_run ? <span class="badge">dry run</span> : null}
              </td>
              <td>{target(e)}</td>
              <td class="reason">{e.note ?? "—"}</td>
              <td>
                <span class={"badge " + (e.outcome === "ok" ? "ok" : e.outcome === "started" ? "" : "bad")}>{e.outcome}</span>{" "}
                <span class="small">{counts(e.counts)}</span>
                {e.error && (
                  <span class="small error-text">
                    {" "}
                    {e.error.code}: {e.error.message}
                  </span>
                )}
                <br />
                <span class="muted small">request {e.request_id}</span>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    </Scroll>
  );
}

export function Audit({ params }) {
  const action = params.action || "";
  const [nav, setNav] = useState({ action, cursors: [null] });
  const cursors = nav.action === action ? nav.cursors : [null];
  const page = cursors.length - 1;
  const [state] = useLoad(() => get("/admin/audit", { action, limit: 50, cursor: cursors[page] ?? undefined }), [action, page, cursors[page]]);
  const d = state.data;
  return (
    <div>
      <form class="filters" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <label>
          Action
          <select value={action} onChange={(e) => navigate("/audit", e.currentTarget.value ? { action: e.currentTarget.value } : {})}>
            <option value="">all</option>
            <option value="replay">replay</option>
            <option value="acknowledge">acknowledge</option>
          </select>
        </label>
      </form>
      <ErrorBox error={state.error} />
      {d && (d.entries.length ? <AuditTable entries={d.entries} /> : <p class="muted">No entries.</p>)}
      {!d && !state.error && <p aria-busy="true">Loading…</p>}
      {d && (
        <nav class="pager" aria-label="Pages">
          <button type="button" disabled={page === 0} onClick={() => setNav({ action, cursors: [null] })}>
            First page
          </button>
          <button type="button" disabled={page === 0} onClick={() => setNav({ action, cursors: cursors.slice(0, -1) })}>
            Previous page
          </button>
          <span>Page {page + 1}</span>
          <button type="button" disabled={!d?.has_more} onClick={() => setNav({ action, cursors: [...cursors, d.next_cursor] })}>
            Next page
          </button>
        </nav>
      )}
    </div>
  );
}
