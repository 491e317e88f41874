// The admin API, with the credentials of this tab. They live in
// sessionStorage only (gone when the tab closes) and travel in the two
// headers; never in a URL, a cookie or a log.
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

export function signedIn() {
  return !!(sessionStorage.getItem(KEY) && sessionStorage.getItem(SECRET));
}

export function signIn(key, secret) {
  sessionStorage.setItem(KEY, key);
  sessionStorage.setItem(SECRET, secret);
}

export function signOut() {
  sessionStorage.removeItem(KEY);
  sessionStorage.removeItem(SECRET);
}

// What a refused credential means, in the operator's words.
export function authMessage(e) {
  switch (e.code) {
    case "UNAUTHORIZED":
      return "The API key is wrong.";
    case "FORBIDDEN":
      return "The admin secret is wrong.";
    case "NOT_CONFIGURED":
      return "The worker has no API_KEY or ADMIN_SECRET set.";
  }
  return e.message;
}

// A read that has not answered within READ_TIMEOUT_MS is asked once more
// (a GET changes nothing, so repeating it is safe); a second silence is a
// TIMEOUT error the page shows, rather than "Loading…" for ever. Writes wait
// as long as the worker takes: their outcome must not be guessed.
const READ_TIMEOUT_MS = 8_000;

// request sends one call and returns the envelope's data, or throws an
// ApiError with the envelope's code and message. A refused credential
// signs the tab out.
export async function request(method, path, body) {
  const key = sessionStorage.getItem(KEY);
  const secret = sessionStorage.getItem(SECRET);
  if (!key || !secret) throw new ApiError(401, "UNAUTHORIZED", "Signed out.");
  const headers = { "X-API-Key": key, "X-Admin-Secret": secret };
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
        credentials: "omit",
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
    if (res.status === 401 || res.status === 403) {
      signOut();
      onSignedOut(authMessage(err));
    }
    throw err;
  }
  return env.data;
}

export const get = (path, params) => request("GET", path + query(params));
export const post = (path, body) => request("POST", path, body);

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
// or about 8 MiB a request); a CSV part after the first loses its header row. It returns a
// Blob and the number of rows.
export async function exportRows(filter, format) {
  const key = sessionStorage.getItem(KEY);
  const secret = sessionStorage.getItem(SECRET);
  if (!key || !secret) throw new ApiError(401, "UNAUTHORIZED", "Signed out.");
  const parts = [];
  let cursor, rows = 0;
  for (let i = 0; i < 1000; i++) {
    let res;
    try {
      res = await fetch("/admin/dlq/export" + query({ ...filter, format, cursor }), {
        headers: { "X-API-Key": key, "X-Admin-Secret": secret },
        cache: "no-store",
        credentials: "omit",
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
      throw new ApiError(res.status, env?.error?.code, env?.error?.message);
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
