// Tests of redrive-report.mjs (node --test clients/js/; run by make test).
// HTTP goes to a server on 127.0.0.1 only.
import { test } from "node:test";
import assert from "node:assert/strict";
import http from "node:http";
import { reportFailures, clip, MAX_PER_REQUEST } from "./redrive-report.mjs";

// binding is a fake service binding recording each request's body and
// authorization, answering as redrive does (202 {recorded}), or with status.
function binding(status = 202) {
  const calls = [];
  return {
    calls,
    async fetch(req) {
      const body = await req.json();
      calls.push({ url: req.url, method: req.method, auth: req.headers.get("authorization"), type: req.headers.get("content-type"), body });
      if (status !== 202) return new Response(JSON.stringify({ success: false, error: { code: "X", message: "no" } }), { status });
      return new Response(JSON.stringify({ success: true, data: { recorded: body.attempts.length } }), { status: 202 });
    },
  };
}

const failure = (i) => ({ queue: "e2e-orders", message_id: `m${i}`, attempt: 1 + (i % 3), error: `card declined ${i}`, class: "permanent" });

test("a service binding gets one POST /admin/attempts per 100 failures, with the bearer token", async () => {
  const b = binding();
  const failures = Array.from({ length: 250 }, (_, i) => failure(i));
  const res = await reportFailures(b, "tok", failures);
  assert.deepEqual(res, { ok: true, status: 202, recorded: 250 });
  assert.deepEqual(b.calls.map((c) => c.body.attempts.length), [MAX_PER_REQUEST, MAX_PER_REQUEST, 50]);
  for (const c of b.calls) {
    assert.equal(c.method, "POST");
    assert.equal(new URL(c.url).pathname, "/admin/attempts");
    assert.equal(c.auth, "Bearer tok");
    assert.equal(c.type, "application/json");
  }
  // Every failure once, in order, exactly as given.
  assert.deepEqual(b.calls.flatMap((c) => c.body.attempts), failures);
});

test("entries are normalised to what the route accepts", async () => {
  const b = binding();
  const long = "é".repeat(1500); // 3,000 bytes
  await reportFailures(b, "tok", [
    { queue: "q", message_id: "m1", attempt: 0, error: long, class: "made-up" },
    { queue: "q", messageId: "m2", attempts: 3.7, error: new Error("boom") },
    { queue: "q", id: "m3", error: "" },
  ]);
  const [a, b2, c] = b.calls[0].body.attempts;
  assert.equal(a.attempt, 1);
  assert.equal(new TextEncoder().encode(a.error).length, 2000); // cut on a character boundary
  assert.equal(a.error, "é".repeat(1000));
  assert.equal("class" in a, false); // redrive records unknown
  assert.deepEqual(b2, { queue: "q", message_id: "m2", attempt: 3, error: "boom" });
  assert.deepEqual(c, { queue: "q", message_id: "m3", attempt: 1, error: "error" });
});

test("clip cuts at a character boundary and keeps short text", () => {
  assert.equal(clip("abc", 2), "ab");
  assert.equal(clip("a🍺", 3), "a"); // the 4-byte character does not fit
  assert.equal(clip("a🍺", 5), "a🍺");
  assert.equal(clip(undefined), "");
});

test("nothing to report makes no request", async () => {
  const b = binding();
  assert.deepEqual(await reportFailures(b, "tok", []), { ok: true, status: 202, recorded: 0 });
  assert.deepEqual(await reportFailures(b, "tok", undefined), { ok: true, status: 202, recorded: 0 });
  assert.equal(b.calls.length, 0);
});

test("a refusal, a throwing binding or a bad target never throws into the consumer", async () => {
  const refused = binding(401);
  assert.deepEqual(await reportFailures(refused, "bad", [failure(1)]), { ok: false, status: 401, recorded: 0 });
  const throwing = { fetch: async () => { throw new Error("binding down"); } };
  assert.deepEqual(await reportFailures(throwing, "tok", [failure(1)]), { ok: false, status: 0, recorded: 0 });
  assert.deepEqual(await reportFailures("not a url", "tok", [failure(1)]), { ok: false, status: 0, recorded: 0 });
  assert.deepEqual(await reportFailures(null, "tok", [failure(1)]), { ok: false, status: 0, recorded: 0 });
  // One batch refused among three: not ok, the others still sent and counted.
  let n = 0;
  const flaky = {
    async fetch(req) {
      const body = await req.json();
      if (++n === 2) return new Response("busy", { status: 503 });
      return new Response(JSON.stringify({ data: { recorded: body.attempts.length } }), { status: 202 });
    },
  };
  assert.deepEqual(await reportFailures(flaky, "tok", Array.from({ length: 201 }, (_, i) => failure(i))), { ok: false, status: 503, recorded: 101 });
});

// server starts an HTTP server on loopback answering with handler.
async function server(handler) {
  const s = http.createServer(handler);
  await new Promise((r) => s.listen(0, "127.0.0.1", r));
  return { url: `http://127.0.0.1:${s.address().port}`, close: () => new Promise((r) => s.close(r)) };
}

test("a base URL is called over HTTP", async () => {
  const seen = [];
  const s = await server((req, res) => {
    let data = "";
    req.on("data", (c) => (data += c));
    req.on("end", () => {
      seen.push({ method: req.method, path: req.url, auth: req.headers.authorization, body: JSON.parse(data) });
      res.writeHead(202, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ success: true, data: { recorded: JSON.parse(data).attempts.length } }));
    });
  });
  try {
    const res = await reportFailures(s.url, "tok", [failure(1), failure(2)]);
    assert.deepEqual(res, { ok: true, status: 202, recorded: 2 });
    assert.equal(seen.length, 1);
    assert.equal(seen[0].method, "POST");
    assert.equal(seen[0].path, "/admin/attempts");
    assert.equal(seen[0].auth, "Bearer tok");
    assert.deepEqual(seen[0].body.attempts, [failure(1), failure(2)]);
  } finally {
    await s.close();
  }
});

test("a server that does not answer in time is given up on, without throwing", async () => {
  const s = await server(() => {}); // never answers
  try {
    const started = Date.now();
    const res = await reportFailures(s.url, "tok", [failure(1)], { timeoutMs: 200 });
    assert.deepEqual(res, { ok: false, status: 0, recorded: 0 });
    assert.ok(Date.now() - started < 5000, "the timeout applies");
  } finally {
    await s.close();
  }
});
