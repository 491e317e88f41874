// node --test: a request refused on its headers is answered without its
// body being read (body.mjs); the others are read once, capped.
import { test } from "node:test";
import assert from "node:assert/strict";
import { gated, readBody } from "./body.mjs";

// endless is a request body that never ends: it counts the chunks pulled
// from it (one chunk of 64 KiB a pull).
function endless() {
  const stream = new ReadableStream({
    pull(c) {
      stream.pulls++;
      c.enqueue(new Uint8Array(64 * 1024));
    },
  }, { highWaterMark: 0 });
  stream.pulls = 0;
  return stream;
}

const envelope = '{"success":false,"requestId":"r","error":{"message":"missing or invalid X-API-Key","code":"UNAUTHORIZED"}}\n';

test("a request Go refuses on its headers is answered without its body being read", async () => {
  const seen = [];
  const binding = {
    gate(head) {
      seen.push(head);
      return [401, "content-type\napplication/json; charset=utf-8\nx-request-id\nr\n", new TextEncoder().encode(envelope)];
    },
  };
  const stream = endless();
  const req = new Request("http://127.0.0.1:8787/admin/dlq/import", { method: "POST", body: stream, duplex: "half" });
  const res = gated(binding, req, "POST\nhttp://127.0.0.1:8787/admin/dlq/import\n");
  assert.notEqual(res, null);
  assert.equal(res.status, 401);
  assert.equal(res.headers.get("content-type"), "application/json; charset=utf-8");
  assert.equal(res.headers.get("x-request-id"), "r");
  assert.equal(await res.text(), envelope);
  assert.deepEqual(seen, ["POST\nhttp://127.0.0.1:8787/admin/dlq/import\n"]);
  assert.equal(stream.pulls, 0, "the body was read");
  assert.equal(req.bodyUsed, false);
});

test("a request Go lets through, or one without a body, is not answered by the gate", async () => {
  let calls = 0;
  const pass = { gate() { calls++; return null; } };
  const req = new Request("http://x.test/admin/dlq/import", { method: "POST", body: "abc" });
  assert.equal(gated(pass, req, "h"), null);
  assert.equal(calls, 1);
  assert.deepEqual(await readBody(req, 10), new TextEncoder().encode("abc"));
  // No body: nothing to spare, the gate is not asked (serveHTTP answers).
  assert.equal(gated(pass, new Request("http://x.test/health"), "h"), null);
  assert.equal(calls, 1);
  // A Go program without a gate (older build): everything is served.
  assert.equal(gated({}, new Request("http://x.test/a", { method: "POST", body: "x" }), "h"), null);
});

test("readBody keeps at most cap bytes and drains the rest", async () => {
  const req = new Request("http://x.test/a", { method: "POST", body: new Uint8Array(100).fill(7) });
  const body = await readBody(req, 10);
  assert.equal(body.length, 10);
  assert.equal(req.bodyUsed, true);
  assert.equal(await readBody(new Request("http://x.test/a"), 10), null);
});
