// redrive-report.mjs: report failed attempts of queue messages to redrive
// (POST /admin/attempts), for a Cloudflare Worker that consumes a pipeline's
// main queue itself (PIPELINES entry with "consumer": "external"). When the
// message reaches the dead-letter queue, redrive's row carries the reported
// attempts as its history, failure reason and signature. ES module, no
// dependencies; see docs/pipelines.md.
//
//   import { reportFailures } from "./redrive-report.mjs";
//   // in queue(batch, env, ctx), for each message that failed:
//   failures.push({ queue: batch.queue, message_id: msg.id, attempt: msg.attempts,
//                   error: String(err.message), class: "permanent" });
//   msg.retry();
//   // once per batch, through a service binding (or a base URL):
//   ctx.waitUntil(reportFailures(env.REDRIVE, env.REPORT_TOKEN, failures));
//
// reportFailures never throws and never rejects: a report is best effort and
// must not fail the consumer (without one, the row carries Queues' delivery
// count and "no attempt record").

/** The most attempts one request carries (the route's limit). */
export const MAX_PER_REQUEST = 100;

/** The longest error text the route accepts, in UTF-8 bytes. */
export const MAX_ERROR_BYTES = 2000;

const CLASSES = new Set(["transient", "rate_limited", "permanent", "breaker_open", "quota", "config", "unknown"]);

/**
 * clip cuts text to at most max UTF-8 bytes, on a character boundary.
 * @param {string} text
 * @param {number} max
 */
export function clip(text, max = MAX_ERROR_BYTES) {
  const s = String(text ?? "");
  const bytes = new TextEncoder().encode(s);
  if (bytes.length <= max) return s;
  let end = max;
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end--; // not inside a character
  return new TextDecoder().decode(bytes.subarray(0, end));
}

/**
 * entry turns one failure into the route's shape: attempt at least 1, the
 * error as non-empty text of at most MAX_ERROR_BYTES bytes, an unknown class
 * left out (redrive then records "unknown").
 */
function entry(f) {
  const e = {
    queue: String(f.queue),
    message_id: String(f.message_id ?? f.messageId ?? f.id),
    attempt: Math.max(1, Math.trunc(Number(f.attempt ?? f.attempts) || 1)),
    error: clip(f.error instanceof Error ? f.error.message : f.error) || "error",
  };
  if (CLASSES.has(f.class)) e.class = f.class;
  return e;
}

/**
 * reportFailures sends failures to redrive, at most MAX_PER_REQUEST per
 * request, and resolves to {ok, status, recorded}: ok when every request
 * was accepted (202); status is the last non-202 status (0 when a request
 * could not be made), else 202; recorded counts the attempts redrive
 * recorded. It never throws.
 *
 * @param {{fetch: Function} | string | URL} target a service binding to
 *   redrive (env.REDRIVE, anything with a fetch method) or redrive's base
 *   URL ("https://redrive.example.workers.dev").
 * @param {string} token the REPORT_TOKEN secret (sent as a bearer token).
 * @param {Array<{queue: string, message_id: string, attempt: number,
 *   error: string|Error, class?: string}>} failures
 * @param {{timeoutMs?: number}} [options] timeoutMs aborts a request that
 *   takes longer (default 5000).
 * @returns {Promise<{ok: boolean, status: number, recorded: number}>}
 */
export async function reportFailures(target, token, failures, options = {}) {
  let ok = true;
  let status = 202;
  let recorded = 0;
  try {
    const list = Array.from(failures ?? [], entry);
    if (list.length === 0) return { ok: true, status: 202, recorded: 0 };
    const base = typeof target === "string" || target instanceof URL ? String(target) : "https://redrive";
    const url = new URL("/admin/attempts", base).toString();
    const send = typeof target?.fetch === "function" ? (req) => target.fetch(req) : (req) => fetch(req);
    for (let i = 0; i < list.length; i += MAX_PER_REQUEST) {
      const body = JSON.stringify({ attempts: list.slice(i, i + MAX_PER_REQUEST) });
      try {
        const req = new Request(url, {
          method: "POST",
          headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
          body,
          signal: AbortSignal.timeout(options.timeoutMs ?? 5000),
        });
        const res = await send(req);
        if (res.status === 202) {
          const json = await res.json().catch(() => null);
          recorded += Number(json?.data?.recorded) || 0;
        } else {
          ok = false;
          status = res.status;
          try {
            await res.body?.cancel();
          } catch {
            // the status says enough
          }
        }
      } catch {
        ok = false;
        status = 0;
      }
    }
  } catch {
    return { ok: false, status: 0, recorded };
  }
  return { ok, status, recorded };
}
