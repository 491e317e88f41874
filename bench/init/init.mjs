// Start-up cost of a build of the worker, per new isolate, in V8 (Node).
//
//   [ISOLATES=30] node bench/init/init.mjs [NAME=]DIR...
//
// Each DIR holds app.wasm and its wasm_exec.js (make bench-init fills
// bench-results/wasm-go and bench-results/wasm-tinygo).
//
// As in workerd, the module is compiled once and each isolate instantiates
// it: every run is a new worker thread (a new V8 isolate) that receives the
// compiled WebAssembly.Module, loads wasm_exec.js, and then does what
// platform/worker/worker.mjs does on an isolate's first call: a new Go
// instance, main() until it calls workers.ready(). It then times 200 calls of
// a route that touches no binding (GET /nope, the 404 envelope) through
// binding.serveHTTP, as worker.mjs makes them, and then starts a second Go
// instance in the same (now warm) isolate. Prints one JSON object; times
// are wall-clock except init_cpu (user+system, all threads).
import { readFileSync } from "node:fs";
import { gzipSync } from "node:zlib";
import { Worker, isMainThread, parentPort, workerData } from "node:worker_threads";
import { pathToFileURL } from "node:url";
import path from "node:path";

const CALLS = 200;

if (isMainThread) {
  const args = process.argv.slice(2);
  const n = Number(process.env.ISOLATES ?? 30);
  const out = {};
  for (const a of args.length ? args : ["build"]) {
    const [name, d] = a.includes("=") ? a.split("=", 2) : [path.basename(a), a];
    out[name] = await measure(path.resolve(d), n);
  }
  console.log(JSON.stringify(out, null, 2));
} else {
  await isolate();
}

async function measure(dir, n) {
  const bytes = readFileSync(path.join(dir, "app.wasm"));
  let t = performance.now();
  const mod = await WebAssembly.compile(bytes);
  const compileMs = performance.now() - t;
  const runs = [];
  for (let i = 0; i < n; i++) {
    runs.push(await new Promise((resolve, reject) => {
      const w = new Worker(new URL(import.meta.url), { workerData: { mod, execJS: pathToFileURL(path.join(dir, "wasm_exec.js")).href } });
      w.once("message", (m) => { w.terminate().then(() => resolve(m)); });
      w.once("error", reject);
    }));
  }
  const med = (k, from = 0) => {
    const v = runs.slice(from).map((r) => r[k]).sort((a, b) => a - b);
    return +v[Math.floor(v.length / 2)].toFixed(2);
  };
  const range = (k, from = 1) => {
    const v = runs.slice(from).map((r) => r[k]);
    return [+Math.min(...v).toFixed(2), +Math.max(...v).toFixed(2)];
  };
  return {
    node: process.version,
    wasm_bytes: bytes.length,
    wasm_gzip_bytes: gzipSync(bytes, { level: 9 }).length,
    compile_ms: +compileMs.toFixed(1),
    isolates: n,
    // The first isolate of a process, then the median and range of the others.
    first_ready_ms: +runs[0].readyMs.toFixed(2),
    first_init_cpu_ms: +runs[0].initCpuMs.toFixed(2),
    ready_ms_median: med("readyMs", 1),
    ready_ms_range: range("readyMs"),
    instantiate_ms_median: med("instantiateMs", 1),
    init_cpu_ms_median: med("initCpuMs", 1),
    warm_isolate_ready_ms_median: med("warmReadyMs", 1),
    call_us_median: med("callUs", 1),
  };
}

async function isolate() {
  const { mod, execJS } = workerData;
  globalThis.tryCatch = (fn) => { try { return { result: fn() }; } catch (e) { return { error: e }; } };
  await import(execJS);
  // The bindings main() looks up at start; nothing here is called.
  const env = { DB: {}, ENRICHMENT_QUEUE: {}, API_KEY: "k", ADMIN_SECRET: "s", ENRICHMENT_API_URL: "http://127.0.0.1:9/" };
  // Go answers a fetch call through binding.respond / binding.reject, as
  // worker.mjs sets them: here they settle the call's promise with its status.
  const waiting = new Map();
  const answers = () => ({
    respond: (id, status) => { waiting.get(id).resolve(status); waiting.delete(id); },
    reject: (id, message) => { waiting.get(id).reject(new Error(message)); waiting.delete(id); },
  });
  const context = { env, ctx: {}, connect() {}, binding: answers() };
  // Node loads these globals on first use (undici, its crypto module), which
  // took a third of a new instance's start here; workerd has them built in.
  void [globalThis.Request, globalThis.Response, globalThis.Headers, globalThis.ReadableStream, globalThis.fetch];
  crypto.getRandomValues(new Uint8Array(16));
  // The main thread waits meanwhile, so the process's CPU time is this
  // isolate's, on every thread (V8 compiles on background threads).
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let instantiated;
  const readyAt = await new Promise((resolve, reject) => {
    const go = new Go();
    const inst = new WebAssembly.Instance(mod, { ...go.importObject, workers: { ready: () => resolve(performance.now()) } });
    instantiated = performance.now();
    go.run(inst, context).catch(reject);
  });
  const cpu = process.cpuUsage(cpu0);
  const readyMs = readyAt - t0;
  const instantiateMs = instantiated - t0;
  const initCpuMs = (cpu.user + cpu.system) / 1000;
  const b = context.binding;
  let lastCall = 0;
  const call = () => new Promise((resolve, reject) => {
    const id = ++lastCall;
    waiting.set(id, { resolve, reject });
    b.serveHTTP(id, "GET\nhttp://localhost/nope\n", null);
  });
  const first = await call();
  if (first !== 404) throw new Error(`GET /nope: ${first}`);
  const t1 = performance.now();
  for (let i = 0; i < CALLS; i++) await call();
  const callUs = ((performance.now() - t1) / CALLS) * 1000;
  // A second Go instance in the same, now warm, isolate: what the program's
  // own start costs without V8's first-run work (JIT, lazy compilation).
  const t2 = performance.now();
  await new Promise((resolve, reject) => {
    const go = new Go();
    const ctx2 = { env, ctx: {}, connect() {}, binding: answers() };
    const inst = new WebAssembly.Instance(mod, { ...go.importObject, workers: { ready: resolve } });
    go.run(inst, ctx2).catch(reject);
  });
  const warmReadyMs = performance.now() - t2;
  parentPort.postMessage({ readyMs, instantiateMs, initCpuMs, callUs, warmReadyMs });
}
