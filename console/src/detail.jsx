import { useState } from "preact/hooks";
import { get } from "./api.js";
import { ActionDialog, ResultSummary } from "./action.jsx";
import { Copy, ErrorBox, Needs, Pre, Table, Time, useLoad } from "./components.jsx";
import { can } from "./state.js";
import { href } from "./router.js";
import { AuditTable } from "./audit.jsx";
import { EditReplayDialog } from "./edit.jsx";
import { IncidentDialog, IncidentStatus } from "./incident.jsx";

// payloadText is the stored body for reading: JSON pretty-printed, text as
// it is, bytes as their base64 (and the text they hold, when they are text).
export function payloadText(m) {
  if (m.raw_message === null || m.raw_message === undefined) return { text: "", note: "No body stored." };
  if (m.raw_encoding === "base64") {
    let decoded = null;
    try {
      decoded = new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(m.raw_message), (c) => c.charCodeAt(0)));
    } catch {
      /* binary */
    }
    return { text: m.raw_message, note: "Stored as base64" + (decoded !== null ? "; as UTF-8 text it reads:" : " (binary)."), decoded };
  }
  if (m.content_type === "json") {
    try {
      return { text: JSON.stringify(JSON.parse(m.raw_message), null, 2), note: "JSON, pretty-printed." };
    } catch {
      return { text: m.raw_message, note: "Sent as JSON, but not valid JSON." };
    }
  }
  return { text: m.raw_message, note: `Sent as ${m.content_type}.` };
}

const FIELDS = [
  ["id", "Id"], ["status", "Status"], ["pipeline", "Pipeline"], ["key", "Key"], ["beer_id", "Beer id"], ["beer_name", "Beer name"], ["brewer", "Brewer"],
  ["failure_reason", "Failure reason"], ["failure_class", "Failure class"], ["failure_count", "Attempts on the source queue"],
  ["source_queue", "Source queue"], ["content_type", "Content type"], ["raw_encoding", "Stored as"],
  ["first_failed_at", "First failed", true], ["failed_at", "Last failed", true], ["replay_count", "Replays"],
  ["replaying_at", "Replay claimed", true], ["replayed_at", "Replayed", true], ["acknowledged_at", "Acknowledged", true],
  ["acknowledged_note", "Acknowledge note"], ["updated_at", "Updated", true], ["message_id", "Message id (first failure)"],
];

// labelsText writes a row's labels (the pipeline's label names → values) as
// "name: value" lines of text.
function labelsText(labels) {
  const e = Object.entries(labels || {});
  if (!e.length) return "—";
  return e.map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join("\n");
}

