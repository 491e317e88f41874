// A new instance's first answer and the per-call overhead in workerd itself
// (no wrangler in between): redrive's build/ beside the original TypeScript
// worker (bench/reference, bundled by `wrangler deploy --dry-run`).
//
//   [ROUNDS=8] [CALLS=100] node bench/init/workerd.mjs [NAME=BUILD_DIR...]
//
// Each round starts a fresh workerd process per worker (the order rotates),
// serving only that worker, with API_KEY and ADMIN_SECRET bound and nothing
// else, and times from spawning it to
// - listen: its port accepts a connection (workerd has loaded the worker; for
//   redrive that includes compiling app.wasm),
// - first: the first answer of GET /admin/nope (both workers answer 404
//   after the admin check, touching no binding): for redrive, a new Go
//   instance's start and its first call;
// then CALLS more calls on the same connection (per call: their median).
// listen_cpu and first_cpu are the CPU time (all threads, from /proc's schedstat, in ns) workerd
// spent until its port accepted and until the first answer: steadier than wall time on a busy machine;
// call_cpu is workerd's CPU time over the CALLS calls divided by CALLS (V8's
// background compilation included).
// Prints one JSON object of medians and ranges. Without arguments the build
// is build/ (`make build` first).
import { spawn, execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import http from "node:http";
import os from "node:os";
import path from "node:path";

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), "../..");
const workerd = path.join(root, "node_modules/@cloudflare/workerd-linux-64/bin/workerd");
const rounds = Number(process.env.ROUNDS ?? 8);
const calls = Number(process.env.CALLS ?? 100);
const port = 18000 + Math.floor(Math.random() * 1000);
const tmp = mkdtempSync(path.join(os.tmpdir(), "redrive-workerd-bench-"));

function config(name, modules) {
  const dir = path.join(tmp, name);
  const mods = modules.map(([file, kind]) => `(name = "${path.basename(file)}", ${kind} = embed "${path.basename(file)}")`);
  writeFileSync(path.join(dir, "config.capnp"), `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [(name = "main", worker = .w)],
  sockets = [(name = "http", address = "127.0.0.1:${port}", http = (), service = "main")]
);
const w :Workerd.Worker = (
  modules = [${mods.join(", ")}],
  bindings = [(name = "API_KEY", text = "k"), (name = "ADMIN_SECRET", text = "s")],
  compatibilityDate = "2025-01-01",
  compatibilityFlags = ["nodejs_compat"],
);
`);
  return path.join(dir, "config.capnp");
}

// The original worker, bundled as wrangler would deploy it.
const refDir = path.join(tmp, "reference");
execFileSync(path.join(root, "node_modules/.bin/wrangler"),
  ["deploy", "--dry-run", "--outdir", refDir, "--config", "bench/reference/wrangler.jsonc"],
  { cwd: root, stdio: "ignore", env: { ...process.env, WRANGLER_SEND_METRICS: "false" } });
const workers = { reference: config("reference", [["index.js", "esModule"]]) };
const builds = process.argv.slice(2).length ? process.argv.slice(2) : ["redrive=build"];
for (const a of builds) {
  const [name, d] = a.includes("=") ? a.split("=", 2) : [path.basename(a), a];
  const dir = path.join(tmp, name);
  cpSync(path.resolve(root, d), dir, { recursive: true });
  const files = readdirSync(dir).filter((f) => /\.(mjs|js)$/.test(f) && f !== "worker.mjs");
  // worker.mjs first: the main module.
  workers[name] = config(name, [["worker.mjs", "esModule"], ...files.map((f) => [f, "esModule"]), ["app.wasm", "wasm"]]);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function connected() {
  for (;;) {
    const ok = await new Promise((resolve) => {
      const s = net.connect(port, "127.0.0.1", () => { s.destroy(); resolve(true); });
      s.on("error", () => resolve(false));
    });
    if (ok) return;
    await sleep(2);
  }
}

function get(agent) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: "127.0.0.1", port, path: "/admin/nope", agent, headers: { "x-api-key": "k", "x-admin-secret": "s" } }, (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode));
    });
    req.on("error", reject);
  });
}

async function once(cfg) {
  const t0 = performance.now();
  const p = spawn(workerd, ["serve", cfg, "--experimental"], { stdio: "ignore", detached: true });
  try {
    await connected();
    const listen = performance.now() - t0;
    const listenCPU = cpuMS(p.pid);
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    const status = await get(agent);
    const first = performance.now() - t0;
    const firstCPU = cpuMS(p.pid);
    if (status !== 404) throw new Error(`${cfg}: GET /admin/nope: ${status}`);
    const each = [];
    for (let i = 0; i < calls; i++) {
      const t = performance.now();
      await get(agent);
      each.push(performance.now() - t);
    }
    const callCPU = (cpuMS(p.pid) - firstCPU) / calls;
    agent.destroy();
    return { listen, listenCPU, first, firstCPU, call: median(each), callCPU };
  } finally {
    process.kill(-p.pid, "SIGKILL");
    await new Promise((r) => p.exitCode !== null ? r() : p.once("exit", r));
  }
}

// cpuMS is the CPU time of process pid in ms: the sum over its threads of
// /proc/PID/task/TID/schedstat's time on the CPU (nanoseconds; a thread that
// has exited no longer counts, workerd's V8 threads live as long as it does).
// /proc/PID/stat's user+system (clock ticks of 10 ms) when schedstat is
// missing.
function cpuMS(pid) {
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[0]);
    }
    return ns / 1e6;
  } catch {
    const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1].split(" ");
    return (Number(f[11]) + Number(f[12])) * 10;
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

const names = Object.keys(workers);
const runs = Object.fromEntries(names.map((n) => [n, []]));
for (let i = 0; i < rounds; i++) {
  for (let j = 0; j < names.length; j++) {
    const n = names[(i + j) % names.length];
    runs[n].push(await once(workers[n]));
  }
}
rmSync(tmp, { recursive: true, force: true });
const out = { rounds, calls, cpus: os.cpus().length, loadavg: os.loadavg().map((x) => +x.toFixed(1)) };
for (const n of names) {
  const r = runs[n];
  const f = (k) => +median(r.map((x) => x[k])).toFixed(1);
  out[n] = { listen_ms: f("listen"), listen_cpu_ms: f("listenCPU"), first_answer_ms: f("first"),
    first_answer_range_ms: [+Math.min(...r.map((x) => x.first)).toFixed(0), +Math.max(...r.map((x) => x.first)).toFixed(0)],
    first_answer_cpu_ms: f("firstCPU"), call_ms: f("call"), call_cpu_ms: +median(r.map((x) => x.callCPU)).toFixed(2) };
}
for (const n of names.filter((n) => n !== "reference")) {
  out[n].first_answer_vs_reference = +(out[n].first_answer_ms / out.reference.first_answer_ms).toFixed(2);
  out[n].first_answer_cpu_vs_reference = +(out[n].first_answer_cpu_ms / out.reference.first_answer_cpu_ms).toFixed(2);
  out[n].call_vs_reference = +(out[n].call_ms / out.reference.call_ms).toFixed(2);
  out[n].call_cpu_vs_reference = +(out[n].call_cpu_ms / out.reference.call_cpu_ms).toFixed(2);
}
console.log(JSON.stringify(out, null, 2));
