// Runs the built worker (build/) in workerd through Miniflare, without
// wrangler dev's proxy (which streams a request to the worker only as its
// body arrives), and posts 1 MB bodies of which only the first KiB is
// sent: an anonymous one must be answered at once (401, its body unread);
// one with the admin pair must not be (its body is needed). Prints one JSON
// line and exits 0 when both hold.
//
//	node e2e/testdata/unread_body.mjs <repository root> <compatibility date>
import net from "node:net";
import path from "node:path";

const [root, date] = process.argv.slice(2);
const { Miniflare } = await import(path.join(root, "node_modules/miniflare/dist/src/index.js"));
const build = path.join(root, "build");
const mf = new Miniflare({
  modules: true,
  scriptPath: path.join(build, "worker.mjs"),
  modulesRoot: build,
  modulesRules: [{ type: "CompiledWasm", include: ["**/*.wasm"] }, { type: "ESModule", include: ["**/*.mjs", "**/*.js"] }],
  compatibilityDate: date,
  d1Databases: ["DB"],
  bindings: { API_KEY: "k", ADMIN_SECRET: "s" },
  port: 0,
});

// stalled posts 1 MB to path, sends 1 KiB of it, and resolves with the
// answer's head and how long it took, or null after waitMs.
function stalled(url, extraHeaders, waitMs) {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let got = "";
    const sock = net.connect(Number(url.port), url.hostname, () => {
      sock.write(`POST /admin/dlq/import HTTP/1.1\r\nHost: ${url.host}\r\n${extraHeaders}Content-Length: ${1 << 20}\r\n\r\n`);
      sock.write(Buffer.alloc(1024));
    });
    const timer = setTimeout(() => { sock.destroy(); resolve(null); }, waitMs);
    sock.on("data", (d) => {
      got += d;
      const end = got.indexOf("\r\n\r\n");
      if (end >= 0 && got.length > end + 4) {
        clearTimeout(timer);
        sock.destroy();
        resolve({ ms: Date.now() - t0, head: got.slice(0, end), body: got.slice(end + 4) });
      }
    });
    sock.on("error", () => {});
  });
}

let ok = false;
const out = {};
try {
  const url = await mf.ready;
  const health = await fetch(new URL("/health", url)); // starts the Go instance
  out.health = health.status;
  await health.arrayBuffer();
  const anon = await stalled(url, "", 10_000);
  out.anonymous = anon && { ms: anon.ms, status: anon.head.split("\r\n")[0], body: anon.body };
  const admin = await stalled(url, "X-API-Key: k\r\nX-Admin-Secret: s\r\n", 1_500);
  out.admin = admin && { ms: admin.ms, status: admin.head.split("\r\n")[0] };
  ok = anon !== null && anon.head.startsWith("HTTP/1.1 401") && anon.body.includes('"code":"UNAUTHORIZED"') && admin === null;
} finally {
  console.log(JSON.stringify({ ok, ...out }));
  await mf.dispose();
}
process.exit(ok ? 0 : 1);