export function Detail({ id }) {
  const [state, reload] = useLoad(() => get("/admin/dlq/" + encodeURIComponent(id)), [id]);
  const [action, setAction] = useState(null);
  const [result, setResult] = useState(null);
  if (state.error) return <ErrorBox error={state.error} />;
  if (!state.data) return <p aria-busy="true">Loading…</p>;
  const d = state.data;
  const m = d.message;
  const p = payloadText(m);
  const why = (perm) => (can(perm) ? undefined : "detail-needs");
  return (
    <div class="detail">
      <p>
        <a href={href("/failures")}>← Failures</a>
      </p>
      <div class="toolbar" role="group" aria-label="Actions on this row">
        <span class={"status " + m.status}>{m.status}</span>
        <button type="button" disabled={!can("replay") || m.status !== "pending"} aria-describedby={why("replay")} onClick={() => setAction("replay")}>
          Replay
        </button>
        <button type="button" disabled={!can("acknowledge") || m.status !== "pending"} aria-describedby={why("acknowledge")} onClick={() => setAction("acknowledge")}>
          Acknowledge
        </button>
        {m.content_type === "json" && (
          <button type="button" disabled={!can("edit") || m.status !== "pending"} aria-describedby={why("edit")} onClick={() => setAction("edit")}>
            Edit and replay
          </button>
        )}
      </div>
      <Needs
        id="detail-needs"
        items={[
          ["Replay", "replay"],
          ["Acknowledge", "acknowledge"],
          ...(m.content_type === "json" ? [["Edit and replay", "edit"]] : []),
        ]}
      />
      {result && (
        <div class="result" role="status">
          <ResultSummary result={result} />
        </div>
      )}
      <div class="two">
        <section aria-labelledby="h-fields">
          <h2 id="h-fields">Fields</h2>
          <dl class="fields">
            {FIELDS.map(([k, label, time]) => (
              <div key={k}>
                <dt>{label}</dt>
                <dd class={k === "failure_reason" ? "reason" : ""}>{time ? <Time ms={m[k]} /> : m[k] === null || m[k] === undefined || m[k] === "" ? "—" : String(m[k])}</dd>
              </div>
            ))}
            <div>
              <dt>Labels</dt>
              <dd>{labelsText(m.labels)}</dd>
            </div>
            <div>
              <dt>Message id (latest failure)</dt>
              <dd>{d.last_message_id || "—"}</dd>
            </div>
            <div>
              <dt>Body hash (replay lineage)</dt>
              <dd>{d.body_hash ?? "—"}</dd>
            </div>
          </dl>
        </section>
        <section aria-labelledby="h-lineage">
          <h2 id="h-lineage">Replays and lineage</h2>
          <p>
            Replayed <strong>{m.replay_count}</strong> time{m.replay_count === 1 ? "" : "s"}
            {m.replayed_at ? (
              <>
                , last on <Time ms={m.replayed_at} />
              </>
            ) : null}
            . First failed <Time ms={m.first_failed_at || m.failed_at} />, last failed <Time ms={m.failed_at} />.
          </p>
          <p class="small muted">
            A replayed message that fails again comes back to this row (same source queue and body): the replay count grows and the
            latest message id changes.
          </p>
          {d.related_ids.length > 0 && (
            <p>
              Other replayed rows with the same body:{" "}
              {d.related_ids.map((r, i) => (
                <span key={r}>
                  {i ? ", " : ""}
                  <a href={href("/failures/" + r)}>#{r}</a>
                </span>
              ))}
            </p>
          )}
        </section>
      </div>
      <section aria-labelledby="h-history">
        <h2 id="h-history">Why it failed</h2>
        <p>
          {d.signature ? (
            <>
              Failure group{" "}
              <a href={href("/failures", { signature: d.signature.signature, status: "all" })}>
                <span class="reason">{d.signature.text || d.signature.signature}</span>
              </a>{" "}
              ({d.signature.class}).{" "}
            </>
          ) : (
            "No failure group (captured before groups were kept). "
          )}
          {d.version ? (
            <>
              Latest failure on version <code class="version">{d.version}</code>.
            </>
          ) : null}
        </p>
        {d.signature && <GroupIncident signature={d.signature} />}
        {d.signature?.replay_will_fail && (
          <p class="warn" role="note">
            These failures are {d.signature.class}: replaying this row unchanged fails again.
          </p>
        )}
        {d.history.length ? (
          <Table
            label="Attempt history"
            class="rows history"
            srCaption="Every failed attempt, oldest first"
            rows={d.history}
            rowKey={(e, i) => i}
            columns={[
              { head: "Failed", cellClass: "nowrap", cell: (e) => <Time ms={e.at} /> },
              { head: "Attempt", class: "num", cell: (e) => e.attempt },
              { head: "Class", cell: (e) => e.class },
              { head: "HTTP", class: "num", cell: (e) => e.status ?? "—" },
              { head: "Took", class: "num", cellClass: "nowrap", cell: (e) => (e.duration_ms == null ? "—" : `${e.duration_ms} ms`) },
              { head: "Error", cellClass: "reason", cell: (e) => e.error },
              { head: "Version", cell: (e) => <code class="version">{(e.version || "—").slice(0, 8)}</code> },
              { head: "Message id", cellClass: "small", cell: (e) => e.message_id },
            ]}
          />
        ) : (
          <p class="muted">No attempt history (captured before histories were kept, or never retried).</p>
        )}
        {d.history_dropped > 0 && (
          <p class="small muted">
            {d.history_dropped} attempts between the first 5 and the newest 45 are not kept.
          </p>
        )}
        {d.replays.length > 0 && (
          <p class="small">
            Replays:{" "}
            {d.replays.map((r, i) => (
              <span key={i}>
                {i ? "; " : ""}
                <Time ms={r.at} /> by {r.principal ? <code>{r.principal}</code> : <>key <code>{r.key_fingerprint}</code></>}, {r.outcome}
              </span>
            ))}
          </p>
        )}
      </section>
      <section aria-labelledby="h-payload">
        <h2 id="h-payload">Payload</h2>
        <p class="small muted">
          {p.note} <Copy text={p.text} label="Copy payload" />
        </p>
        <Pre text={p.text} label="Payload" />
        {p.decoded != null && <Pre text={p.decoded} label="Payload as text" />}
      </section>
      <section aria-labelledby="h-audit">
        <h2 id="h-audit">Audit entries</h2>
        <p class="small muted">Among the newest {d.audit_window} audit entries: those that named this row, and bulk actions that moved it.</p>
        {d.audit.length ? <AuditTable entries={d.audit} label="Audit entries naming this row" /> : <p class="muted">None.</p>}
      </section>
      {action === "edit" && (
        <EditReplayDialog
          message={m}
          onClose={(res) => {
            setAction(null);
            if (res) {
              setResult(res);
              reload();
            }
          }}
        />
      )}
      {action && action !== "edit" && (
        <ActionDialog
          kind={action}
          selection={{ ids: [m.id] }}
          onClose={(res) => {
            setAction(null);
            if (res) {
              setResult(res);
              reload();
            }
          }}
        />
      )}
    </div>
  );
}

// GroupIncident shows the incident status of the row's group (the detail
// carries it: no other read) and changes it.
function GroupIncident({ signature }) {
  const [incident, setIncident] = useState(null);
  const [open, setOpen] = useState(false);
  const current = incident ?? signature.incident;
  const group = current ? { signature: signature.signature, incident: current } : null;
  return (
    <div class="group-incident">
      <p>
        Incident:{" "}
        {group ? (
          <IncidentStatus incident={group.incident} />
        ) : (
          <span class="muted">the group's record is gone.</span>
        )}{" "}
        {group && (
          <button type="button" disabled={!can("acknowledge")} aria-describedby={can("acknowledge") ? undefined : "incident-needs"} onClick={() => setOpen(true)}>
            Change status…
          </button>
        )}
      </p>
      <Needs id="incident-needs" items={[["Changing the group's incident status", "acknowledge"]]} />
      {open && (
        <IncidentDialog
          group={group}
          onClose={(res) => {
            setOpen(false);
            if (res) setIncident(res.incident);
          }}
        />
      )}
    </div>
  );
}
