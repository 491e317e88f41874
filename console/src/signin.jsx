import { useState } from "preact/hooks";
import { authMessage, get, signIn, signOut } from "./api.js";
import { me } from "./state.js";

// SignIn asks for a named key (the usual way) or the worker's pair of
// API_KEY and ADMIN_SECRET, checks it with GET /admin/whoami and keeps it
// in sessionStorage. Behind Cloudflare Access the page never shows it:
// main.jsx asks whoami first with the browser's Access sign-in (probing
// while it does).
export function SignIn({ probing, message, onSignedIn }) {
  const [token, setToken] = useState("");
  const [key, setKey] = useState("");
  const [secret, setSecret] = useState("");
  const [error, setError] = useState({ text: message || "", form: "key" });
  const [busy, setBusy] = useState(false);
  const attempt = async (form, keep) => {
    setBusy(true);
    setError({ text: "", form });
    keep();
    try {
      const who = await get("/admin/whoami");
      if (!who.permissions.includes("read")) {
        signOut();
        setError({ text: `This credential's role (${who.role}) cannot read the dead letters: the console needs the read permission.`, form });
        return;
      }
      me.value = who;
      onSignedIn();
    } catch (err) {
      signOut();
      setError({ text: authMessage(err, form), form });
    } finally {
      setBusy(false);
    }
  };
  const submitKey = (e) => {
    e.preventDefault();
    attempt("key", () => signIn(token.trim()));
  };
  const submitPair = (e) => {
    e.preventDefault();
    attempt("pair", () => signIn(key, secret));
  };
  const errorBox = (form) =>
    error.text &&
    error.form === form && (
      <p class="error" role="alert" id="signin-error">
        {error.text}
      </p>
    );
  return (
    <main id="main" class="signin">
      <h1>redrive console</h1>
      {probing ? (
        <p aria-busy="true" class="muted">
          Checking for a Cloudflare Access sign-in…
        </p>
      ) : (
        <>
          <form onSubmit={submitKey} aria-labelledby="h-key" aria-describedby="key-help">
            <h2 id="h-key">Sign in with a key</h2>
            <p id="key-help" class="small muted">
              Your named key (<code>rdk_…</code>, from an admin). It stays in this tab (sessionStorage) until it closes.
            </p>
            <label class="block">
              Key
              <input type="password" name="key" autoComplete="off" required value={token} onInput={(e) => setToken(e.currentTarget.value)} />
            </label>
            {errorBox("key")}
            <button type="submit" class="primary" disabled={busy}>
              {busy && error.form === "key" ? "Signing in…" : "Sign in"}
            </button>
          </form>
          <form class="pair" onSubmit={submitPair} aria-labelledby="h-pair" aria-describedby="signin-help">
            <h2 id="h-pair">Or with the worker's pair</h2>
            <p id="signin-help" class="small muted">
              The worker's <code>API_KEY</code> and <code>ADMIN_SECRET</code> (an admin). They stay in this tab (sessionStorage) until it closes.
            </p>
            <label class="block">
              API key
              <input type="password" name="api-key" autoComplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
            </label>
            <label class="block">
              Admin secret
              <input type="password" name="admin-secret" autoComplete="off" required value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
            </label>
            {errorBox("pair")}
            <button type="submit" disabled={busy}>
              {busy && error.form === "pair" ? "Signing in…" : "Sign in with the pair"}
            </button>
          </form>
        </>
      )}
    </main>
  );
}
