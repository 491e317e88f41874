import { useState } from "preact/hooks";
import { get, post } from "./api.js";
import { Copy, Dialog, ErrorBox, Table, Time, useLoad } from "./components.jsx";
import { can, EVERY_NOTE, me, needs, pipelines, scoped, useSignal } from "./state.js";
import { fromInput, utc } from "./time.js";

const ROLES = [
  ["viewer", "A viewer reads the dead letters, not their bodies."],
  ["operator", "An operator is a viewer that also reads bodies, replays, acknowledges, edits and runs replay tasks."],
  ["admin", "An admin does everything, keys and the breaker included."],
  ["reporter", "A reporter only reports failures (POST /admin/attempts)."],
];
const NAME = "^[a-z0-9][a-z0-9._\\-]{0,63}$";

// Keys manages the named API keys (GET/POST /admin/keys, POST
// /admin/keys/{id}/revoke; the keys permission, a credential of every
// pipeline): the list, a new key (its token shown once) and revocation.
export function Keys() {
  if (!can("keys")) return <p class="needs">Managing keys: {needs("keys")}</p>;
  if (scoped()) return <p class="needs">Managing keys is {EVERY_NOTE}.</p>;
  return <KeyAdmin />;
}

function KeyAdmin() {
  const [list, reload] = useLoad(() => get("/admin/keys"), []);
  const [created, setCreated] = useState(null);
  const [revoking, setRevoking] = useState(null);
  const [revoked, setRevoked] = useState("");
  const keys = list.data?.keys;
  return (
    <div class="keys">
      <p class="small muted">
        Each person or system gets a key of its own, with the least role it needs and, if it works on some pipelines only, those. A key is
        sent as <code>Authorization: Bearer rdk_…</code>; every action it takes is audited under <code>key:&lt;name&gt;</code>.
      </p>
      {created && <NewToken created={created} onDone={() => setCreated(null)} />}
      <CreateKey
        onCreated={(k) => {
          setCreated(k);
          reload();
        }}
      />
      <h2 id="h-keys">Keys</h2>
      {revoked && (
        <p role="status" class="result">
          {revoked}
        </p>
      )}
      <ErrorBox error={list.error} />
      {!keys && !list.error && <p aria-busy="true">Loading…</p>}
      {keys && (
        <Table
          label="API keys"
          class="rows keylist"
          srCaption="API keys, newest first"
          empty="No keys yet."
          rows={keys}
          rowKey={(k) => k.id}
          rowClass={(k) => (k.revoked_at ? "revoked" : "")}
          columns={[
            { head: "Name", rowHeader: true, cell: (k) => k.name },
            { head: "Role", cell: (k) => k.role },
            { head: "Pipelines", cell: (k) => (k.pipelines ? k.pipelines.join(", ") : "all") },
            {
              head: "Created",
              cell: (k) => (
                <>
                  <Time ms={k.created_at} />
                  <br />
                  <span class="muted small">by {k.created_by}</span>
                </>
              ),
            },
            { head: "Expires", cell: (k) => (k.expires_at ? <Time ms={k.expires_at} /> : "never") },
            { head: "Last used", cell: (k) => (k.last_used_at ? <Time ms={k.last_used_at} /> : "never") },
            {
              head: "Revoked",
              cell: (k) =>
                k.revoked_at ? (
                  <>
                    <Time ms={k.revoked_at} />
                    <br />
                    <span class="muted small">by {k.revoked_by ?? "—"}</span>
                  </>
                ) : (
                  <button type="button" onClick={() => setRevoking(k)}>
                    Revoke…<span class="sr-only"> the key {k.name}</span>
                  </button>
                ),
            },
          ]}
        />
      )}
      {revoking && (
        <RevokeDialog
          apiKey={revoking}
          onClose={(done) => {
            setRevoking(null);
            if (done) {
              setRevoked(`Key ${revoking.name} revoked: requests with it are refused from now on.`);
              reload();
            }
          }}
        />
      )}
    </div>
  );
}

