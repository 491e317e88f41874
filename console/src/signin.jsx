import { useState } from "preact/hooks";
import { authMessage, get, signIn, signOut } from "./api.js";

// SignIn asks for the API key and the admin secret, checks them with one
// cheap call (GET /admin/alerts) and keeps them in sessionStorage.
export function SignIn({ message, onSignedIn }) {
  const [key, setKey] = useState("");
  const [secret, setSecret] = useState("");
  const [error, setError] = useState(message || "");
  const [busy, setBusy] = useState(false);
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError("");
    signIn(key, secret);
    try {
      await get("/admin/alerts");
      onSignedIn();
    } catch (err) {
      signOut();
      setError(authMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <main id="main" class="signin">
      <h1>redrive console</h1>
      <form onSubmit={submit} aria-describedby="signin-help">
        <p id="signin-help" class="small muted">
          The worker's <code>API_KEY</code> and <code>ADMIN_SECRET</code>. They stay in this tab (sessionStorage) until it closes.
        </p>
        <label class="block">
          API key
          <input type="password" name="api-key" autoComplete="off" required value={key} onInput={(e) => setKey(e.currentTarget.value)} />
        </label>
        <label class="block">
          Admin secret
          <input type="password" name="admin-secret" autoComplete="off" required value={secret} onInput={(e) => setSecret(e.currentTarget.value)} />
        </label>
        {error && (
          <p class="error" role="alert" id="signin-error">
            {error}
          </p>
        )}
        <button type="submit" class="primary" disabled={busy}>
          {busy ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
