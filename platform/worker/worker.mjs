// redrive's entry module: one Go instance per isolate.
//
// syumai/workers' generated worker.mjs starts a new Go instance and reruns
// main() on every fetch, queue and cron call. This module starts it once and
// dispatches each call to the running instance. The Go side reads `env` and
// `ctx` from the shared `context` object; env is the same for every call in
// an isolate, and redrive never uses ctx (no waitUntil), so concurrent calls
// cannot observe each other's state. If the Go program ever exits (a panic),
// the next call starts a fresh instance.
import "./wasm_exec.js";
import { connect } from "cloudflare:sockets";
import mod from "./app.wasm";
import { queueBody } from "./queuebody.mjs";
import { headerList, headerPairs } from "./headers.mjs";
import { makeAnswers } from "./answers.mjs";
import { gated, readBody } from "./body.mjs";

globalThis.tryCatch = (fn) => {
  try {
    return { result: fn() };
  } catch (e) {
    return { error: e };
  }
};

let running; // Promise of the context object of the live instance

// Fetch calls waiting for Go's answer, with their time limit (answers.mjs).
const answers = makeAnswers();

function instance(env, ctx) {
  if (running === undefined) {
    const context = { env, ctx, connect, binding: { ...answers.binding } };
    running = new Promise((resolve, reject) => {
      const go = new Go();
      const inst = new WebAssembly.Instance(mod, {
        ...go.importObject,
        workers: { ready: () => resolve(context) },
      });
      go.run(inst, context).then(
        () => { running = undefined; reject(new Error("Go program exited")); },
        (err) => { running = undefined; reject(err); },
      );
    });
  }
  return running.then((context) => {
    context.env = env;
    context.ctx = ctx;
    return context.binding;
  });
}

export default {
  // Requests go to platform.Serve (platform/serve.go): method, URL and
  // headers (a header list, headers.mjs) as one string, the body as one
  // Uint8Array; the buffered response comes back once, to binding.respond.
  //
  // A request with a body is first shown to Go without it (gated,
  // body.mjs): one its route refuses for its credentials, or that reaches
  // no route, is answered without its body being read.
  async fetch(req, env, ctx) {
    const binding = await instance(env, ctx);
    const head = req.method + "\n" + req.url + "\n" + headerList(req.headers);
    const refused = gated(binding, req, head);
    if (refused !== null) return refused;
    const body = await readBody(req, binding.maxRequestBody + 1);
    const res = await answers.call((id) => binding.serveHTTP(id, head, body));
    if (res === null) return answers.timeoutResponse(req);
    // In this call's own I/O context (see answers.mjs).
    return new Response(res.body, { status: res.status, headers: headerPairs(res.headers) });
  },
  async scheduled(event, env, ctx) {
    return (await instance(env, ctx)).runScheduler(event);
  },
  // Batches go to platform.Consume (platform/consume.go): the messages
  // cross into Go as one JSON description (bytes bodies beside it), and the
  // consumer's ack() and retry() calls come back as one list, made here on
  // the runtime's messages in the order Go made them (one ackAll() when Go
  // acked every message and retried none).
  async queue(batch, env, ctx) {
    const binding = await instance(env, ctx);
    const msgs = batch.messages;
    const desc = new Array(msgs.length);
    const blobs = new Array(msgs.length);
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i];
      const [type, text] = queueBody(m.body);
      const bytes = type === "bytes";
      blobs[i] = bytes ? text : null;
      desc[i] = { id: m.id, attempts: m.attempts, timestamp: m.timestamp.getTime(), type, body: bytes ? null : text };
    }
    const res = await new Promise((resolve, reject) =>
      binding.consumeBatch(batch.queue, JSON.stringify(desc), blobs, resolve, reject));
    if (res.all === true) batch.ackAll();
    else for (const [i, what, delaySeconds] of JSON.parse(res.settle)) {
      if (what === "ack") msgs[i].ack();
      else msgs[i].retry(delaySeconds > 0 ? { delaySeconds } : undefined);
    }
    if (res.error !== "") throw new Error(res.error);
  },
};
