// The admin API, with the credentials of this tab. A named key (the usual
// way) or the pair of API_KEY and ADMIN_SECRET lives in sessionStorage only
// (gone when the tab closes) and travels in headers only (Authorization:
// Bearer, or X-API-Key and X-Admin-Secret, with credentials "omit"); never
// in a URL, a cookie or a log. Behind Cloudflare Access the tab keeps no
// credential: the browser's own Access cookie reaches the worker (Access
// adds its assertion), so requests go with credentials "same-origin".
const TOKEN = "redrive.token";
const KEY = "redrive.apiKey";
const SECRET = "redrive.adminSecret";

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code || "HTTP_" + status;
  }
}

let onSignedOut = () => {};
export function whenSignedOut(f) {
  onSignedOut = f;
}

// throughAccess is true once GET /admin/whoami answered without a
// credential of the tab's: the page is behind Cloudflare Access.
let throughAccess = false;

// mode is how this tab signs its requests: "key", "pair", "access", or ""
// (signed out).
export function mode() {
  if (sessionStorage.getItem(TOKEN)) return "key";
  if (sessionStorage.getItem(KEY) && sessionStorage.getItem(SECRET)) return "pair";
  return throughAccess ? "access" : "";
}

export function signedIn() {
  return mode() !== "";
}

// signIn keeps a named key's token (one argument) or the pair.
export function signIn(key, secret) {
  signOut();
  if (secret === undefined) sessionStorage.setItem(TOKEN, key);
  else {
    sessionStorage.setItem(KEY, key);
    sessionStorage.setItem(SECRET, secret);
  }
}

export function signOut() {
  sessionStorage.removeItem(TOKEN);
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(SECRET);
  throughAccess = false;
}

// What a refused credential means, in the operator's words.
// m is the tab's mode when the credential was sent.
export function authMessage(e, m = mode()) {
  switch (e.code) {
    case "UNAUTHORIZED":
      return m === "pair" ? "The API key is wrong." : m === "key" ? "The worker refused the key." : "The worker did not accept this tab's sign-in.";
    case "FORBIDDEN":
      return secretRefused(e) ? "The admin secret is wrong." : e.message;
    case "MALFORMED_CREDENTIAL":
      return "The credential is not a bearer token.";
    case "MALFORMED_KEY":
      return "That is not a redrive key: a key reads rdk_, 16 hex digits, _ and its secret.";
    case "INVALID_KEY":
      return "No key matches that token: it is wrong, or its key was deleted.";
    case "KEY_REVOKED":
      return "This key has been revoked.";
    case "KEY_EXPIRED":
      return "This key has expired.";
    case "MALFORMED_ACCESS_TOKEN":
    case "INVALID_ACCESS_TOKEN":
      return "Cloudflare Access's sign-in was not accepted by the worker.";
    case "ACCESS_TOKEN_EXPIRED":
      return "The Cloudflare Access session has expired: reload the page to sign in again.";
    case "RATE_LIMITED":
      return "Too many requests with this credential: wait a moment and try again.";
    case "NOT_CONFIGURED":
      return "The worker has no API_KEY or ADMIN_SECRET set.";
  }
  return e.message;
}

// secretRefused: the pair's X-Admin-Secret was refused (a 403, unlike
// every other refused credential).
function secretRefused(e) {
  return e.status === 403 && /X-Admin-Secret/.test(e.message);
}

// A read that has not answered within READ_TIMEOUT_MS is asked once more
// (a GET changes nothing, so repeating it is safe); a second silence is a
// TIMEOUT error the page shows, rather than "Loading…" for ever. Writes wait
// as long as the worker takes: their outcome must not be guessed.
const READ_TIMEOUT_MS = 8_000;

// auth is the headers and fetch credentials mode of this tab's credential.
function auth() {
  const token = sessionStorage.getItem(TOKEN);
  if (token) return { headers: { Authorization: "Bearer " + token }, credentials: "omit" };
  const key = sessionStorage.getItem(KEY);
  const secret = sessionStorage.getItem(SECRET);
  if (key && secret) return { headers: { "X-API-Key": key, "X-Admin-Secret": secret }, credentials: "omit" };
  if (throughAccess) return { headers: {}, credentials: "same-origin" };
  throw new ApiError(401, "UNAUTHORIZED", "Signed out.");
}

