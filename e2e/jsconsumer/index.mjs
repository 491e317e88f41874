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

async function consume(batch, env) {
  ready ??= env.DB.prepare(schema).run().catch((err) => {
    ready = undefined;
    throw err;
  });
  await ready;
  const now = Date.now();
  const insert = env.DB.prepare(`INSERT INTO e2e_js_deliveries(queue, message_id, attempts, typeof_body, body_json_or_text, received_at)
    VALUES (?, ?, ?, ?, ?, ?)`);
  await env.DB.batch(batch.messages.map((m) => insert.bind(batch.queue, m.id, m.attempts, ...describe(m.body), now)));
  for (const m of batch.messages) {
    if (wantsFailure(m.body)) m.retry();
    else m.ack();
  }
}

export default {
  async fetch() {
    return new Response("e2e JavaScript consumer: queues only\n", { status: 404 });
  },
  async queue(batch, env) {
    if (batch.queue === "e2e-js-produce") return produce(batch, env);
    return consume(batch, env);
  },
};
