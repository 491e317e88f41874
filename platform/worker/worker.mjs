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

globalThis.tryCatch = (fn) => {
  try {
    return { result: fn() };
  } catch (e) {
    return { error: e };
  }
};

let running; // Promise of the context object of the live instance

function instance(env, ctx) {
  if (running === undefined) {
    const context = { env, ctx, connect, binding: {} };
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
  async fetch(req, env, ctx) {
    return (await instance(env, ctx)).handleRequest(req);
  },
  async scheduled(event, env, ctx) {
    return (await instance(env, ctx)).runScheduler(event);
  },
  async queue(batch, env, ctx) {
    return (await instance(env, ctx)).handleQueueMessageBatch(batch);
  },
};
