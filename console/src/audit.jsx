import { get } from "./api.js";
import { ErrorBox, Pager, Table, Time, useCursors, useLoad } from "./components.jsx";
import { href, navigate } from "./router.js";
import { can } from "./state.js";

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
            {can("read_body") ? <a href={href("/failures/" + id)}>{id}</a> : id}
          </span>
        ))}
        {ids.length > 10 ? ` and ${ids.length - 10} more` : ""}
      </span>
    );
  }
  if (e.filter) return <code>{JSON.stringify(e.filter)}</code>;
  return "—";
}

// AuditTable lists audit entries; label names its scrolling region, which
// must differ from the name of any region around it (axe landmark-unique).
export function AuditTable({ entries, label = "Audit entries" }) {
  return (
    <Table
      label={label}
      class="audit"
      rows={entries}
      rowKey={(e) => e.id}
      columns={[
        { head: "When", cellClass: "nowrap", cell: (e) => <Time ms={e.at} /> },
        {
          head: "Who",
          cell: (e) => (
            <>
              {e.principal ?? "—"}
              <br />
              <code class="small" title="first 12 hex digits of the API key's HMAC-SHA256 (keyed by ADMIN_SECRET)">
                {e.key_fingerprint}
              </code>
            </>
          ),
        },
        {
          head: "What",
          cell: (e) => (
            <>
              {e.action}
              {e.dry_run ? <span class="badge">dry run</span> : null}
            </>
          ),
        },
        { head: "Rows", cell: target },
        { head: "Note", cellClass: "reason", cell: (e) => e.note ?? "—" },
        {
          head: "Outcome",
          cell: (e) => (
            <>
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
            </>
          ),
        },
      ]}
    />
  );
}

export function Audit({ params }) {
  const action = params.action || "";
  const principal = params.principal || "";
  const pages = useCursors(JSON.stringify([action, principal]));
  const [state] = useLoad(() => get("/admin/audit", { action, principal, limit: 50, cursor: pages.cursor }), pages.deps);
  const set = (patch) => {
    const next = { action, principal, ...patch };
    for (const k of Object.keys(next)) if (!next[k]) delete next[k];
    navigate("/audit", next);
  };
  const d = state.data;
  return (
    <div>
      <form class="filters" aria-label="Filter the audit log" onSubmit={(e) => e.preventDefault()}>
        <label>
          Action
          <select value={action} onChange={(e) => set({ action: e.currentTarget.value })}>
            <option value="">all</option>
            <option value="replay">replay</option>
            <option value="acknowledge">acknowledge</option>
            <option value="replay_edited">replay_edited</option>
            <option value="replay_task">replay_task</option>
            <option value="breaker_reset">breaker_reset</option>
            <option value="key_create">key_create</option>
            <option value="key_revoke">key_revoke</option>
          </select>
        </label>
        <label>
          Who <span class="muted small">(key:name, access:email or admin)</span>
          <input type="text" name="principal" value={principal} maxLength={200} placeholder="anyone" onChange={(e) => set({ principal: e.currentTarget.value.trim() })} />
        </label>
      </form>
      <ErrorBox error={state.error} />
      {d && (d.entries.length ? <AuditTable entries={d.entries} /> : <p class="muted">No entries.</p>)}
      {!d && !state.error && <p aria-busy="true">Loading…</p>}
      <Pager pages={pages} data={d} previous />
    </div>
  );
}