// refused signs the tab out when err is a refused credential: any 401, and
// the pair's refused secret (403). Any other 403 is what the caller's role
// or scope may not do: the page shows it where it happened.
function refused(err) {
  if (err.status === 401 || (mode() === "pair" && secretRefused(err))) {
    const msg = authMessage(err);
    signOut();
    onSignedOut(msg);
  }
}

// request sends one call and returns the envelope's data, or throws an
// ApiError with the envelope's code and message. A refused credential
// signs the tab out.
export async function request(method, path, body) {
  const a = auth();
  const headers = { ...a.headers };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const read = method === "GET";
  let res;
  for (let attempt = 1; !res; attempt++) {
    try {
      res = await fetch(path, {
        method,
        headers,
        body: body === undefined ? undefined : JSON.stringify(body),
        cache: "no-store",
        credentials: a.credentials,
        referrerPolicy: "no-referrer",
        signal: read ? AbortSignal.timeout(READ_TIMEOUT_MS) : undefined,
      });
    } catch (e) {
      if (e?.name !== "TimeoutError") throw new ApiError(0, "NETWORK", "The worker did not answer (network error).");
      if (attempt === 2) throw new ApiError(0, "TIMEOUT", `The worker did not answer within ${READ_TIMEOUT_MS / 1000} s, twice.`);
    }
  }
  let env = null;
  try {
    env = await res.json();
  } catch (e) {
    if (e?.name === "TimeoutError") throw new ApiError(0, "TIMEOUT", `The worker's answer did not arrive within ${READ_TIMEOUT_MS / 1000} s.`);
    /* not an envelope */
  }
  if (!res.ok || !env || !env.success) {
    const err = new ApiError(res.status, env?.error?.code, env?.error?.message);
    refused(err);
    throw err;
  }
  return env.data;
}

export const get = (path, params) => request("GET", path + query(params));
export const post = (path, body) => request("POST", path, body);

// probeAccess asks GET /admin/whoami with no credential of the tab's, as
// the page loads: an answer means Cloudflare Access signed the browser in
// (its cookie goes with the request); the tab then uses it. Anything else
// (401 without Access, a network error) is null: the sign-in form shows.
export async function probeAccess() {
  try {
    const res = await fetch("/admin/whoami", {
      cache: "no-store",
      credentials: "same-origin",
      referrerPolicy: "no-referrer",
      signal: AbortSignal.timeout(READ_TIMEOUT_MS),
    });
    const env = await res.json();
    if (!res.ok || !env?.success) return null;
    throughAccess = true;
    return env.data;
  } catch {
    return null;
  }
}

// query builds ?a=b from the params that are set.
export function query(params) {
  if (!params) return "";
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const s = q.toString();
  return s ? "?" + s : "";
}

// exportRows downloads every row of the list filter as format (csv or
// ndjson): GET /admin/dlq/export, following X-Next-Cursor (up to 5,000 rows
// or about 8 MiB a request); a CSV part after the first loses its header
// row. raw adds the bodies (include_raw, the read_body permission). It
// returns a Blob and the number of rows.
export async function exportRows(filter, format, raw) {
  const parts = [];
  let cursor, rows = 0;
  for (let i = 0; i < 1000; i++) {
    const a = auth();
    let res;
    try {
      res = await fetch("/admin/dlq/export" + query({ ...filter, format, include_raw: raw ? "true" : undefined, cursor }), {
        headers: a.headers,
        cache: "no-store",
        credentials: a.credentials,
        referrerPolicy: "no-referrer",
      });
    } catch {
      throw new ApiError(0, "NETWORK", "The worker did not answer (network error).");
    }
    if (!res.ok) {
      let env = null;
      try {
        env = await res.json();
      } catch {
        /* not an envelope */
      }
      const err = new ApiError(res.status, env?.error?.code, env?.error?.message);
      refused(err);
      throw err;
    }
    let text = await res.text();
    if (format === "csv" && parts.length > 0) text = text.slice(text.indexOf("\r\n") + 2);
    parts.push(text);
    rows += Number(res.headers.get("X-Export-Rows") || 0);
    cursor = res.headers.get("X-Next-Cursor");
    if (!cursor) break;
  }
  const type = format === "csv" ? "text/csv" : "application/x-ndjson";
  return { blob: new Blob(parts, { type }), rows };
}