// CreateKey is the form of a new key: name, role, pipelines (none: every
// pipeline) and an optional expiry.
function CreateKey({ onCreated }) {
  const names = useSignal(pipelines) ?? [];
  const inUtc = useSignal(utc);
  const [f, setF] = useState({ name: "", role: "viewer", expires: "" });
  const [chosen, setChosen] = useState([]);
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    const body = { name: f.name.trim(), role: f.role };
    if (chosen.length) body.pipelines = chosen;
    if (f.expires) body.expires_at = fromInput(f.expires, inUtc);
    try {
      onCreated(await post("/admin/keys", body));
      setF({ name: "", role: "viewer", expires: "" });
      setChosen([]);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const toggle = (n) => setChosen(chosen.includes(n) ? chosen.filter((x) => x !== n) : [...chosen, n]);
  return (
    <form class="create-key" onSubmit={submit} aria-labelledby="h-create">
      <h2 id="h-create">Create a key</h2>
      <div class="form-grid">
        <label>
          Name <span class="muted small">(lower case, digits, . _ -)</span>
          <input type="text" name="name" required maxLength={64} pattern={NAME} autoComplete="off" value={f.name} onInput={(e) => setF({ ...f, name: e.currentTarget.value })} />
        </label>
        <label>
          Role
          <select name="role" value={f.role} onChange={(e) => setF({ ...f, role: e.currentTarget.value })}>
            {ROLES.map(([r]) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <label>
          Expires <span class="muted small">(optional, {inUtc ? "UTC" : "local"})</span>
          <input type="datetime-local" name="expires" value={f.expires} onInput={(e) => setF({ ...f, expires: e.currentTarget.value })} />
        </label>
      </div>
      <p class="small muted">
        {ROLES.find(([r]) => r === f.role)[1]}
      </p>
      {names.length > 0 && (
        <fieldset>
          <legend>Limit to pipelines</legend>
          <p class="small muted">None ticked: every pipeline. A key limited to pipelines sees and acts on their rows alone.</p>
          <div class="checks">
            {names.map((n) => (
              <label key={n}>
                <input type="checkbox" name="pipelines" value={n} checked={chosen.includes(n)} onChange={() => toggle(n)} /> {n}
              </label>
            ))}
          </div>
        </fieldset>
      )}
      <ErrorBox error={error} />
      <button type="submit" class="primary" disabled={busy}>
        {busy ? "Creating…" : "Create key"}
      </button>
    </form>
  );
}

// NewToken shows a new key's token, this once: the worker keeps only a
// hash of its secret.
function NewToken({ created, onDone }) {
  return (
    <section class="result new-token" role="status" aria-labelledby="h-token">
      <h2 id="h-token">Key {created.name} created</h2>
      <p>
        <strong>Its token is shown this once</strong>: copy it now and hand it over safely. The worker keeps only a hash of it; a lost
        token means a new key.
      </p>
      <code class="token">{created.token}</code>
      <p>
        <Copy text={created.token} label="Copy the token" />{" "}
        <button type="button" onClick={onDone}>
          Done, hide it
        </button>
      </p>
    </section>
  );
}

// RevokeDialog revokes a key after a confirmation.
function RevokeDialog({ apiKey, onClose }) {
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const self = me.value?.principal === "key:" + apiKey.name;
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      await post(`/admin/keys/${encodeURIComponent(apiKey.id)}/revoke`, {});
      onClose(true);
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  return (
    <Dialog title={`Revoke the key ${apiKey.name}?`} onClose={() => onClose(false)}>
      <p>
        Every request with it is refused from now on (<code>KEY_REVOKED</code>). A revoked key cannot be restored; its name stays taken.
      </p>
      {self && (
        <p class="warn" role="note">
          This is the key this tab signed in with: the tab signs out.
        </p>
      )}
      <ErrorBox error={error} />
      <div class="dialog-buttons">
        <button type="button" class="primary danger" disabled={busy} onClick={run}>
          {busy ? "Revoking…" : "Revoke"}
        </button>
        <button type="button" onClick={() => onClose(false)}>
          Cancel
        </button>
      </div>
    </Dialog>
  );
}
