import { useState } from "preact/hooks";
import { post } from "./api.js";
import { Dialog, ErrorBox } from "./components.jsx";

// EditReplayDialog edits a pending json row's body and replays it (POST
// /admin/dlq/{id}/replay): the text must parse as JSON (checked as typed),
// a note is required. The row's stored body is not changed.
export function EditReplayDialog({ message, onClose }) {
  let initial = message.raw_message ?? "";
  try {
    initial = JSON.stringify(JSON.parse(initial), null, 2);
  } catch {
    /* not valid JSON: edit it as it is */
  }
  const [text, setText] = useState(initial);
  const [note, setNote] = useState("");
  const [error, setError] = useState(null);
  const [result, setResult] = useState(null);
  const [busy, setBusy] = useState(false);
  let parsed, invalid = null;
  try {
    parsed = JSON.parse(text);
    if (parsed === null) invalid = "The body cannot be null.";
  } catch (e) {
    invalid = "Not valid JSON: " + e.message;
  }
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      setResult(await post(`/admin/dlq/${message.id}/replay`, { body: parsed, note: note.trim() }));
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const done = () => onClose(result ? { kind: "replay", totals: { replayed: result.replayed ? 1 : 0, failed: result.replayed ? 0 : 1, acknowledged: 0 }, skipped: [], failedIds: result.replayed ? [] : [message.id] } : null);
  return (
    <Dialog title={`Edit and replay row ${message.id}`} onClose={done}>
      <p class="small muted">The edited body is sent as JSON in place of the stored one, which stays as it is. Both hashes and the note go to the audit log.</p>
      <label class="block">
        Body (JSON)
        <textarea rows={12} spellcheck={false} value={text} aria-invalid={invalid ? "true" : "false"} onInput={(e) => setText(e.currentTarget.value)} />
      </label>
      {invalid && <p class="error small" role="alert">{invalid}</p>}
      <label class="block">
        Note <span class="muted small">(required: why the body was edited)</span>
        <textarea rows={2} maxLength={1000} value={note} onInput={(e) => setNote(e.currentTarget.value)} />
      </label>
      <ErrorBox error={error} />
      {result && (
        <p role="status" class="result">
          {result.replayed ? `Sent to ${result.queued_to}.` : "The send failed; the row is pending again."}
        </p>
      )}
      <div class="dialog-buttons">
        {!result && (
          <button type="button" class="primary" disabled={busy || !!invalid || !note.trim()} onClick={run}>
            {busy ? "Sending…" : "Replay edited body"}
          </button>
        )}
        <button type="button" onClick={done}>
          {result ? "Close" : "Cancel"}
        </button>
      </div>
    </Dialog>
  );
}
