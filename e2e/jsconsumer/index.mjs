// A JavaScript producer and consumer for the end-to-end tests (see
// wrangler.jsonc here). It is what redrive's replay must satisfy: a consumer
// that receives a replayed message exactly as the producer sent it.
//
// e2e-js-produce: each message is a JSON command {content_type, body} (body is
//   the text form: JSON text for json/default, the string for text, base64 for
//   bytes); the worker sends that body to e2e-js the way a JavaScript producer
//   does: send(value, {contentType: "json"}), send(value) (the default),
//   send(string, {contentType: "text"}), send(Uint8Array, {contentType: "bytes"}).
// e2e-js: every delivery is recorded in e2e_js_deliveries (typeof the body and
//   its exact value), then retried when the body asks for it (so it reaches the
//   DLQ), else acked. Asking: an object with fail === true, an array or a string
//   containing "FAIL", bytes starting with 0xff.
// e2e-orders: the orders pipeline's consumer (PIPELINES "orders", consumer
//   external). Every delivery is recorded the same way; an order whose body
//   asks for it ({"order":{"id":..,"customer":..,"fail":"card declined"}})
//   fails: the failure is reported to redrive (class order.class, else
//   permanent; unless order.report === false) and the message retried, so it
//   reaches e2e-orders-dlq after its last attempt carrying its history. An
//   order with fail_until (Unix ms) fails only until then (a flaky failure
//   that a later replay gets past).

import { reportFailures } from "../../clients/js/redrive-report.mjs";

const schema = `CREATE TABLE IF NOT EXISTS e2e_js_deliveries (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  queue TEXT NOT NULL,
  message_id TEXT NOT NULL,
  attempts INTEGER NOT NULL,
  typeof_body TEXT NOT NULL,        -- typeof body, or "ArrayBuffer"
  body_json_or_text TEXT NOT NULL,  -- JSON.stringify for objects, the string, base64 for bytes
  received_at INTEGER NOT NULL
)`;

let ready; // Promise of the table, once per isolate

function base64(bytes) {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

function unbase64(text) {
  const s = atob(text);
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

// describe returns [typeof_body, body_json_or_text].
function describe(body) {
  if (body instanceof ArrayBuffer) return ["ArrayBuffer", base64(new Uint8Array(body))];
  if (typeof body === "string") return ["string", body];
  if (typeof body === "object") return ["object", JSON.stringify(body)];
  return [typeof body, String(body)];
}

function wantsFailure(body) {
  if (body instanceof ArrayBuffer) return new Uint8Array(body)[0] === 0xff;
  if (typeof body === "string") return body.includes("FAIL");
  if (Array.isArray(body)) return body.includes("FAIL");
  return body !== null && typeof body === "object" && body.fail === true;
}

async function produce(batch, env) {
  for (const msg of batch.messages) {
    const cmd = JSON.parse(msg.body);
    switch (cmd.content_type) {
      case "json":
        await env.JS_QUEUE.send(JSON.parse(cmd.body), { contentType: "json" });
        break;
      case "default": // what a TypeScript producer's send(obj) does
        await env.JS_QUEUE.send(JSON.parse(cmd.body));
        break;
      case "text":
        await env.JS_QUEUE.send(cmd.body, { contentType: "text" });
        break;
      case "bytes":
        await env.JS_QUEUE.send(unbase64(cmd.body), { contentType: "bytes" });
        break;
      default:
        throw new Error(`unknown content_type ${cmd.content_type}`);
    }
    msg.ack();
  }
}

// record writes every delivery of the batch to e2e_js_deliveries.
async function record(batch, env) {
  ready ??= env.DB.prepare(schema).run().catch((err) => {
    ready = undefined;
    throw err;
  });
  await ready;
  const now = Date.now();
  const insert = env.DB.prepare(`INSERT INTO e2e_js_deliveries(queue, message_id, attempts, typeof_body, body_json_or_text, received_at)
    VALUES (?, ?, ?, ?, ?, ?)`);
  await env.DB.batch(batch.messages.map((m) => insert.bind(batch.queue, m.id, m.attempts, ...describe(m.body), now)));
}

async function consume(batch, env) {
  await record(batch, env);
  for (const m of batch.messages) {
    if (wantsFailure(m.body)) m.retry();
    else m.ack();
  }
}

// orderFailure is why an orders message fails, or null when it does not.
function orderFailure(body) {
  const order = body !== null && typeof body === "object" ? body.order : null;
  if (order === null || typeof order !== "object" || typeof order.fail !== "string" || order.fail === "") return null;
  // A flaky order fails only until fail_until (Unix ms): replayed later, it succeeds.
  if (typeof order.fail_until === "number" && Date.now() >= order.fail_until) return null;
  return order;
}

async function consumeOrders(batch, env) {
  await record(batch, env);
  const failures = [];
  for (const m of batch.messages) {
    const order = orderFailure(m.body);
    if (order === null) {
      m.ack();
      continue;
    }
    if (order.report !== false) {
      failures.push({ queue: batch.queue, message_id: m.id, attempt: m.attempts,
        error: `${order.fail} (order ${order.id})`, class: order.class ?? "permanent" });
    }
    m.retry();
  }
  // Awaited, not waitUntil: the report of the last attempt must be stored
  // before the message can move to the DLQ (where redrive joins it to the
  // row). reportFailures never throws: a failed report leaves the row with
  // Queues' delivery count and "no attempt record".
  const res = await reportFailures(env.REDRIVE, env.REPORT_TOKEN, failures);
  if (!res.ok) console.log(JSON.stringify({ msg: "orders: failure report refused", status: res.status }));
}

export default {
  async fetch() {
    return new Response("e2e JavaScript consumer: queues only\n", { status: 404 });
  },
  async queue(batch, env) {
    if (batch.queue === "e2e-js-produce") return produce(batch, env);
    if (batch.queue === "e2e-orders") return consumeOrders(batch, env);
    return consume(batch, env);
  },
};
