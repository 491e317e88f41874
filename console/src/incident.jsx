import { useState } from "preact/hooks";
import { post } from "./api.js";
import { Dialog, ErrorBox, Time } from "./components.jsx";
import { me } from "./state.js";

// A failure group is an incident (GET /admin/dlq/groups' incident): open,
// acknowledged (someone owns it), resolved, ignored (only counted) or
// snoozed (no event until snoozed_until). Its owner and note come from
// whoever changed it: shown as text only, like every text of a group.
export const INCIDENT_STATUSES = ["open", "acknowledged", "resolved", "ignored", "snoozed"];

const BADGE = { open: "bad", acknowledged: "warn", resolved: "ok" };

// IncidentStatus shows a group's incident: its status as a badge (snoozed:
// until when), its owner and its note.
export function IncidentStatus({ incident }) {
  if (!incident) return <span class="muted">—</span>;
  return (
    <span class="incident">
      <span class={"badge incident-status " + (BADGE[incident.status] ?? "")}>{incident.status}</span>
      {incident.status === "snoozed" && incident.snoozed_until ? (
        <span class="small">
          {" "}
          until <Time ms={incident.snoozed_until} />
        </span>
      ) : null}
      {incident.owner ? (
        <span class="small incident-owner">
          {" "}
          owner <strong>{incident.owner}</strong>
        </span>
      ) : null}
      {incident.note ? <span class="small muted incident-note"> “{incident.note}”</span> : null}
    </span>
  );
}

// The actions of the dialog: [status, button, snooze hours].
const ACTIONS = [
  ["acknowledged", "Acknowledge"],
  ["resolved", "Resolve"],
  ["ignored", "Ignore"],
  ["snoozed", "Snooze 1 h", 1],
  ["snoozed", "Snooze 4 h", 4],
  ["snoozed", "Snooze 24 h", 24],
  ["open", "Open"],
];

// IncidentDialog changes a group's incident status (POST
// /admin/dlq/groups/{signature}/status, audited as group_status): the owner
// is the signed-in principal unless changed, the note optional (both
// replace the group's). onClose(res) gets the answer ({incident, event_id})
// or nothing when cancelled; an error (409 when the group changed
// meanwhile) shows in the dialog.
export function IncidentDialog({ group, onClose }) {
  const [owner, setOwner] = useState((me.value?.principal ?? "").slice(0, 100));
  const [note, setNote] = useState(group.incident?.note ?? "");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const run = async (status, hours) => {
    setBusy(true);
    setError(null);
    const body = { status, owner: owner.trim(), note: note.trim() };
    if (hours) body.until = Date.now() + hours * 3_600_000;
    try {
      onClose(await post(`/admin/dlq/groups/${encodeURIComponent(group.signature)}/status`, body));
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Dialog title="Incident status" onClose={() => onClose(null)}>
      <p class="reason">
        Group <span class="group-text">{group.text || group.signature}</span>, now <IncidentStatus incident={group.incident} />
      </p>
      <ErrorBox error={error} />
      <label class="block">
        Owner
        <input type="text" name="owner" maxLength={100} value={owner} onInput={(e) => setOwner(e.currentTarget.value)} />
      </label>
      <label class="block">
        Note <span class="muted small">(optional; replaces the group's note, kept in the audit log)</span>
        <textarea name="note" rows={2} maxLength={1000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      </label>
      {busy && <p aria-busy="true">Working…</p>}
      <div class="dialog-buttons" role="group" aria-label="Set the status">
        {ACTIONS.map(([status, label, hours]) => (
          <button key={label} type="button" class={status === "acknowledged" ? "primary" : undefined} disabled={busy} onClick={() => run(status, hours)}>
            {label}
          </button>
        ))}
        <button type="button" onClick={() => onClose(null)}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}

